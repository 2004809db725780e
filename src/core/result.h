/* One transcription result: text plus flat segment / word / token rows
 * linked by index (docs/c-api.md §16). Families build it with the tr_result_add_*
 * calls in order (a segment, then its words and tokens); the accessors of
 * the public API read it. Row text lives in the result's own string arena. */
#ifndef TR_CORE_RESULT_H
#define TR_CORE_RESULT_H

#include <stdbool.h>
#include <stdint.h>

#include "transcribe.h"
#include "util/strbuf.h"

typedef struct tr_result_segment {
    int64_t t0_ms, t1_ms;
    int first_word, n_words;
    int first_token, n_tokens;
    int32_t speaker_id;
    uint64_t text_off; /* offset into the string arena */
} tr_result_segment;

typedef struct tr_result_word {
    int64_t t0_ms, t1_ms;
    int seg_index;
    int first_token, n_tokens;
    int32_t speaker_id; /* 0 = unattributed */
    uint64_t text_off;
} tr_result_word;

typedef struct tr_result_token {
    int id;
    float p;
    int64_t t0_ms, t1_ms;
    int seg_index;
    int word_index; /* -1: belongs to no word */
    uint64_t text_off;
} tr_result_token;

/* One speaker turn (docs/c-api.md §16.4): rows in the order the model emitted
 * them; p is a confidence or NaN. */
typedef struct tr_result_speaker {
    int64_t t0_ms, t1_ms;
    int32_t speaker_id; /* >= 1 */
    float p;
} tr_result_speaker;

/* One piece of a long input that the library split at pauses and ran on
 * its own (long audio): where it lies on the input's clock, how it ended
 * (enum transcribe_span_end) and the status of its run. */
typedef struct tr_result_piece {
    int64_t t0_ms, t1_ms;
    int end_kind;
    transcribe_status status;
} tr_result_piece;

#define TR_RESULT_ERROR_CAP 256

typedef struct tr_result {
    transcribe_status status; /* per-utterance status (batch) */
    char *arena;              /* NUL-separated strings */
    uint64_t arena_len, arena_cap;
    uint64_t full_text_off, raw_text_off, language_off;
    bool has_full_text, has_raw_text, has_language;
    /* audio tags (an addition): the emotion and the audio event a model
     * labels the utterance with (SenseVoice), as the model names them */
    uint64_t emotion_off, event_off;
    bool has_emotion, has_event;
    transcribe_timestamp_kind ts_kind;
    tr_result_segment *segs;
    int n_segs, cap_segs;
    tr_result_word *words;
    int n_words, cap_words;
    tr_result_token *toks;
    int n_toks, cap_toks;
    tr_result_speaker *spk;
    int n_spk, cap_spk;
    bool chunked;            /* split into pieces (even zero: no speech found) */
    tr_result_piece *pieces; /* the pieces of a split run, in time order */
    int n_pieces, cap_pieces;
    float mel_ms, encode_ms, decode_ms; /* this utterance's timings */
    bool oom; /* an append failed; the run should return TRANSCRIBE_ERR_OOM */
    /* why a batch utterance failed: the first error the library logged
     * for it (tr_run_settle), "" when none was */
    char error[TR_RESULT_ERROR_CAP];
} tr_result;

void tr_result_init(tr_result *r);
void tr_result_free(tr_result *r);  /* frees storage, leaves an empty result */
void tr_result_clear(tr_result *r); /* empties, keeps capacity */
/* A failed batch utterance's reason: the first error logged since the
 * last take (util/log.h's tr_log_latest_take), where r has none yet; the
 * log's copy is emptied either way. */
void tr_result_take_error(tr_result *r);

/* Appends a segment; later words/tokens attach to the last segment. Returns
 * the index or -1 on OOM. */
int tr_result_add_segment(tr_result *r, int64_t t0_ms, int64_t t1_ms, const char *text);
/* Appends a word to segment `seg` (must be the last segment). Returns index or -1. */
/* Appends a speaker row; its index or -1 (oom set). */
int tr_result_add_speaker(tr_result *r, int64_t t0_ms, int64_t t1_ms, int32_t speaker_id, float p);
int tr_result_add_word(tr_result *r, int64_t t0_ms, int64_t t1_ms, int seg, const char *text);
/* Appends a token to segment `seg` (the last) and word `word` (the last word,
 * or -1). Updates the segment's and word's token spans. Returns index or -1. */
int tr_result_add_token(tr_result *r, int id, float p, int64_t t0_ms, int64_t t1_ms, int seg,
                        int word, const char *text);
/* Appends a speaker row. Returns its index or -1 on OOM. */
int tr_result_add_speaker(tr_result *r, int64_t t0_ms, int64_t t1_ms, int32_t speaker_id, float p);
/* Appends a piece row (long audio). Returns its index or -1 (oom set). */
int tr_result_add_piece(tr_result *r, int64_t t0_ms, int64_t t1_ms, int end_kind,
                        transcribe_status status);
/* Sets segment `seg`'s speaker id (false when out of range). */
bool tr_result_set_segment_speaker(tr_result *r, int seg, int32_t speaker_id);
/* Updates the text / times of an existing segment (e.g. after joining). */
bool tr_result_set_segment_text(tr_result *r, int seg, const char *text);
/* Replaces word `word`'s text (a growing word of a stream). */
bool tr_result_set_word_text(tr_result *r, int word, const char *text);
/* For results extended in place (native streams): the arena length now,
 * and dropping every string stored after such a mark. Whoever rewinds
 * re-sets every text that pointed past the mark before the result is
 * read again. */
uint64_t tr_result_arena_mark(const tr_result *r);
void tr_result_arena_rewind(tr_result *r, uint64_t mark);
bool tr_result_set_full_text(tr_result *r, const char *text);
bool tr_result_set_raw_text(tr_result *r, const char *text);
bool tr_result_set_language(tr_result *r, const char *lang);
bool tr_result_set_emotion(tr_result *r, const char *emotion);
bool tr_result_set_audio_event(tr_result *r, const char *event);
void tr_result_set_timestamp_kind(tr_result *r, transcribe_timestamp_kind k);

/* Readers ("" when absent). */
const char *tr_result_str(const tr_result *r, uint64_t off);
const char *tr_result_full_text(const tr_result *r);
const char *tr_result_raw_text(const tr_result *r);
const char *tr_result_language(const tr_result *r);
const char *tr_result_emotion(const tr_result *r);     /* "" when none */
const char *tr_result_audio_event(const tr_result *r); /* "" when none */

/* Builds full text by concatenating segment texts when a family does not set
 * it explicitly (leading/trailing whitespace trimmed). */
bool tr_result_build_full_text(tr_result *r);

/* A word ends no later than the next word of its segment starts, where that
 * one starts later: a transducer emits several tokens on one frame, and the
 * word before them would otherwise run past the next one's start (two cues
 * on screen at once). Words sharing a start (Whisper's carry their
 * segment's times) are left as they are. */
void tr_result_untangle_words(tr_result *r);

/* Copies text (NULL = "") into r's arena, its offset in *off; false on OOM
 * (oom set). */
bool tr_result_store(tr_result *r, const char *text, uint64_t *off);

/* Long audio (result_join.c): the results of the pieces of a longer input,
 * each run on its own, joined in time order into one result on the input's
 * clock. The joiner holds the joined text and the speaker ids earlier
 * pieces took. */
typedef struct tr_result_joiner {
    tr_strbuf text;
    tr_strbuf raw; /* the pieces' raw texts, one a line */
    int32_t speaker_base;
} tr_result_joiner;
void tr_result_joiner_init(tr_result_joiner *j);
void tr_result_joiner_free(tr_result_joiner *j);
/* Appends src, the result of the piece [lo_ms, hi_ms) of the input, to
 * dst: rows move by lo_ms and stay inside the piece and behind the rows
 * already there (times monotonic); a piece without times gives its rows the
 * piece's span, and one without rows but with text one segment over it;
 * speaker n of the piece becomes speaker_base + n (pieces' speakers kept
 * apart); the text is trimmed and joined with a space (none between two
 * characters of scripts written without spaces); the first language and
 * timestamp kind a piece reports win. False on OOM (dst->oom set). */
bool tr_result_join_piece(tr_result *dst, tr_result_joiner *j, const tr_result *src, int64_t lo_ms,
                          int64_t hi_ms);
/* Sets dst's full text to the joined text (and its raw text to the
 * pieces' raw texts, one a line, where they have one); false on OOM. */
bool tr_result_joiner_finish(tr_result *dst, const tr_result_joiner *j);
/* Keeps every row inside [0, end_ms] (the input's length): a model's
 * timestamps can run past the end of the audio it was given. */
void tr_result_clamp(tr_result *r, int64_t end_ms);

#endif
