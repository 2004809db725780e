/* Shared by the files of src/output: a result as the formats read it (row
 * times clamped into the audio, text trimmed) and the cue walk that SRT,
 * WebVTT and JSON's "cues" share. */
#ifndef TR_OUTPUT_INTERNAL_H
#define TR_OUTPUT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/output.h"

typedef struct tr_out_view {
    const tr_result *r; /* NULL: empty */
    const tr_output_opts *o;
    int64_t end_ms; /* the audio's length: no row reaches past it */
    tr_strbuf *out;
} tr_out_view;

bool tr_out_is_space(char c);
/* s without leading / trailing whitespace: *n bytes from the return value. */
const char *tr_out_trim(const char *s, size_t *n);

/* Row counts and rows of v (0 / "" for an empty result); times clamped
 * into [0, end_ms] with t1 >= t0, as a model's times can run past the end
 * of the audio it was given. */
int tr_out_n_segs(const tr_out_view *v);
int tr_out_n_words(const tr_out_view *v);
int tr_out_n_toks(const tr_out_view *v);
void tr_out_seg(const tr_out_view *v, int i, int64_t *t0, int64_t *t1, const char **text);
void tr_out_word(const tr_out_view *v, int i, int64_t *t0, int64_t *t1, const char **text);
const char *tr_out_full_text(const tr_out_view *v, size_t *n); /* trimmed */
transcribe_timestamp_kind tr_out_kind(const tr_out_view *v);
int32_t tr_out_speaker(const tr_out_view *v, int seg);    /* 0: none */
int32_t tr_out_word_speaker(const tr_out_view *v, int i); /* 0: none */
bool tr_out_has_speakers(const tr_out_view *v);

/* The JSON string of s[0..n) (quotes included), escaped as output_json.c says. */
void tr_out_json_str(tr_strbuf *b, const char *s, size_t n);

/* One subtitle cue: index from 1, times, the text (not trimmed) and its
 * speaker (its words', else its segment's; 0: none). */
typedef void (*tr_out_cue_fn)(tr_out_view *v, int index, int64_t t0, int64_t t1, const char *text,
                              int32_t speaker);
/* Calls fn for every cue of the result in order (output_cues.c). */
void tr_out_for_each_cue(tr_out_view *v, tr_out_cue_fn fn);

void tr_out_txt(tr_out_view *v);
void tr_out_json(tr_out_view *v);
void tr_out_srt(tr_out_view *v);
void tr_out_vtt(tr_out_view *v);

#endif
