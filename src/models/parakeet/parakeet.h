/* Parakeet family internals (docs/formats/parakeet.md): the loaded model (encoder
 * from src/nn/fastconformer.h plus a TDT / RNN-T / CTC head), the per-session
 * state, and the entry points the family vtable and the tests use. Head
 * weights are dequantized to owned F32 copies at load (§8); the encoder
 * borrows from the mapped file. */
#ifndef TR_MODELS_PARAKEET_H
#define TR_MODELS_PARAKEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/family.h"
#include "audio/mel.h"
#include "models/parakeet/pk_decode.h"
#include "nn/fastconformer.h"
#include "tensor/pool.h"
#include "util/strbuf.h"

struct tr_tokenizer;

/* nemotron-3.5 prompt MLP (docs/formats/parakeet.md §3.6, §7.8); n_prompts == 0 when absent. */
typedef struct pk_prompt {
    int n_prompts, hidden, d;
    int n_locales;
    char **locales;
    int *indices;
    int default_id;   /* auto_id, else the first dictionary index */
    pk_mat w0;        /* [hidden][d + n_prompts], dequantized */
    tr_tensor w0_enc; /* view of w0's first d columns */
    const float *b0, *b2;
    const tr_tensor *w2; /* [d][hidden], borrowed */
} pk_prompt;

transcribe_status tr_pk_prompt_load(const struct gguf_file *g, int d, int n_prompts, pk_prompt *p);
void tr_pk_prompt_free(pk_prompt *p);
/* Prompt index for a language hint (NULL = default); -1 when unknown. */
int tr_pk_prompt_id(const pk_prompt *p, const char *lang);
/* enc [T][d] ← the MLP of docs/formats/parakeet.md §7.8 with prompt pid, in place; hid is
 * [T][hidden] scratch, bias [hidden] scratch. */
transcribe_status tr_pk_prompt_apply(const pk_prompt *p, tr_pool *pool, int pid, float *enc, int T,
                                     float *hid, float *bias);

typedef struct pk_model {
    tr_fc_hparams hp;
    tr_fc_encoder *enc;
    pk_head head;
    pk_prompt prompt;
    tr_mel_config mel;
    struct tr_tokenizer *tok;
    int n_tok_pieces;
    bool *drop;       /* [n_tok_pieces] CONTROL or language tag (docs/formats/parakeet.md §9.1) */
    bool *word_start; /* [n_tok_pieces] piece starts with U+2581 (docs/formats/parakeet.md §9.3) */
    double frame_ms;  /* 1000 · subsampling · hop / sample_rate */
    int n_lang;
    char **lang;
    char *variant;
    bool streaming; /* docs/formats/parakeet.md §3.1 KV or the §7.8 geometry */
    bool lang_detect;
    /* docs/formats/gguf.md §5: stt.capability.translate overrides the family default
     * (false) for every family; the dispatcher then admits TRANSLATE under
     * the stt.translation.* gates and this family transcribes */
    bool translate;
    int n_targets, n_pairs;
    char **targets, **pairs;
    /* docs/formats/parakeet.md §3.3 streaming menus (owned copies): att_context_size_choices as
     * [n_ctx_choices][2] (L, R) pairs, pair 0 = the file's default (for a
     * file without the key, the one pair of the scalars); the buffered
     * (left, chunk, right) menus of unified-en, each a list whose
     * cartesian product the model was trained on (0 entries when absent). */
    int n_ctx_choices;
    int32_t *ctx_choices;
    int n_menu[3];
    int32_t *menu[3];
} pk_model;

/* Long-audio window geometry in encoder frames (see README.md). */
typedef struct pk_window_cfg {
    int max_frames; /* inputs up to this many frames run in one pass */
    int win_frames; /* window length when windowing */
    int hop_frames; /* distance between window starts */
    int margin;     /* the cut is at least this far from either window edge */
    int gap;        /* a cut needs this many token-free frames on each side */
} pk_window_cfg;

/* A native stream's result rows, extended in place (pk_stream_rows.c). */
typedef struct pk_rows {
    int done;             /* tokens already in rows */
    int seg, word;        /* the segment (-1 before the first kept token), the open word row */
    int32_t *wids, *rids; /* ids of the open word (kept) and of the open raw group */
    int wn, wcap, rn, rcap;
    tr_strbuf full, raw; /* texts of the closed words / raw groups (full: collapsed) */
    tr_strbuf scratch;
    uint64_t tail; /* arena mark before the texts re-set on each call */
    bool has_tail;
} pk_rows;

void tr_pk_rows_init(pk_rows *r);
void tr_pk_rows_free(pk_rows *r);
void tr_pk_rows_clear(pk_rows *r);
/* Adds rows for toks[r->done .. n) to res (the stream's result, built by
 * these calls only) and re-sets its texts; *changed = false (and nothing
 * touched) when there is nothing new. */
transcribe_status tr_pk_rows_update(pk_rows *r, const pk_model *m, const pk_tok *toks, int n,
                                    const struct transcribe_run_params *p, tr_result *res,
                                    bool *changed);

/* Native cache-aware stream state (pk_stream.c); NULL until a stream starts. */
typedef struct pk_stream pk_stream;
/* Buffered stream state of unified-en (pk_stream_buffered.c). */
typedef struct pk_bstream pk_bstream;

typedef struct pk_session {
    const pk_model *m;
    tr_pool *pool;
    tr_fc_work *fc;
    pk_dec_work dec;
    float *enc_out;    /* [T_enc][d] of the current window */
    size_t enc_cap;    /* floats */
    float *pcm;        /* sanitized window samples */
    size_t pcm_cap;    /* floats */
    float *prompt_hid; /* [T_enc][prompt hidden] + [prompt hidden] */
    size_t prompt_cap; /* floats */
    pk_window_cfg win;
    pk_stream *stream;
    pk_bstream *bstream;
} pk_session;

/* load / describe / free, session create / free, run (core/family.h) */
TR_FAMILY_DECLARE(pk);

/* The batch run (pk_batch.c, core/family.h run_batch): sets every
 * ctxs[i].result->status, returns the whole-batch status. */
transcribe_status tr_pk_run_batch(pk_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs);

/* Native streaming (pk_stream.c, core/family.h stream hooks) for the
 * cache-aware chunked_limited files; begin answers NOT_IMPLEMENTED for any
 * other file (those stream through the dispatcher's generic driver). */
/* Whether this file streams natively (cache-aware; pk_stream.c). */
bool tr_pk_stream_native(const pk_model *m);
/* Validates a stream extension against this file (docs/c-api.md §7.3: PKST on
 * the cache-aware files) and gives the index of the (L, R) pair it selects
 * in m->ctx_choices; NULL → pair 0. INVALID_ARG (logged, with the menu)
 * for a right context outside the menu or < -1; BAD_STRUCT_SIZE for a
 * short struct. */
transcribe_status tr_pk_stream_choice(const pk_model *m, const struct transcribe_ext *ext,
                                      int *choice);
transcribe_status tr_pk_stream_begin(pk_session *s, tr_stream_ctx *ctx);
transcribe_status tr_pk_stream_feed(pk_session *s, const float *pcm, int n, tr_stream_ctx *ctx);
transcribe_status tr_pk_stream_finalize(pk_session *s, tr_stream_ctx *ctx);
void tr_pk_stream_reset(pk_session *s);
void tr_pk_stream_free(pk_stream *ps);

/* Buffered streaming (pk_stream_buffered.c) for chunked_limited_with_rc
 * files with the three (left, chunk, right) menus; tr_pk_stream_* hand
 * these files to it. */
bool tr_pk_stream_buffered(const pk_model *m);
/* Validates a PKBS extension (docs/c-api.md §7.3) and resolves (L, C, R) in
 * encoder frames into lcr; NULL or -1 fields → the largest entry of each
 * menu. INVALID_ARG (logged, naming the menu) for < -1, a value that is
 * not a multiple of the frame, or one outside its menu. */
transcribe_status tr_pk_bstream_choice(const pk_model *m, const struct transcribe_ext *ext,
                                       int lcr[3]);
transcribe_status tr_pk_bstream_begin(pk_session *s, tr_stream_ctx *ctx);
transcribe_status tr_pk_bstream_feed(pk_session *s, const float *pcm, int n, tr_stream_ctx *ctx);
transcribe_status tr_pk_bstream_finalize(pk_session *s, tr_stream_ctx *ctx);
void tr_pk_bstream_reset(pk_session *s);
void tr_pk_bstream_free(pk_bstream *bs);

/* Bytes held by the session's growable buffers (tests: bounded for long input). */
size_t tr_pk_session_bytes(const pk_session *s);
/* Tests shrink the windows to exercise the long-audio path on short input. */
void tr_pk_session_set_windows(pk_session *s, const pk_window_cfg *w);
void tr_pk_window_cfg_default(pk_window_cfg *w);

/* The cut between consecutive windows P = [.., pe) and Q = [qs, ..) (global
 * frames, qs < pe), see pk_stitch.c. */
int tr_pk_choose_cut(const pk_window_cfg *w, const pk_toks *P, const pk_toks *Q, int qs, int pe);
/* Appends the tokens of w whose frame lies in [from, to). */
transcribe_status tr_pk_keep_range(pk_toks *all, const pk_toks *w, int from, int to);

/* Result rows of docs/formats/parakeet.md §9 from emitted tokens (global frames). */
transcribe_status tr_pk_build_result(const pk_model *m, const pk_tok *toks, int n,
                                     const struct transcribe_run_params *p, tr_result *res);

#endif
