/* Whisper decoding pieces shared by the run loop and its tests:
 * options resolved from the run extension, logit processing (docs/formats/whisper.md §8.5), token
 * selection (§8.6), segment retrieval (§8.8) and the sampler RNG. */
#ifndef TR_MODELS_WHISPER_DECODE_H
#define TR_MODELS_WHISPER_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "models/whisper/whisper.h"

typedef struct wh_opts {
    const char *initial_prompt;
    /* vocabulary hints (run params): the prompt text ", "-joined when neither
     * initial_prompt nor prompt_tokens is given */
    const char *const *vocabulary;
    int n_vocabulary;
    const int32_t *prompt_tokens;
    size_t n_prompt_tokens;
    int prompt_condition; /* 0 FIRST_SEGMENT, 1 ALL_SEGMENTS */
    bool cond_prev;
    int max_prev;
    float t0, t_inc, cr_thold, lp_thold, ns_thold;
    uint32_t seed;
    float max_initial_ts;
} wh_opts;

void tr_wh_opts_from_params(const struct transcribe_run_params *p, wh_opts *o);

/* mt19937 (docs/formats/whisper.md §8.1: one generator per run). */
typedef struct wh_rng {
    uint32_t mt[624];
    int idx;
} wh_rng;
void tr_wh_rng_seed(wh_rng *r, uint32_t seed);
double tr_wh_rng_uniform(wh_rng *r); /* [0, 1) with 53 random bits */

/* Rules of docs/formats/whisper.md §8.5 applied in place to logits [V] given the tokens generated
 * so far in this tier. max_init_idx < 0 disables the initial cap. */
typedef struct wh_proc {
    const wh_model *m;
    bool want_ts;
    int max_init_idx;
} wh_proc;
void tr_wh_process_logits(const wh_proc *pc, float *logits, const int32_t *G, int n_g);

/* Selects a token from processed logits (docs/formats/whisper.md §8.6). T == 0: argmax. Writes the
 * log-probability used for avg_logprob and p (softmax probability at T = 1). */
int tr_wh_select(const float *logits, int V, float T, wh_rng *rng, float *logprob, float *p);

/* Timestamp evidence of one selected token (docs/formats/whisper.md §13.1), from the same
 * processed logits at T = 1: the most probable timestamp id (-1 when every timestamp is
 * masked), its probability relative to all timestamps, and their total probability. */
typedef struct wh_tsp {
    int tid;
    float pt, ptsum;
} wh_tsp;
/* tr_wh_select that also fills *ts (when not NULL) over the timestamp ids [ts_begin, V):
 * one pass over the timestamp range reusing the selection's normaliser. */
int tr_wh_select_ts(const float *logits, int V, int ts_begin, float T, wh_rng *rng, float *logprob,
                    float *p, wh_tsp *ts);

/* Voicing weight of one token's bytes (docs/formats/whisper.md §13.2): how long its text
 * takes to say, roughly; always > 0. */
float tr_wh_token_weight(const char *bytes, size_t n);

/* Token times inside one segment [seg_t0, seg_t1] (docs/formats/whisper.md §13.2). w[i] is
 * the weight of ids' position i (0 for a position that is not a text token), ts[i] its
 * evidence; offset_ms the window's start (timestamp ids count from it). Writes the
 * [t0[i], t1[i]] of every text position: consecutive, non-decreasing, inside the segment,
 * the first starting at seg_t0 and the last ending at seg_t1. Other positions get
 * t0 = t1 = the boundary they sit at. */
void tr_wh_token_times(int ts_begin, const wh_tsp *ts, const float *w, int n, int64_t offset_ms,
                       int64_t seg_t0, int64_t seg_t1, int64_t *t0, int64_t *t1);

/* One retrieved segment of docs/formats/whisper.md §8.8: token range [start, end) of G and
 * times. */
typedef struct wh_seg {
    int start, end; /* slice of G (history slice) */
    int64_t t0_ms, t1_ms;
    bool timed; /* false: the "no pairs" single segment */
} wh_seg;
/* Fills segs (capacity n_g + 1) and returns their count; *advance in mel
 * frames. Without timestamps (want_ts false) the "no pairs" branch always
 * applies, even if the model emitted timestamp tokens. */
int tr_wh_retrieve_segments(const wh_model *m, const int32_t *G, int n_g, int64_t offset_ms,
                            int n_real, bool want_ts, wh_seg *segs, int *advance);

#endif
