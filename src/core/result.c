/* tr_result: one transcription result stored as flat row arrays plus a
 * string arena. Rows refer to text by arena offset, so growing the arena
 * never invalidates them; pointers handed out by readers stay valid until
 * the result is next modified. */
#include "core/result.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/vec.h"

void tr_result_init(tr_result *r) {
    memset(r, 0, sizeof *r);
}

void tr_result_free(tr_result *r) {
    if (!r) return;
    free(r->arena);
    free(r->segs);
    free(r->words);
    free(r->toks);
    free(r->spk);
    free(r->pieces);
    tr_result_init(r);
}

void tr_result_take_error(tr_result *r) {
    char why[TR_RESULT_ERROR_CAP];
    tr_log_latest_take(why, sizeof why);
    if (!r->error[0]) memcpy(r->error, why, sizeof why);
}

void tr_result_clear(tr_result *r) {
    if (!r) return;
    r->status = TRANSCRIBE_OK;
    r->arena_len = 0;
    r->full_text_off = r->raw_text_off = r->language_off = 0;
    r->has_full_text = r->has_raw_text = r->has_language = false;
    r->emotion_off = r->event_off = 0;
    r->has_emotion = r->has_event = false;
    r->ts_kind = TRANSCRIBE_TIMESTAMPS_NONE;
    r->n_segs = r->n_words = r->n_toks = r->n_spk = r->n_pieces = 0;
    r->chunked = false;
    r->mel_ms = r->encode_ms = r->decode_ms = 0.0f;
    r->oom = false;
    r->error[0] = '\0';
}

/* Grows a row array to hold at least need elements (doubling). */
static bool grow(void **p, int *cap, int need, size_t elem) {
    if (need > (1 << 28)) return false; /* far past any transcript */
    void *q = tr_grow_int(*p, cap, need, elem, 16);
    if (!q) return false;
    *p = q;
    return true;
}

/* Copies text (NULL = "") into the arena; returns false on OOM. */
static bool arena_put(tr_result *r, const char *text, uint64_t *off) {
    if (!text) text = "";
    size_t n = strlen(text) + 1;
    size_t acap = (size_t)r->arena_cap;
    char *q = tr_grow(r->arena, &acap, (size_t)r->arena_len + n, 1, 256);
    if (!q) {
        r->oom = true;
        TR_ERROR("result: out of memory storing text (%zu bytes)", n);
        return false;
    }
    r->arena = q;
    r->arena_cap = acap;
    memcpy(r->arena + r->arena_len, text, n);
    *off = r->arena_len;
    r->arena_len += n;
    return true;
}

int tr_result_add_segment(tr_result *r, int64_t t0_ms, int64_t t1_ms, const char *text) {
    uint64_t off;
    if (!grow((void **)&r->segs, &r->cap_segs, r->n_segs + 1, sizeof *r->segs)) {
        r->oom = true;
        TR_ERROR("result: out of memory adding a segment");
        return -1;
    }
    if (!arena_put(r, text, &off)) return -1;
    tr_result_segment *s = &r->segs[r->n_segs];
    s->t0_ms = t0_ms;
    s->t1_ms = t1_ms;
    s->first_word = r->n_words;
    s->n_words = 0;
    s->first_token = r->n_toks;
    s->n_tokens = 0;
    s->speaker_id = 0;
    s->text_off = off;
    return r->n_segs++;
}

int tr_result_add_speaker(tr_result *r, int64_t t0_ms, int64_t t1_ms, int32_t speaker_id, float p) {
    if (!grow((void **)&r->spk, &r->cap_spk, r->n_spk + 1, sizeof *r->spk)) {
        r->oom = true;
        TR_ERROR("result: out of memory adding a speaker row");
        return -1;
    }
    r->spk[r->n_spk] = (tr_result_speaker){t0_ms, t1_ms, speaker_id, p};
    return r->n_spk++;
}

int tr_result_add_piece(tr_result *r, int64_t t0_ms, int64_t t1_ms, int end_kind,
                        transcribe_status status) {
    if (!grow((void **)&r->pieces, &r->cap_pieces, r->n_pieces + 1, sizeof *r->pieces)) {
        r->oom = true;
        TR_ERROR("result: out of memory adding a piece row");
        return -1;
    }
    r->pieces[r->n_pieces] = (tr_result_piece){t0_ms, t1_ms, end_kind, status};
    r->chunked = true;
    return r->n_pieces++;
}

bool tr_result_set_segment_speaker(tr_result *r, int seg, int32_t speaker_id) {
    if (seg < 0 || seg >= r->n_segs) return false;
    r->segs[seg].speaker_id = speaker_id;
    return true;
}

int tr_result_add_word(tr_result *r, int64_t t0_ms, int64_t t1_ms, int seg, const char *text) {
    if (seg < 0 || seg != r->n_segs - 1) {
        TR_ERROR("result: word added to segment %d, but the last segment is %d", seg,
                 r->n_segs - 1);
        return -1;
    }
    uint64_t off;
    if (!grow((void **)&r->words, &r->cap_words, r->n_words + 1, sizeof *r->words)) {
        r->oom = true;
        TR_ERROR("result: out of memory adding a word");
        return -1;
    }
    if (!arena_put(r, text, &off)) return -1;
    tr_result_word *w = &r->words[r->n_words];
    w->t0_ms = t0_ms;
    w->t1_ms = t1_ms;
    w->seg_index = seg;
    w->first_token = r->n_toks;
    w->n_tokens = 0;
    w->speaker_id = 0;
    w->text_off = off;
    if (r->segs[seg].n_words == 0) r->segs[seg].first_word = r->n_words;
    r->segs[seg].n_words++;
    return r->n_words++;
}

int tr_result_add_token(tr_result *r, int id, float p, int64_t t0_ms, int64_t t1_ms, int seg,
                        int word, const char *text) {
    if (seg < 0 || seg != r->n_segs - 1) {
        TR_ERROR("result: token added to segment %d, but the last segment is %d", seg,
                 r->n_segs - 1);
        return -1;
    }
    if (word != -1 && (word != r->n_words - 1 || r->words[word].seg_index != seg)) {
        TR_ERROR("result: token added to word %d, which is not the last word of segment %d", word,
                 seg);
        return -1;
    }
    uint64_t off;
    if (!grow((void **)&r->toks, &r->cap_toks, r->n_toks + 1, sizeof *r->toks)) {
        r->oom = true;
        TR_ERROR("result: out of memory adding a token");
        return -1;
    }
    if (!arena_put(r, text, &off)) return -1;
    tr_result_token *t = &r->toks[r->n_toks];
    t->id = id;
    t->p = p;
    t->t0_ms = t0_ms;
    t->t1_ms = t1_ms;
    t->seg_index = seg;
    t->word_index = word;
    t->text_off = off;
    if (r->segs[seg].n_tokens == 0) r->segs[seg].first_token = r->n_toks;
    r->segs[seg].n_tokens++;
    if (word >= 0) {
        if (r->words[word].n_tokens == 0) r->words[word].first_token = r->n_toks;
        r->words[word].n_tokens++;
    }
    return r->n_toks++;
}

bool tr_result_set_segment_text(tr_result *r, int seg, const char *text) {
    if (seg < 0 || seg >= r->n_segs) return false;
    uint64_t off;
    if (!arena_put(r, text, &off)) return false;
    r->segs[seg].text_off = off;
    return true;
}

bool tr_result_set_word_text(tr_result *r, int word, const char *text) {
    if (word < 0 || word >= r->n_words) return false;
    uint64_t off;
    if (!arena_put(r, text, &off)) return false;
    r->words[word].text_off = off;
    return true;
}

uint64_t tr_result_arena_mark(const tr_result *r) {
    return r->arena_len;
}

void tr_result_arena_rewind(tr_result *r, uint64_t mark) {
    if (mark <= r->arena_len) r->arena_len = mark;
}

bool tr_result_store(tr_result *r, const char *text, uint64_t *off) {
    return arena_put(r, text, off);
}

bool tr_result_set_full_text(tr_result *r, const char *text) {
    if (!arena_put(r, text, &r->full_text_off)) return false;
    r->has_full_text = true;
    return true;
}

bool tr_result_set_raw_text(tr_result *r, const char *text) {
    if (!arena_put(r, text, &r->raw_text_off)) return false;
    r->has_raw_text = true;
    return true;
}

bool tr_result_set_language(tr_result *r, const char *lang) {
    if (!arena_put(r, lang, &r->language_off)) return false;
    r->has_language = true;
    return true;
}

bool tr_result_set_emotion(tr_result *r, const char *emotion) {
    if (!arena_put(r, emotion, &r->emotion_off)) return false;
    r->has_emotion = true;
    return true;
}

bool tr_result_set_audio_event(tr_result *r, const char *event) {
    if (!arena_put(r, event, &r->event_off)) return false;
    r->has_event = true;
    return true;
}

void tr_result_set_timestamp_kind(tr_result *r, transcribe_timestamp_kind k) {
    r->ts_kind = k;
}

const char *tr_result_str(const tr_result *r, uint64_t off) {
    if (!r || !r->arena || off >= r->arena_len) return "";
    return r->arena + off;
}

const char *tr_result_full_text(const tr_result *r) {
    return (r && r->has_full_text) ? tr_result_str(r, r->full_text_off) : "";
}

const char *tr_result_raw_text(const tr_result *r) {
    return (r && r->has_raw_text) ? tr_result_str(r, r->raw_text_off) : "";
}

const char *tr_result_language(const tr_result *r) {
    return (r && r->has_language) ? tr_result_str(r, r->language_off) : "";
}

const char *tr_result_emotion(const tr_result *r) {
    return (r && r->has_emotion) ? tr_result_str(r, r->emotion_off) : "";
}

const char *tr_result_audio_event(const tr_result *r) {
    return (r && r->has_event) ? tr_result_str(r, r->event_off) : "";
}

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

void tr_result_untangle_words(tr_result *r) {
    for (int i = 0; i + 1 < r->n_words; i++) {
        tr_result_word *a = &r->words[i];
        const tr_result_word *b = &r->words[i + 1];
        if (a->seg_index == b->seg_index && b->t0_ms > a->t0_ms && a->t1_ms > b->t0_ms)
            a->t1_ms = b->t0_ms;
    }
}

bool tr_result_build_full_text(tr_result *r) {
    /* Measure first, then join into one heap buffer: segment texts live in
     * the arena, which arena_put may move. */
    size_t total = 1;
    for (int i = 0; i < r->n_segs; i++) total += strlen(tr_result_str(r, r->segs[i].text_off)) + 1;
    char *buf = malloc(total);
    if (!buf) {
        r->oom = true;
        TR_ERROR("result: out of memory joining segment texts");
        return false;
    }
    size_t len = 0;
    for (int i = 0; i < r->n_segs; i++) {
        const char *t = tr_result_str(r, r->segs[i].text_off);
        size_t n = strlen(t);
        if (n == 0) continue;
        /* Segment texts of some families carry their own leading space
         * (whisper); others do not, so add one only where words would fuse. */
        if (len > 0 && !is_space(buf[len - 1]) && !is_space(t[0])) buf[len++] = ' ';
        memcpy(buf + len, t, n);
        len += n;
    }
    buf[len] = '\0';
    size_t a = 0;
    while (a < len && is_space(buf[a])) a++;
    while (len > a && is_space(buf[len - 1])) len--;
    buf[len] = '\0';
    bool ok = tr_result_set_full_text(r, buf + a);
    free(buf);
    return ok;
}
