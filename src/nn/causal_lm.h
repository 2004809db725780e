/* The decoder-only causal language model shared by the audio-LLM families
 * (docs/formats/causal-lm.md): Qwen3-style blocks (RMSNorm, grouped-query attention with
 * optional per-head q/k RMSNorm, NeoX RoPE, SwiGLU), a tied or untied head,
 * Granite's multiplier hooks, a KV cache stored F16 or F32, prefill with
 * audio rows injected at placeholder positions, and the greedy step loops
 * (single utterance §7, batched §8).
 *
 * Weights are borrowed tr_tensor views (any dtype tr_matmul supports);
 * activations are F32 row-major. A step reads every weight exactly once
 * (one matrix-vector product per projection, or one small GEMM for a batch)
 * and attention reads K/V in their stored type. */
#ifndef TR_NN_CAUSAL_LM_H
#define TR_NN_CAUSAL_LM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/greedy.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"
#include "transcribe.h"

typedef struct tr_clm_hparams {
    int n_layer, d_model, n_head, n_head_kv, head_dim, d_ffn, n_vocab;
    float eps;        /* every RMSNorm (blocks, q/k, final) */
    float rope_theta; /* NeoX RoPE over the full head_dim */
    bool qk_norm;     /* per-head q/k RMSNorm (Qwen3, MOSS) */
    /* Granite hooks (docs/formats/causal-lm.md §1; docs/formats/granite_speech.md §8). 1 = off. */
    float embedding_mult; /* input rows × this (text and audio) */
    float attention_mult; /* score scale; 0 = 1/sqrt(head_dim) */
    float residual_mult;  /* branch outputs × this before each residual add */
    float logits_scale;   /* logits ÷ this */
} tr_clm_hparams;

/* Defaults: multipliers 1, attention scale 1/sqrt(head_dim). */
void tr_clm_hparams_defaults(tr_clm_hparams *hp);

typedef struct tr_clm_block {
    const float *norm_attn, *norm_ffn; /* [d_model] */
    const float *q_norm, *k_norm;      /* [head_dim]; NULL when !qk_norm */
    const tr_tensor *wq, *wk, *wv, *wo;
    const tr_tensor *gate, *up, *down;
} tr_clm_block;

typedef struct tr_clm_weights {
    const tr_tensor *tok_emb; /* ne {d_model, n_vocab}, any dequantizable type */
    const float *out_norm;    /* [d_model] */
    const tr_tensor *head;    /* ne {d_model, n_vocab}; == tok_emb when tied */
    const tr_clm_block *blocks;
} tr_clm_weights;

struct gguf_file;

/* Loads the dec.* tensors (docs/formats/causal-lm.md §2; causal_lm_load.c): per-block
 * norms (q/k norms when hp->qk_norm), projections of TR_TYPES_LINEAR types
 * with gate/up of one type, the embedding, final norm and head (the
 * embedding when tied, else dec.output.weight) of emb_types. *blocks is
 * allocated (caller frees, also on error); w views the file. GGUF on a
 * missing or misshaped tensor (logged with `who`), OOM. */
transcribe_status tr_clm_load_weights(const struct gguf_file *f, const char *who,
                                      const tr_clm_hparams *hp, bool tied, uint32_t emb_types,
                                      tr_clm_block **blocks, tr_clm_weights *w);
/* The same with the blocks named "<block_prefix>.N.*" (e.g. "dec.layers" for
 * Fun-ASR-Nano, docs/formats/funasr_nano.md §3) instead of "dec.blocks.N.*";
 * the global dec.* names are unchanged. */
transcribe_status tr_clm_load_weights_prefix(const struct gguf_file *f, const char *who,
                                             const char *block_prefix, const tr_clm_hparams *hp,
                                             bool tied, uint32_t emb_types, tr_clm_block **blocks,
                                             tr_clm_weights *w);
/* Starts *hp (zeroed, tr_clm_hparams_defaults, qk_norm) and reads the
 * decoder sizes every causal-LM file declares under prefix (e.g.
 * "stt.qwen3_asr.decoder."): n_layers [1, 1024], hidden_size [1, 65536],
 * intermediate_size [1, 2^20], n_heads and n_kv_heads [1, 1024], head_dim
 * [2, 4096], hidden_act "silu" / "swish". GGUF (logged by the key reader)
 * otherwise. */
transcribe_status tr_clm_read_sizes(const struct gguf_file *f, const char *prefix, bool qk_norm,
                                    tr_clm_hparams *hp);
/* Up-front check of the LM head while reading hyperparameters: an untied
 * LM needs a dec.output.weight tensor. GGUF (logged with `who`) otherwise. */
transcribe_status tr_clm_check_head(const struct gguf_file *f, const char *who, bool tied);
/* Checks the weights against the hyper-parameters (shapes of every view);
 * false with a log line naming the first mismatch. */
bool tr_clm_check(const tr_clm_hparams *hp, const tr_clm_weights *w);
/* Bytes of weights one decode step reads (blocks + head). */
size_t tr_clm_step_weight_bytes(const tr_clm_hparams *hp, const tr_clm_weights *w);

/* KV cache (docs/formats/causal-lm.md §4.1): K and V of n_layer × n_slot × n_ctx
 * positions of kv_dim = n_head_kv × head_dim values, order layer, slot, kv
 * head, position, dim: head-major, so a decoder step's attention reads each
 * head's keys and values as one sequential run (interleaved, a head's rows
 * lay kv_dim apart, a new page every few rows, and the step's attention
 * took ~2.5× as long waiting on them). */
typedef struct tr_clm_kv {
    int n_layer, n_slot, n_ctx, kv_dim, n_head_kv, head_dim;
    /* > 0 (<= n_ctx): a sliding window kept as a ring (tr_clm_set_window): position p lives in
     * row p % window and a step attends to the last `window` positions; 0: rows = positions */
    int window;
    bool f16;
    void *k, *v;
} tr_clm_kv;

/* Power of two >= max(1024, need), clamped to ceiling (Qwen3-ASR docs/formats/causal-lm.md
 * §4.2). */
int tr_clm_ctx_pow2(int64_t need, int ceiling);

/* Per-session decoder state: the cache plus scratch. Owns its buffers. */
typedef struct tr_clm_state tr_clm_state;

tr_clm_state *tr_clm_state_new(const tr_clm_hparams *hp, const tr_clm_weights *w, bool kv_f16);
void tr_clm_state_free(tr_clm_state *st);
/* Makes the cache hold n_slot × n_ctx positions (grow-only per slot count;
 * reallocated, zero-filled, when the slot count changes or it is too
 * small). OOM on failure. */
transcribe_status tr_clm_reserve(tr_clm_state *st, int n_slot, int n_ctx);
/* Frees the KV cache and the row scratch (both grown again on next use). */
void tr_clm_state_trim(tr_clm_state *st);
const tr_clm_kv *tr_clm_cache(const tr_clm_state *st);
size_t tr_clm_kv_bytes_per_pos(const tr_clm_hparams *hp, bool f16);

/* Prompt embeddings (docs/formats/causal-lm.md §6.1): out [n][d_model] = token rows of ids, with
 * rows [audio_at, audio_at + n_audio) replaced by audio [n_audio][d_model], all times
 * embedding_mult. */
void tr_clm_embed(const tr_clm_hparams *hp, const tr_clm_weights *w, const int32_t *ids, int n,
                  const float *audio, int audio_at, int n_audio, float *out);

/* Additive input rows (the additive fusion of Voxtral Realtime, docs/formats/voxtral_realtime.md
 * §6.3): from now on a step (tr_clm_step, tr_clm_step_seq and the greedy loops over them) that
 * feeds a token at position p of cache slot `slot` adds rows[(p - first) * d_model ..] to the
 * token's embedding when first <= p < first + n, and nothing at other positions. rows are
 * borrowed and must outlive the steps; rows NULL or n 0 clears the slot. Prefill rows are the
 * caller's own (it adds them to x). false on a bad slot / OOM. */
bool tr_clm_set_input_rows(tr_clm_state *st, int slot, const float *rows, int64_t first, int n);
/* Clears the additive rows of every slot. */
void tr_clm_clear_input_rows(tr_clm_state *st);
/* A sliding-window decoder (Voxtral Realtime, docs/formats/voxtral_realtime.md §8): from now on
 * position p is cached in row p % window and a one-row step (tr_clm_step, the rows of
 * tr_clm_step_seq, batched steps) attends to positions max(0, p - window + 1) .. p, so positions
 * run past the cache (up to any p) in window rows. A prefill's rows must stay below the window.
 * 0 turns it off (rows = positions, the default). It holds for the cache there is (when it has at
 * least window positions) and every later tr_clm_reserve (which then reserves at least window
 * positions). false for a negative window. */
bool tr_clm_set_window(tr_clm_state *st, int window);

/* Prefill (docs/formats/causal-lm.md §6.2) of x [n][d_model] (consumed: overwritten) into cache
 * slot `slot` at positions 0..n-1, in row chunks (mathematically the single-shot prefill). Returns
 * the greedy first token (argmax of the last row's logits, ties → lowest id) or -1 on OOM / bad
 * arguments. logits (optional) receives the last row's n_vocab logits. */
int tr_clm_prefill(tr_clm_state *st, tr_pool *pool, float *x, int n, int slot, float *logits);

/* One decode step for B rows: row b feeds token ids[b] at position pos[b]
 * of slot slots[b] (writing that cache row and attending over [0, pos[b]]).
 * next[b] receives the argmax token. false on bad arguments / OOM. */
bool tr_clm_step(tr_clm_state *st, tr_pool *pool, const int32_t *ids, const int *pos,
                 const int *slots, int B, int32_t *next);
/* The logits of row b of the latest step ([n_vocab]). */
const float *tr_clm_step_logits(const tr_clm_state *st, int b);

/* Rows of one speculative verify step at most: the current token and up
 * to TR_CLM_SPEC_ROWS - 1 drafts. */
#define TR_CLM_SPEC_ROWS 16

/* The verify step of speculative decoding (nn/greedy.h): feeds ids[0..n)
 * (1 <= n <= TR_CLM_SPEC_ROWS) at positions p0 .. p0 + n - 1 of slot in one
 * pass that reads every weight once, with causal masking; next[i] receives
 * the argmax after row i. Each row's K/V and logits are the bits n one-row
 * tr_clm_step calls would give (the one-run step for several rows), so the
 * accepted tokens are exactly plain greedy's; positions past the accepted
 * ones are simply overwritten later (a step reads only [0, pos]). Under a
 * window (tr_clm_set_window) a draft row may replace a ring row the later
 * steps still attend to: the state keeps those rows and the slot's next
 * step or verify (the one that feeds the first unaccepted position) puts
 * back the rows of the positions after its own, so the cache is plain
 * greedy's there too. Drafts of one slot at a time. false on bad arguments
 * / OOM. */
bool tr_clm_step_seq(tr_clm_state *st, tr_pool *pool, const int32_t *ids, int n, int p0, int slot,
                     int32_t *next);

/* One bidirectional pass (causal_lm_bidi.c; docs/formats/granite_nar.md §6.3): the n rows of x
 * [n][d_model] (input embeddings, consumed) through every block with no causal mask and no KV
 * cache (each row attends to all n rows, RoPE positions 0..n-1), then the final norm and head
 * on rows [head_from, n) only: argmax[i] (ties → lowest id) and, when logits is not NULL,
 * logits [(n - head_from)][n_vocab] of row head_from + i. should_abort (may be NULL) is polled
 * between blocks. OK, ABORTED, OOM (logged), INVALID_ARG on bad arguments. */
transcribe_status tr_clm_bidi(const tr_clm_hparams *hp, const tr_clm_weights *w, tr_pool *pool,
                              float *x, int n, int head_from, int32_t *argmax, float *logits,
                              bool (*should_abort)(void *user), void *abort_user);

/* Greedy loop parameters (docs/formats/causal-lm.md §7 Qwen3-ASR column by default). */
typedef struct tr_clm_greedy_cfg {
    int eos;
    int max_new;                      /* tokens counting the prefill token and a final EOS */
    int max_n_kv;                     /* step window: a step needs n_past + 1 <= max_n_kv */
    bool (*should_abort)(void *user); /* polled before every step; may be NULL */
    void *abort_user;
    int repeat_max_period, repeat_min_repeats, repeat_min_tokens; /* nn/greedy.h guard; 0 = off */
    void (*on_step)(void *user, int n_gen, int n_most); /* nn/greedy.h progress hook; may be NULL */
    void *step_user;
    int spec_k; /* speculative drafts per step (nn/greedy.h); 0 = plain; single runs only */
} tr_clm_greedy_cfg;

/* Turns on nn/greedy.h's repetition guard with g's limits (MOSS, Voxtral
 * and Fun-ASR-Nano set TR_REPEAT_GUARD_DEFAULT when their session asks for
 * it): one setter instead of the three fields copied in each family. */
static inline void tr_clm_greedy_cfg_guard(tr_clm_greedy_cfg *cfg, tr_repeat_guard g) {
    cfg->repeat_max_period = g.max_period;
    cfg->repeat_min_repeats = g.min_repeats;
    cfg->repeat_min_tokens = g.min_tokens;
}

/* Greedy decoding of one utterance in cache slot 0 from the prefill token
 * (the shared loop of nn/greedy.h):
 * out (capacity max_new) receives the generated ids without a trailing EOS.
 * Returns OK (EOS), OUTPUT_TRUNCATED (budget or window reached; out holds
 * the partial ids), ABORTED (out holds the ids so far) or OOM. */
transcribe_status tr_clm_greedy(tr_clm_state *st, tr_pool *pool, const tr_clm_greedy_cfg *cfg,
                                int first_tok, int T_prompt, int32_t *out, int *n_out);

/* Batched prefill (docs/formats/causal-lm.md §8.4): prompt b (x[b], [T[b]][d_model], consumed) into
 * cache slot slots[b] at positions 0..T[b]-1, every prompt in the same
 * passes: a pass takes the next positions of each prompt still running (up
 * to 512 rows in all), so every weight is read once per pass for all
 * prompts. This is upstream's padded [hidden, T_max, B] graph less its pad
 * rows: causal masking keeps a pad position out of every real row, so pads
 * are never computed. first[b] gets prompt b's greedy first token; the
 * logits of row b stay readable through tr_clm_step_logits(st, b). false
 * on OOM / bad arguments (logged). */
bool tr_clm_prefill_batch(tr_clm_state *st, tr_pool *pool, float *const *x, const int *T,
                          const int *slots, int B, int32_t *first);

/* One utterance of a batched run (docs/formats/causal-lm.md §8). A row is decoded with its own
 * budget and window, the ones its single run would use, so a batch gives
 * every row its single-run tokens and status whatever else is in it. */
typedef struct tr_clm_batch_row {
    /* in */
    float *x;     /* prompt embeddings [T][d_model] (consumed); NULL: row not run */
    int T;        /* prompt length */
    int max_new;  /* budget counting the prefill token and a final EOS; 0: cfg->max_new */
    int max_n_kv; /* window (<= the batch n_ctx); 0: cfg->max_n_kv */
    int32_t *out; /* capacity max_new: the generated ids without a trailing EOS */
    /* out */
    int slot;                 /* cache slot (-1: not run) */
    int first;                /* the prefill's token */
    int n_out;                /* ids in out */
    transcribe_status status; /* OK, OUTPUT_TRUNCATED, ABORTED (unfinished at an abort) */
} tr_clm_batch_row;

/* Batched greedy decoding (docs/formats/causal-lm.md §8.5) of the rows with slot >= 0, each from
 * its `first` token at position T: one step feeds every live row (one GEMM per weight), rows finish
 * independently at EOS, budget, window or the repetition guard. cfg->eos, abort (polled once per
 * step) and the guard apply to all rows. Returns OK, ABORTED (every row keeps its ids so far) or
 * OOM. */
transcribe_status tr_clm_greedy_batch(tr_clm_state *st, tr_pool *pool, const tr_clm_greedy_cfg *cfg,
                                      tr_clm_batch_row *rows, int B);

/* The whole docs/formats/causal-lm.md §8 decode of a batch: the rows with x set get cache slots
 * 0..n-1 of an n x n_ctx cache (n_ctx >= every row's window), one batched
 * prefill and the batched step loop. *prefill_ms (optional) gets the
 * prefill's wall time. Returns what tr_clm_greedy_batch returns, or OOM
 * from the cache / prefill. */
transcribe_status tr_clm_run_batch(tr_clm_state *st, tr_pool *pool, const tr_clm_greedy_cfg *cfg,
                                   tr_clm_batch_row *rows, int B, int n_ctx, double *prefill_ms);

/* The decoder half of an audio-LLM session (Qwen3-ASR, Granite Speech, and
 * any family that decodes with this LM): the borrowed thread pool, the
 * context ceiling, the KV cache type, the decoder state, the latest run's
 * prefill logits and stage timings. A family session embeds one as `dec`. */
typedef struct tr_clm_session {
    tr_pool *pool;      /* borrowed from the session config; may be NULL */
    int ceiling;        /* min(max_pos, session n_ctx when > 0) */
    bool kv_f16;        /* AUTO and F16 store F16 (upstream default), F32 only when asked */
    tr_clm_state *lm;   /* owned */
    float *last_logits; /* owned: prefill logits of the latest single run [n_vocab] */
    int last_T_prompt;  /* prompt length of the latest single run */
    double prefill_ms, steps_ms; /* stage timings of the latest single run (transcribe-bench) */
    int n_steps;
} tr_clm_session;

/* What a family's lm_stages tool hook (core/family.h) reports for
 * transcribe-bench: the session's decoder half, the LM it runs, and the
 * family's own encoder / projector split of the latest run (< 0: not
 * reported separately). */
typedef struct tr_clm_stages {
    const tr_clm_session *dec;
    const tr_clm_hparams *hp;
    const tr_clm_weights *w;
    double encoder_ms, projector_ms;
} tr_clm_stages;

/* Defines a family's lm_stages tool hook (core/family.h) for a session type
 * S that holds the decoder half as `dec` and its model as `m`, whose LM is
 * `m->lm` with weights `m->lm_w`; ENC and PROJ are the split timings read
 * from the session `s` (-1: not reported). */
#define TR_CLM_STAGES_HOOK(S, ENC, PROJ)                                                           \
    static bool fam_lm_stages(void *session, tr_clm_stages *out) {                                 \
        const S *s = session;                                                                      \
        *out = (tr_clm_stages){&s->dec, &s->m->lm, &s->m->lm_w, (ENC), (PROJ)};                    \
        return true;                                                                               \
    }

/* Fills *ds (zeroed first) for a model whose LM is (hp, w) with max_pos
 * positions, under the session's n_ctx (<= 0: max_pos) and KV type.
 * OOM (logged with who) on failure, with *ds released. */
transcribe_status tr_clm_session_init(tr_clm_session *ds, const char *who, const tr_clm_hparams *hp,
                                      const tr_clm_weights *w, int max_pos, tr_pool *pool,
                                      int n_ctx, transcribe_kv_type kv_type);
/* Frees what *ds owns (safe on a zeroed or released one). */
void tr_clm_session_release(tr_clm_session *ds);
/* A single run's room before its prefill: the cache of slot 0 for n_ctx
 * positions (tr_clm_reserve) and the output buffer *ids (capacity *cap,
 * grown with tr_grow_int) for budget ids. OK or OOM. MOSS and Voxtral,
 * whose budget follows the audio, both sized the two this way. */
transcribe_status tr_clm_session_reserve(tr_clm_session *ds, int n_ctx, int32_t **ids, int *cap,
                                         int budget);
/* The session limits (docs/c-api.md §13.2) of a decoder-bound family: the
 * context ceiling as effective n_ctx, audio_ms (what that context leaves
 * for audio, by the family's own prompt arithmetic; <= 0 → 0) and the KV
 * bytes of one utterance at the ceiling. */
void tr_clm_session_limits(const tr_clm_session *ds, const tr_clm_hparams *hp, int64_t audio_ms,
                           struct transcribe_session_limits *out);

#endif
