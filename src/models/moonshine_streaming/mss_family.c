/* The Moonshine Streaming family vtable (src/core/family.h): offline runs,
 * lockstep batches and native streaming (mss_stream.c). */
#include <string.h>

#include "models/moonshine_streaming/mss.h"
#include "gguf/gguf.h"
#include "nn/enc_cost.h"
#include "transcribe/moonshine_streaming.h"

TR_FAMILY_ADAPTERS(mss)
TR_FAMILY_STREAM_ADAPTERS(mss)

/* docs/c-api.md §13.2: the decoder context is max_position_embeddings (the
 * session n_ctx is ignored, docs/formats/moonshine_streaming.md §8). */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const mss_session *s = session;
    out->effective_n_ctx = s->m->hp.max_pos;
    out->effective_max_audio_ms = s->m->max_audio_ms;
    out->max_kv_bytes = (int64_t)tr_nn_kv_bytes(&s->kv);
}

/* docs/formats/moonshine_streaming.md §8: the stream slot's MSST kind only. */
static bool fam_accepts_ext_kind(uint32_t kind, int slot) {
    return slot == TRANSCRIBE_EXT_SLOT_STREAM &&
           kind == TRANSCRIBE_EXT_KIND_MOONSHINE_STREAMING_STREAM;
}

static transcribe_status fam_validate_stream(void *model, const struct transcribe_ext *ext) {
    return tr_mss_validate_stream(model, ext);
}

/* Tool hook (transcribe-bench): the analytic work of one one-shot encode
 * (docs/formats/moonshine_streaming.md §4–§5.3: front-end linear, the two
 * convolutions, per block q/k/v/out, windowed attention and the FFN, the
 * adapter and every decoder layer's cross K/V) and the bytes of one decoder
 * step (every dec.* tensor but the cross K/V projections, and the F32 cross
 * K/V of T frames). */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
#define MK(name) "stt.moonshine_streaming." name
    const double e = tr_enc_cost_u32(g, MK("encoder.d_model"), 0),
                 a = (double)tr_enc_cost_u32(g, MK("encoder.n_heads"), 0) *
                     tr_enc_cost_u32(g, MK("encoder.head_dim"), 0),
                 F = tr_enc_cost_u32(g, MK("encoder.ffn_dim"), 0),
                 L = tr_enc_cost_u32(g, MK("encoder.n_layers"), 0),
                 w = tr_enc_cost_u32(g, MK("encoder.frame_len"), 80),
                 D = tr_enc_cost_u32(g, MK("decoder.d_model"), 0),
                 Ld = tr_enc_cost_u32(g, MK("decoder.n_layers"), 0);
#undef MK
    if (!e || !a || !F || !L || !D || !w || n <= 0) {
        *why = "missing moonshine_streaming encoder keys";
        return false;
    }
    const double Tf = (double)((n + (int64_t)w - 1) / (int64_t)w);
    const double T1 = (double)(((int64_t)Tf + 1) / 2), T = (double)(((int64_t)T1 + 1) / 2);
    double fl = 2.0 * Tf * w * e + 2.0 * T1 * 5 * e * 2 * e + 2.0 * T * 5 * 2 * e * e;
    fl += L * (2.0 * T * e * a * 4 + 4.0 * T * 20 * a + 4.0 * T * e * F); /* ~20-frame windows */
    fl += 2.0 * T * e * D + Ld * 4.0 * T * D * D;
    double b = 2.0 * Ld * T * D * sizeof(float);
    for (int64_t i = 0; i < tr_gguf_n_tensors(g); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        if (!t || !t->name || strncmp(t->name, "dec.", 4) != 0) continue;
        if (strstr(t->name, ".cross_attn.k.") || strstr(t->name, ".cross_attn.v.")) continue;
        b += (double)t->nbytes;
    }
    out->family = "moonshine_streaming";
    out->windows = 1;
    out->gflop = fl * 1e-9;
    out->frames = (int)T;
    out->gemm_k = (int)e;
    out->gemm_n = (int)F;
    out->dec_step_mb = b / 1048576.0;
    return true;
}

const tr_family tr_family_moonshine_streaming = {
    .arch = "moonshine_streaming",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .accepts_ext_kind = fam_accepts_ext_kind,
    .validate_stream = fam_validate_stream,
    TR_FAMILY_STREAM_HOOKS,
    .enc_cost = fam_enc_cost,
};
