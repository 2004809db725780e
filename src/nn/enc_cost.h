/* The analytic work of an audio encoder, for transcribe-bench (through a
 * family's enc_cost hook, core/family.h, and api/tool_hooks.h): 2 FLOPs per
 * multiply-add of every GEMM, attention product and convolution
 * (element-wise passes, norms and the softmax are not counted), from the
 * GGUF's hyper-parameters and the input length. The encode time divided
 * into it is the achieved GFLOP/s the bench compares with OpenBLAS on the
 * encoder's FFN GEMM shape. The counts of the blocks more than one family
 * runs live here; each family counts its own windowing. */
#ifndef TR_NN_ENC_COST_H
#define TR_NN_ENC_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "nn/fastconformer.h"

struct gguf_file;

typedef struct tr_enc_cost {
    const char *family; /* the encoder counted, e.g. "whisper" */
    double gflop;       /* for the whole input */
    int windows;        /* encoder passes counted */
    int frames;         /* encoder frames of the first window */
    int gemm_k, gemm_n; /* the encoder's FFN GEMM: K = d_model, N = d_ff */
    /* An encoder-decoder family's greedy step (0: not counted): the MB one
     * decoder step reads at this input — every weight a step multiplies
     * (in the file's types), the head, and the cross K / V of every layer.
     * transcribe-bench model divides it by the copy bandwidth for the
     * step's memory-bound floor. */
    double dec_step_mb;
} tr_enc_cost;

/* A u32 key, or dflt when absent or mistyped. */
uint32_t tr_enc_cost_u32(const struct gguf_file *g, const char *key, uint32_t dflt);

/* The Whisper encoder (whisper_encoder.h) per 30 s window, under the keys
 * `stt.<family>.encoder.*`: conv stem (k = 3 on the nb_max_frames window,
 * then stride 2), per layer Q/K/V/O and the FFN, attention 4·T²·d (QKᵀ and
 * PV); windows counted as ceil(audio / window) (seeks that move back add
 * passes that are not counted). n_dec_layers > 0 adds the decoder's cross
 * K/V projections (4·T·d·d per decoder layer and window), which Whisper
 * runs inside its timed encode stage. false with *why when keys are
 * missing. */
bool tr_enc_cost_whisper(const struct gguf_file *g, const char *family, uint32_t n_dec_layers,
                         long n_samples, tr_enc_cost *out, const char **why);

/* One FastConformer pass (fastconformer.h) over T_mel mel frames: the
 * dw_striding pre-encode (conv0, two depthwise + pointwise pairs, output
 * projection), per layer two macaron FFNs, Q/K/V/O, the positional
 * projection of the 2T − 1 table rows, attention 6·T·T_kv·d (content,
 * position, PV), the conv module (two pointwise convs, depthwise k taps).
 * Returns FLOPs; *T_out gets the encoder frames. */
double tr_enc_cost_fc_pass(const tr_fc_hparams *hp, long T_mel, long *T_out);

/* The encode stage of a FastConformer + cross-attending decoder family
 * (fc_encdec.h: Canary, Cohere) on n samples, the encoder's keys under
 * enc_prefix (e.g. "stt.canary.encoder."), the hop from
 * stt.frontend.hop_length: one FastConformer pass, the projection to d_dec
 * when proj (2·T·d_model·d_dec), and the decoder's cross K/V (4·T·d_src·d_dec
 * per decoder layer, d_src the projection's width or the encoder's); d_dec
 * 0 counts the encoder alone. Fills out (gflop, one window, frames, the FFN
 * GEMM shape), family left to the caller; false with *why when keys are
 * missing. One count for both families' enc_cost hooks. */
bool tr_enc_cost_fced(const struct gguf_file *g, const char *enc_prefix, int64_t n, double d_dec,
                      double n_dec_layers, bool proj, tr_enc_cost *out, const char **why);

/* Granite's Conformer (granite_conformer.h) on n samples, under the keys prefix (e.g.
 * "stt.granite.encoder."): the input linear, per block two macaron FFNs, Q/K/V/O, the
 * block-local attention Σ_blocks 6·n_b²·d (content, Shaw position, PV), the conv module (two
 * pointwise convs, depthwise k taps), and the mid char-CTC head and bypass. T = n / hop / 2
 * stacked frames. out->family is left to the caller. false with *why when keys are missing. */
bool tr_enc_cost_granite(const struct gguf_file *g, const char *prefix, int64_t n, tr_enc_cost *out,
                         const char **why);

/* The two-tier SAN-M encoder (sanm.h) over T rows, under the keys prefix (e.g.
 * "stt.sensevoice.encoder."): the projection block's fused qkv (d_input → 3·d), every other
 * block's (d → 3·d), and per block the output projection, attention 4·T²·d, the FSMN taps
 * 2·T·d·k and the FFN. Fills out (gflop, one window, frames T, the FFN GEMM shape), family
 * left to the caller, who adds what its own stack runs beside; false with *why when keys are
 * missing. */
bool tr_enc_cost_sanm(const struct gguf_file *g, const char *prefix, int64_t T, tr_enc_cost *out,
                      const char **why);

#endif
