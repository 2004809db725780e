/* The GigaAM family vtable (src/core/family.h): offline runs and batches
 * (ga_batch.c: packed utterances through one encoder pass). */
#include "gguf/gguf.h"
#include "models/gigaam/gigaam.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(ga)

/* Tool hook (transcribe-bench): one encoder pass (docs/formats/gigaam.md §4–§5): the two
 * subsampling convs, per block two FFNs, Q/K/V/O, attention 4·T²·d, the conv
 * module (pointwise d → 2d and d → d, depthwise k taps); then the CTC head
 * or the joint's encoder projection. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
#define EK(name) "stt.gigaam.encoder." name
    const double L = tr_enc_cost_u32(g, EK("n_layers"), 0),
                 d = tr_enc_cost_u32(g, EK("d_model"), 0), F = tr_enc_cost_u32(g, EK("d_ff"), 0),
                 k = tr_enc_cost_u32(g, EK("conv_kernel"), 0),
                 ks = tr_enc_cost_u32(g, EK("subs_kernel_size"), 0),
                 fi = tr_enc_cost_u32(g, EK("feat_in"), 0);
#undef EK
    const int64_t win = tr_enc_cost_u32(g, "stt.frontend.win_length", 320),
                  hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160);
    if (!L || !d || !F || !k || !ks || !fi || win <= 0 || hop <= 0) {
        *why = "missing gigaam encoder keys";
        return false;
    }
    if (n < win) {
        *why = "input shorter than one frame";
        return false;
    }
    const int T_mel = (int)(1 + (n - win) / hop), T1 = (T_mel - 1) / 2 + 1,
              T_enc = tr_ga_enc_frames(T_mel);
    const double T = T_enc;
    const double C = tr_enc_cost_u32(g, "stt.gigaam.head.num_classes", 0);
    const double hj = tr_enc_cost_u32(g, "stt.gigaam.joint.hidden", 0);
    const double sub = 2.0 * T1 * fi * ks * d + 2.0 * T * d * ks * d;
    const double per = 8 * T * d * F    /* two FFNs, up and down */
                       + 8 * T * d * d  /* Q, K, V, O */
                       + 4 * T * T * d  /* QKᵀ and PV */
                       + 6 * T * d * d  /* pointwise d → 2d, d → d */
                       + 2 * T * d * k; /* depthwise */
    const double head = 2 * T * d * (C > 0 ? C : hj);
    out->family = "gigaam";
    out->windows = 1;
    out->gflop = (sub + L * per + head) * 1e-9;
    out->frames = T_enc;
    out->gemm_k = (int)d;
    out->gemm_n = (int)F;
    return true;
}

const tr_family tr_family_gigaam = {
    .arch = "gigaam",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = tr_family_no_limits, /* docs/formats/gigaam.md §8: n_ctx has no effect */
    .enc_cost = fam_enc_cost,
};
