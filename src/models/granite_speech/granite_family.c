/* The Granite Speech family vtable (src/core/family.h). */
#include "models/granite_speech/granite.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(gs)

/* docs/c-api.md §13.2, decoder-bound (docs/formats/granite_speech.md §9): (n_ctx − 64 − 256) / 3
 * windows of 300 ms; KV bytes for one utterance at the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const gs_session *s = session;
    const gs_model *m = s->m;
    int64_t windows = ((int64_t)s->dec.ceiling - 64 - GS_MAX_NEW) / m->proj.n_query;
    int64_t ms_per_window = (int64_t)m->proj.window * 2 * m->mel.hop_length * 1000;
    tr_clm_session_limits(&s->dec, &m->lm, windows * ms_per_window / m->mel.sample_rate, out);
}

/* ---- tool hooks (transcribe-bench) ---- */

/* Granite Speech Conformer (docs/formats/granite_speech.md §6.1) on n samples. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
#define GK(name) "stt.granite.encoder." name
    const double L = tr_enc_cost_u32(g, GK("n_layers"), 0), d = tr_enc_cost_u32(g, GK("hidden"), 0),
                 in = tr_enc_cost_u32(g, GK("input_dim"), 0),
                 V = tr_enc_cost_u32(g, GK("output_dim"), 0),
                 F = d * tr_enc_cost_u32(g, GK("feedforward_mult"), 0),
                 c = d * tr_enc_cost_u32(g, GK("conv_expansion"), 0),
                 k = tr_enc_cost_u32(g, GK("conv_kernel_size"), 0);
    const long C = tr_enc_cost_u32(g, GK("context_size"), 0);
#undef GK
    const long hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160);
    if (!L || !d || !in || !V || !F || !c || !k || C <= 0 || hop <= 0) {
        *why = "missing granite encoder keys";
        return false;
    }
    const long T = n / hop / 2; /* stacked frames: tr_gs_enc_frames */
    double attn = 0;            /* Σ over blocks of n_b² */
    for (long r0 = 0; r0 < T; r0 += C) {
        const double nb = (double)(T - r0 < C ? T - r0 : C);
        attn += nb * nb;
    }
    const double layer = 8 * T * d * F                    /* two macaron FFNs */
                         + 8 * T * d * d                  /* Q, K, V, O */
                         + 6 * attn * d                   /* content, Shaw position, PV */
                         + 2 * T * d * 2 * c              /* pointwise 1 (GLU input) */
                         + 2 * T * c * k + 2 * T * c * d; /* depthwise, pointwise 2 */
    out->family = "granite_speech";
    out->windows = 1;
    out->gflop = (2 * T * in * d + L * layer + 4 * T * d * V) * 1e-9;
    out->frames = (int)T;
    out->gemm_k = (int)d;
    out->gemm_n = (int)F;
    return true;
}

TR_CLM_STAGES_HOOK(gs_session, s->encode_ms, s->proj_ms)

const tr_family tr_family_granite_speech = {
    .arch = "granite_speech",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
    .lm_stages = fam_lm_stages,
};
