/* The Qwen3-ASR family vtable (src/core/family.h). */
#include "models/qwen3_asr/qwen3_asr.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(qa)

/* docs/c-api.md §13.2, decoder-bound: (n_ctx − 48 prompt − 256 reserve) audio
 * tokens of 80 ms; KV bytes for one utterance at the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const qa_session *s = session;
    const qa_model *m = s->m;
    int64_t tokens = (int64_t)s->dec.ceiling - 48 - QA_MAX_NEW;
    tr_clm_session_limits(&s->dec, &m->lm, tokens * 80, out);
}

/* ---- tool hooks (transcribe-bench) ---- */

/* Qwen3-ASR audio encoder (docs/formats/qwen3_asr.md §6) on n samples: per
 * chunk of 2 * n_window mel frames (the last zero-padded) three 3x3
 * stride-2 convolutions and conv_out, then full attention blocks over the
 * pad-trimmed rows and the proj1 / proj2 head. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
#define QK(name) "stt.qwen3_asr.encoder." name
    const double L = tr_enc_cost_u32(g, QK("n_layers"), 0),
                 d = tr_enc_cost_u32(g, QK("d_model"), 0), F = tr_enc_cost_u32(g, QK("ffn_dim"), 0),
                 C = tr_enc_cost_u32(g, QK("downsample_hidden"), 0),
                 V = tr_enc_cost_u32(g, QK("output_dim"), 0);
    const long M = tr_enc_cost_u32(g, QK("num_mel_bins"), 0),
               W = 2L * tr_enc_cost_u32(g, QK("n_window"), 0);
#undef QK
    const long hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160);
    if (!L || !d || !F || !C || !V || M <= 0 || W <= 0 || hop <= 0) {
        *why = "missing qwen3_asr encoder keys";
        return false;
    }
    const long T_mel = n / hop;
    if (T_mel < 1) {
        *why = "input shorter than one mel frame";
        return false;
    }
    const long n_chunks = (T_mel + W - 1) / W;
    long h = M, w = W;
    double conv = 0; /* per chunk */
    for (int i = 0; i < 3; i++) {
        h = (h + 1) / 2;
        w = (w + 1) / 2;
        conv += 2.0 * C * (i == 0 ? 1 : C) * 9 * (double)h * (double)w;
    }
    const long per = w, last = T_mel - (n_chunks - 1) * W;
    long tail = last;
    for (int i = 0; i < 3; i++) tail = (tail + 1) / 2;
    const double T = (double)((n_chunks - 1) * per + tail); /* tr_qa_enc_frames */
    const double layer = 8 * T * d * d + 4 * T * T * d + 4 * T * d * F;
    out->family = "qwen3_asr";
    out->windows = (int)n_chunks;
    out->gflop = (n_chunks * (conv + 2.0 * per * C * (double)h * d) + L * layer + 2 * T * d * d +
                  2 * T * d * V) *
                 1e-9;
    out->frames = (int)T;
    out->gemm_k = (int)d;
    out->gemm_n = (int)F;
    return true;
}

TR_CLM_STAGES_HOOK(qa_session, -1, -1)

const tr_family tr_family_qwen3_asr = {
    .arch = "qwen3_asr",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
    .lm_stages = fam_lm_stages,
};
