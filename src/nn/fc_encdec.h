/* The encoder side of a FastConformer + cross-attending Transformer decoder
 * (Canary, docs/formats/canary.md §7; Cohere, docs/formats/cohere.md §5.2):
 * the FastConformer rows, their linear projection to the decoder width
 * (optional), and the cross K/V of every decoder layer, for one utterance
 * or a packed group of a batch; and a group's lockstep greedy decode over
 * that packed cross K/V (nn/encdec_greedy.h). Both families ran this pass
 * and kept these buffers the same way, so it lives here once; what stays
 * theirs is the front end, the prompt and the result rows. */
#ifndef TR_NN_FC_ENCDEC_H
#define TR_NN_FC_ENCDEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/encdec_decoder.h"
#include "nn/encdec_greedy.h"
#include "nn/fastconformer.h"
#include "nn/nn.h"
#include "nn/weights.h"
#include "tensor/pool.h"
#include "transcribe.h"

typedef struct tr_fced {
    const tr_fc_encoder *enc;
    const tr_nn_linear *proj; /* encoder → decoder width; NULL: none (d_enc == d_dec) */
    const tr_ed_decoder *dec; /* d_dec = dims.d_model, n_layers */
    int d_enc;
    const char *who; /* the family, for messages */
} tr_fced;

/* The Transformer decoder both families store (docs/formats/canary.md §7,
 * docs/formats/cohere.md §6.2): the token embedding plus a stored position
 * table, an embedding LayerNorm, pre-LN blocks, a final LayerNorm (every
 * LayerNorm at eps 1e-5), and the given head; heads of d_model / n_heads.
 * Only the tensors and the head differ between them. */
typedef struct tr_fced_dec_parts {
    const tr_tensor *tok_emb; /* ne {d_model, n_vocab} */
    const float *pos_table;   /* [n_pos][d_model] */
    tr_nn_norm emb_norm, out_norm;
    tr_nn_dec_block *blocks;
    int n_layers, d_model, n_heads, d_ffn, n_vocab;
    tr_nn_linear head; /* tied: {tok_emb, bias or NULL} */
} tr_fced_dec_parts;
tr_ed_decoder tr_fced_decoder(const tr_fced_dec_parts *p);

/* The decoder's FFN activation from the string key `key` (required):
 * "relu" → RELU, "silu" / "swish" → SILU; anything else is
 * TRANSCRIBE_ERR_GGUF, logged with who (a missing or mistyped key is the
 * GGUF reader's error). */
transcribe_status tr_fced_read_act(const struct gguf_file *f, const char *who, const char *key,
                                   tr_nn_act *act);

/* Loads the n_layers decoder blocks named by names (tr_nn_load_dec_blocks)
 * into a new array *blocks (the caller frees it, also after a failure) and
 * sets every block's FFN activation: OK, OOM, or ERR_GGUF (logged by the
 * loader). */
transcribe_status tr_fced_load_dec_blocks(const tr_nn_wsrc *src, const tr_nn_dec_names *names,
                                          int d, int d_ffn, int n_layers, tr_nn_act act,
                                          tr_nn_dec_block **blocks);

/* An encoder pass's buffers, grown on demand. */
typedef struct tr_fced_bufs {
    float *enc_out;           /* [T][d_enc] */
    float *enc_dec;           /* [T][d_dec] after the projection (== enc_out without one) */
    float *cross_k, *cross_v; /* [L][T][d_dec] (f16: NULL) */
    uint16_t *ck16, *cv16;    /* the same as half floats when f16 (else NULL) */
    size_t cap;               /* frames they hold */
    bool f16;                 /* the owner's choice, before the first reserve: half-float
                               * cross K/V (with an F16 self cache: half the step's bytes) */
} tr_fced_bufs;

/* Buffers for at least T frames (the old ones freed first when too small);
 * false on OOM (then all freed). */
bool tr_fced_bufs_reserve(tr_fced_bufs *b, const tr_fced *e, size_t T);
void tr_fced_bufs_free(tr_fced_bufs *b);

/* One utterance: the encoder over mel [n_mels][T_mel], the projection and
 * the cross K/V into b (grown to the frame count, *T_enc). INVALID_ARG
 * (no encoder frame), OOM (logged with who), ABORTED, or OK. */
transcribe_status tr_fced_encode(const tr_fced *e, tr_pool *pool, tr_fc_work *work,
                                 const float *mel, int T_mel, tr_fced_bufs *b, int *T_enc,
                                 tr_fc_abort_fn abort_fn, void *abort_user);

/* The decoder sequence of `rows` ids at positions n_past.. over the T_enc
 * frames of the single-utterance pass in b, with cache kv (for tr_ed_step,
 * or a tool's tr_ed_probe). */
tr_ed_seq tr_fced_seq(const tr_fced *e, const tr_fced_bufs *b, tr_nn_kv *kv, const int32_t *ids,
                      int rows, int n_past, int T_enc);
/* True when such a sequence may run: b holds T_enc >= 1 frames, the ids lie
 * in the vocabulary and the positions fit n_ctx (tr_ed_seq_ok). */
bool tr_fced_seq_ok(const tr_fced *e, const tr_fced_bufs *b, const int32_t *ids, int rows,
                    int n_past, int T_enc, int n_ctx);

/* Speculative verification (nn/greedy.h tr_greedy_verify_fn) over the
 * single-utterance pass in b: ids[0..n) at positions n_past.. in passes of
 * TR_FCED_VERIFY_ROWS rows (dec_pass.h's small pass, whose rows carry the
 * bits of one-row steps); next[i] gets the argmax after ids[i], what n
 * single steps would give. x and scratch hold TR_FCED_VERIFY_ROWS rows
 * (tr_ed_step_scratch), logits [TR_FCED_VERIFY_ROWS][V]. false when the
 * sequence may not run (tr_fced_seq_ok). */
#define TR_FCED_VERIFY_ROWS 4
bool tr_fced_verify(const tr_fced *e, tr_pool *pool, const tr_fced_bufs *b, tr_nn_kv *kv,
                    const int32_t *ids, int n, int n_past, int T_enc, int n_ctx, float *x,
                    float *scratch, float *logits, int32_t *next);

/* One utterance of a packed group. */
typedef struct tr_fced_utt {
    int idx; /* batch index */
    float *mel;
    int T_mel, T, off; /* encoder frames and their first packed row */
    tr_nn_kv kv;
    int32_t *out; /* [max_gen] generated ids (EOS excluded) */
    int n_out;
    int32_t last; /* the last token (EOS when it stopped there) */
    bool live;    /* cut short by an abort */
} tr_fced_utt;

/* A group of a batch: its utterances' rows packed one after another (no
 * padding, so no cross-attention mask) and their encoder buffers. */
typedef struct tr_fced_group {
    tr_fced_utt *it;
    int n, rows;
    tr_fced_bufs b;
} tr_fced_group;

/* A group's front ends: mel(user, idx, &mel, &T_mel) per utterance; one
 * whose front end fails, or whose mel gives no encoder frame, leaves the
 * group through drop(drop_user, idx, status) (INVALID_ARG for no frame) and
 * the rest close up. OOM from a front end ends it (OOM), else OK. */
transcribe_status
tr_fced_group_mels(tr_fced_group *g, const tr_fced *e,
                   transcribe_status (*mel)(void *user, int idx, float **mel, int *T_mel),
                   void *user, void (*drop)(void *drop_user, int idx, transcribe_status st),
                   void *drop_user);

/* Packed offsets, the encoder buffers, and per utterance a cache of n_ctx
 * positions and max_gen ids; kv_f16 also makes the cross K/V half floats;
 * false on OOM (logged). */
bool tr_fced_group_alloc(tr_fced_group *g, const tr_fced *e, int n_ctx, int max_gen, bool kv_f16);

/* Encoder, projection and cross K/V of every decoder layer for the whole
 * group in one pass (tr_fc_forward_batch: every projection reads its
 * weights once for the group). */
transcribe_status tr_fced_group_encode(tr_fced_group *g, const tr_fced *e, tr_pool *pool,
                                       tr_fc_work *work, tr_fc_abort_fn abort_fn, void *abort_user);

/* Greedy lockstep decode of the group (tr_ed_greedy_batch with cfg; every
 * utterance's n_out, last and live filled): OK, ABORTED or OOM. */
transcribe_status tr_fced_group_decode(tr_fced_group *g, const tr_fced *e, tr_pool *pool,
                                       const tr_ed_greedy_cfg *cfg);

/* A group of the k utterances idx (batch indices) made, handed to
 * run(user, g) and freed again: the group hook both families hand core's
 * tr_run_batch_groups comes down to this call. OOM when the group cannot
 * be made, else run's status. */
transcribe_status tr_fced_group_run(const int *idx, int k,
                                    transcribe_status (*run)(void *user, tr_fced_group *g),
                                    void *user);

/* Frees what the group holds (not the utterance array) and empties it. */
void tr_fced_group_free(tr_fced_group *g);

#endif
