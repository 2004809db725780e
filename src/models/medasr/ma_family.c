/* The MedASR family vtable (src/core/family.h): offline runs and a packed batch. */
#include "gguf/gguf.h"
#include "models/medasr/medasr.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(ma)

/* Tool hook (transcribe-bench): one encoder pass (docs/formats/medasr.md §5): the subsampler
 * (dense 128 → d, two k-wide stride-2 convs, dense C → d), per block two FFNs, Q/K/V/O,
 * attention 4·T²·d, the conv module (pointwise d → 2d and d → d, depthwise k taps), then the
 * CTC head. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
#define EK(name) "stt.medasr.encoder." name
    const double L = tr_enc_cost_u32(g, EK("n_layers"), 0), d = tr_enc_cost_u32(g, EK("hidden"), 0),
                 F = tr_enc_cost_u32(g, EK("intermediate"), 0),
                 k = tr_enc_cost_u32(g, EK("conv_kernel"), 0),
                 nm = tr_enc_cost_u32(g, EK("num_mel_bins"), 0),
                 C = tr_enc_cost_u32(g, EK("sub_channels"), 0),
                 V = tr_enc_cost_u32(g, "stt.medasr.ctc.vocab_size", 0);
    const int64_t sk = tr_enc_cost_u32(g, EK("sub_kernel"), 5);
#undef EK
    const int64_t win = tr_enc_cost_u32(g, "stt.frontend.win_length", 400),
                  hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160);
    if (!L || !d || !F || !k || !nm || !C || win <= 0 || hop <= 0 || sk <= 0) {
        *why = "missing medasr encoder keys";
        return false;
    }
    if (n < win) {
        *why = "input shorter than one frame";
        return false;
    }
    const int64_t T_mel = 1 + (n - win) / hop, T1 = T_mel >= sk ? (T_mel - sk) / 2 + 1 : 0,
                  T_enc = T1 >= sk ? (T1 - sk) / 2 + 1 : 0;
    if (T_enc < 1) {
        *why = "input shorter than one encoder frame";
        return false;
    }
    const double T = (double)T_enc;
    const double sub =
        2.0 * T_mel * nm * d + 2.0 * T1 * sk * d * d + 2 * T * sk * d * C + 2 * T * C * d;
    const double per =
        8 * T * d * F + 8 * T * d * d + 4 * T * T * d + 6 * T * d * d + 2 * T * d * k;
    out->family = "medasr";
    out->windows = 1;
    out->gflop = (sub + per * L + 2 * T * d * V) * 1e-9;
    out->frames = (int)T_enc;
    out->gemm_k = (int)d;
    out->gemm_n = (int)F;
    return true;
}

const tr_family tr_family_medasr = {
    .arch = "medasr",
    TR_FAMILY_ADAPTED_HOOKS,
    .enc_cost = fam_enc_cost,
};
