/* The SAN-M encoder block (docs/formats/sensevoice.md §5): pre-LN
 * self-attention whose value projection also feeds an FSMN memory (a
 * depthwise convolution over time, plus the values themselves), then a
 * pre-LN ReLU FFN; and the two-tier encoder stack built of them
 * (docs/formats/sensevoice.md §5.3), run by SenseVoice (with its prefix rows
 * and CTC head) and Fun-ASR-Nano (docs/formats/funasr_nano.md §5.1: the
 * audio rows alone, no head).
 *
 * Contract: activations are F32 row-major [T][width]; linear weights are
 * borrowed views of any type tr_matmul takes; the FSMN taps are an owned
 * F32 copy ([k][d] tap-major, zero bias) made at load from the file's
 * [k, 1, d] F32 / F16 kernel; results do not depend on the thread count. */
#ifndef TR_NN_SANM_H
#define TR_NN_SANM_H

#include <stdbool.h>
#include <stddef.h>

#include "gguf/gguf.h"
#include "nn/depthwise.h"
#include "nn/nn.h"
#include "nn/weights.h"
#include "tensor/pool.h"

typedef struct tr_sanm_dims {
    int d_model, n_head, d_ff, kernel; /* kernel odd: symmetric (k-1)/2 padding */
    float ln_eps;                      /* 1e-12 in SenseVoice */
} tr_sanm_dims;

typedef struct tr_sanm_block {
    int din;            /* input width: d_model, or the projection block's wider input */
    bool attn_residual; /* false for the projection block (din != d_model possible) */
    tr_nn_norm ln_attn; /* [din] */
    tr_nn_linear qkv;   /* {din, 3·d}: q, k, v side by side */
    tr_nn_linear out;   /* {d, d} */
    tr_nn_dw fsmn;      /* owned [k][d] taps + zero bias */
    tr_nn_norm ln_ffn;  /* [d] */
    tr_nn_linear fc1;   /* {d, F} */
    tr_nn_linear fc2;   /* {F, d} */
} tr_sanm_block;

/* Loads the block "<prefix>.{norm_attn,attn.qkv,attn.out,attn.fsmn,ffn.fc1,
 * ffn.fc2,norm_ffn}.*" (docs/formats/sensevoice.md §3) with every shape
 * checked against d and din; the FSMN kernel must be F32 or F16 of ne
 * {k, 1, d}. false (logged, naming the tensor) on a missing or misshaped
 * tensor or out of memory; *out then holds nothing to free beyond what
 * tr_sanm_block_free releases. */
bool tr_sanm_block_load(const tr_nn_wsrc *src, const char *prefix, const tr_sanm_dims *d, int din,
                        bool attn_residual, tr_sanm_block *out);
void tr_sanm_block_free(tr_sanm_block *b);

/* Scratch floats for T rows of blocks no wider than din_max. */
size_t tr_sanm_scratch(const tr_sanm_dims *d, int din_max, int T);

/* One block. in is [T][blk->din]; x is [T][d_model]. A residual block
 * works in place (in == x): x += SANM(LN(x)), then x += FFN(LN(x)). The
 * projection block writes x = SANM(LN(in)) + FSMN, then x += FFN(LN(x)).
 * attention is bidirectional over all T rows (no mask). */
void tr_sanm_block_fwd(tr_pool *pool, const tr_sanm_block *blk, const tr_sanm_dims *d,
                       const float *in, float *x, int T, float *scratch);

/* x[t][j] += the 1-based sinusoid table of width D (docs/formats/sensevoice.md
 * docs/formats/sensevoice.md §5.1): for h = D/2 and j < h, sin((t+1)·10000^(−j/(h−1))) at j and the
 * cos at h + j, computed in double and rounded to float. D even, >= 4. */
void tr_sanm_add_positions(float *x, int T, int D);

/* The two-tier SAN-M encoder (docs/formats/sensevoice.md §5.3): the
 * projection block enc.encoders0.0 (d_input → d_model), the residual blocks
 * enc.encoders.0 .. n_blocks-2, enc.after_norm, the tp blocks
 * enc.tp_encoders.*, enc.tp_norm. LayerNorm eps 1e-12 throughout. */
typedef struct tr_sanm_encoder {
    int n_blocks, tp_blocks; /* n_blocks counts the projection block */
    int d_input;
    tr_sanm_dims dims;
    tr_sanm_block *blocks;     /* encoders0.0, encoders.0 .. n_blocks-2 */
    tr_sanm_block *tp;         /* tp_encoders.* */
    int n_loaded, n_tp_loaded; /* blocks whose FSMN taps need freeing */
    tr_nn_norm after_norm, tp_norm;
} tr_sanm_encoder;

/* Reads the encoder keys "<prefix>{n_blocks, tp_blocks, d_model, d_input,
 * n_heads, d_ff, kernel_size, sanm_shift, attention_type, normalize_before}"
 * (docs/formats/sensevoice.md §2; docs/formats/funasr_nano.md §2.3) with
 * their exact types into enc's sizes and dims: n_blocks >= 2, an odd kernel,
 * d_model divisible by n_heads, attention_type "sanm". A sanm_shift other
 * than 0 or normalize_before false is refused when strict (the computation
 * is always symmetric padding and pre-norm), otherwise warned about (`who`
 * names the family). GGUF (logged) on any failure. */
transcribe_status tr_sanm_read_hparams(const gguf_file *g, const char *prefix, const char *who,
                                       bool strict, tr_sanm_encoder *enc);
/* Loads every block and the two norms by exact shape (enc's sizes read
 * first). false (logged, naming the tensor) on a missing or misshaped tensor
 * or OOM; tr_sanm_encoder_free releases what was loaded either way. */
bool tr_sanm_encoder_load(const tr_nn_wsrc *src, tr_sanm_encoder *enc);
void tr_sanm_encoder_free(tr_sanm_encoder *enc);

/* Intermediate outputs a test can ask for (each NULL or [T][d_model]). */
typedef struct tr_sanm_taps {
    float *encoders0_out, *encoders_out, *after_norm_out, *tp_norm_out;
} tr_sanm_taps;

/* The stack on in [T][d_input] (already scaled and with positions; used as
 * scratch: overwritten) → out [T][d_model] after tp_norm. abort (may be
 * NULL) is polled before every block: ABORTED. OOM. */
transcribe_status tr_sanm_encoder_fwd(tr_pool *pool, const tr_sanm_encoder *enc, float *in, int T,
                                      float *out, const tr_sanm_taps *taps, bool (*abort)(void *),
                                      void *abort_user);

#endif
