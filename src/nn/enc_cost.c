/* Analytic encoder counts of the shared blocks (enc_cost.h). */
#include <stdio.h>

#include "gguf/gguf.h"
#include "nn/enc_cost.h"

uint32_t tr_enc_cost_u32(const struct gguf_file *g, const char *key, uint32_t dflt) {
    uint32_t v = 0;
    return tr_gguf_get_u32(g, key, &v) == 1 ? v : dflt;
}

/* Output length of a 3-tap stride-2 conv with padding 1. */
static long half_up(long n) {
    return (n + 2 - 3) / 2 + 1;
}

static double whisper_window_flop(double D, double F, double L, double mels, double Tm,
                                  double L_dec) {
    const double S = Tm / 2;
    double f = 2 * Tm * D * (mels * 3) + 2 * S * D * (D * 3); /* conv stem */
    f += L * (8 * S * D * D + 4 * S * D * F + 4 * S * S * D);
    return f + L_dec * 4 * S * D * D; /* cross K/V */
}

bool tr_enc_cost_whisper(const struct gguf_file *g, const char *family, uint32_t n_dec_layers,
                         long n, tr_enc_cost *out, const char **why) {
    char k[96];
#define KEY(name) (snprintf(k, sizeof k, "stt.%s.encoder." name, family), k)
    const uint32_t L = tr_enc_cost_u32(g, KEY("n_layers"), 0),
                   D = tr_enc_cost_u32(g, KEY("d_model"), 0),
                   F = tr_enc_cost_u32(g, KEY("ffn_dim"), 0),
                   mels = tr_enc_cost_u32(g, KEY("num_mel_bins"), 0),
                   Tm = tr_enc_cost_u32(g, "stt.frontend.nb_max_frames", 3000),
                   hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160);
#undef KEY
    if (!L || !D || !F || !mels || !Tm || !hop) {
        *why = "missing whisper encoder keys";
        return false;
    }
    const long win = (long)Tm * hop;
    out->family = family;
    out->windows = n > win ? (int)((n + win - 1) / win) : 1;
    out->gflop = out->windows * whisper_window_flop(D, F, L, mels, Tm, n_dec_layers) * 1e-9;
    out->frames = (int)(Tm / 2);
    out->gemm_k = (int)D;
    out->gemm_n = (int)F;
    return true;
}

double tr_enc_cost_fc_pass(const tr_fc_hparams *hp, long T_mel, long *T_out) {
    const double C = hp->sub_channels, d = hp->d_model, F = hp->d_ff, k = hp->conv_kernel;
    const int S = hp->sub_stages; /* stride-2 stages, 1..TR_FC_MAX_SUB_STAGES */
    long t[TR_FC_MAX_SUB_STAGES + 1] = {T_mel}, w[TR_FC_MAX_SUB_STAGES + 1] = {hp->n_mels};
    for (int i = 1; i <= S; i++) {
        t[i] = half_up(t[i - 1]);
        w[i] = half_up(w[i - 1]);
    }
    double f = 2.0 * t[1] * w[1] * C * 9; /* conv0, one input channel */
    for (int i = 2; i <= S; i++)          /* depthwise + pointwise */
        f += 2.0 * t[i] * w[i] * C * 9 + 2.0 * t[i] * w[i] * C * C;
    const double T = (double)t[S];
    f += 2 * T * (C * (double)w[S]) * d; /* flatten → d_model */
    double T_kv = T;
    if (hp->att_style == TR_FC_STYLE_REGULAR && hp->att_left >= 0 && hp->att_right >= 0) {
        double win = hp->att_left + hp->att_right + 1;
        if (win < T_kv) T_kv = win;
    }
    const double layer = 8 * T * d * F                    /* two macaron FFNs */
                         + 8 * T * d * d                  /* Q, K, V, O */
                         + 2 * (2 * T - 1) * d * d        /* positional projection */
                         + 6 * T * T_kv * d               /* content, position, PV */
                         + 6 * T * d * d + 2 * T * d * k; /* pointwise, depthwise */
    *T_out = t[S];
    return f + hp->n_layers * layer;
}

bool tr_enc_cost_fced(const struct gguf_file *g, const char *enc_prefix, int64_t n, double d_dec,
                      double n_dec_layers, bool proj, tr_enc_cost *out, const char **why) {
    tr_fc_hparams hp;
    if (tr_fc_read_hparams(g, enc_prefix, TR_FC_KEYS_CANARY, &hp)) {
        *why = "unreadable encoder hyper-parameters";
        return false;
    }
    const int64_t hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160);
    if (hop <= 0) {
        *why = "bad hop_length";
        return false;
    }
    long T = 0;
    out->windows = 1;
    out->gflop = tr_enc_cost_fc_pass(&hp, (long)(n / hop + 1), &T);
    if (d_dec > 0) {
        const double d_src = proj ? d_dec : hp.d_model;
        if (proj) out->gflop += 2.0 * T * hp.d_model * d_dec;
        out->gflop += n_dec_layers * 4.0 * T * d_src * d_dec;
    }
    out->gflop *= 1e-9;
    out->frames = (int)T;
    out->gemm_k = hp.d_model;
    out->gemm_n = hp.d_ff;
    return true;
}

bool tr_enc_cost_granite(const struct gguf_file *g, const char *prefix, int64_t n, tr_enc_cost *out,
                         const char **why) {
    char k[160];
#define GK(name) (snprintf(k, sizeof k, "%s%s", prefix, name), k)
    const double L = tr_enc_cost_u32(g, GK("n_layers"), 0), d = tr_enc_cost_u32(g, GK("hidden"), 0),
                 in = tr_enc_cost_u32(g, GK("input_dim"), 0),
                 V = tr_enc_cost_u32(g, GK("output_dim"), 0);
    const double F = d * tr_enc_cost_u32(g, GK("feedforward_mult"), 0),
                 c = d * tr_enc_cost_u32(g, GK("conv_expansion"), 0),
                 kk = tr_enc_cost_u32(g, GK("conv_kernel_size"), 0);
    const long C = tr_enc_cost_u32(g, GK("context_size"), 0);
#undef GK
    const long hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160);
    if (!L || !d || !in || !V || !F || !c || !kk || C <= 0 || hop <= 0) {
        *why = "missing granite encoder keys";
        return false;
    }
    const long T = (long)(n / hop / 2); /* stacked frames */
    double attn = 0;                    /* Σ over blocks of n_b² */
    for (long r0 = 0; r0 < T; r0 += C) {
        const double nb = (double)(T - r0 < C ? T - r0 : C);
        attn += nb * nb;
    }
    const double layer = 8 * T * d * F                     /* two macaron FFNs */
                         + 8 * T * d * d                   /* Q, K, V, O */
                         + 6 * attn * d                    /* content, Shaw position, PV */
                         + 2 * T * d * 2 * c               /* pointwise 1 (GLU input) */
                         + 2 * T * c * kk + 2 * T * c * d; /* depthwise, pointwise 2 */
    out->windows = 1;
    out->gflop = (2 * T * in * d + L * layer + 4 * T * d * V) * 1e-9;
    out->frames = (int)T;
    out->gemm_k = (int)d;
    out->gemm_n = (int)F;
    return true;
}

bool tr_enc_cost_sanm(const struct gguf_file *g, const char *prefix, int64_t T, tr_enc_cost *out,
                      const char **why) {
    char k[160];
#define SK(name) (snprintf(k, sizeof k, "%s%s", prefix, name), k)
    const double nb = tr_enc_cost_u32(g, SK("n_blocks"), 0),
                 tp = tr_enc_cost_u32(g, SK("tp_blocks"), 0),
                 d = tr_enc_cost_u32(g, SK("d_model"), 0),
                 di = tr_enc_cost_u32(g, SK("d_input"), 0), F = tr_enc_cost_u32(g, SK("d_ff"), 0),
                 kk = tr_enc_cost_u32(g, SK("kernel_size"), 0);
#undef SK
    if (nb < 2 || !d || !di || !F || !kk) {
        *why = "missing SAN-M encoder keys";
        return false;
    }
    const double t = (double)T;
    const double per = 2 * t * d * d + 4 * t * t * d + 2 * t * d * kk + 4 * t * d * F;
    out->windows = 1;
    out->gflop = (2 * t * di * 3 * d + 2 * t * d * 3 * d * (nb - 1 + tp) + per * (nb + tp)) * 1e-9;
    out->frames = (int)T;
    out->gemm_k = (int)d;
    out->gemm_n = (int)F;
    return true;
}
