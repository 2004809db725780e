/* The Moonshine family vtable (src/core/family.h). */
#include <string.h>

#include "models/moonshine/moonshine.h"
#include "gguf/gguf.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(mn)

/* docs/c-api.md §13.2: the decoder context is max_position_embeddings (the
 * session n_ctx is ignored, docs/formats/moonshine.md §8); KV bytes = K and V
 * of every layer at every position. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const mn_session *s = session;
    const mn_model *m = s->m;
    out->effective_n_ctx = m->hp.max_pos;
    out->effective_max_audio_ms = m->max_audio_ms;
    out->max_kv_bytes = (int64_t)tr_nn_kv_bytes(&s->kv);
}

/* The bytes one greedy decoder step reads: every decoder tensor except
 * the cross K / V projections (run once per utterance), in the file's
 * types (the tied embedding once, as the head: the step reads one row of
 * it as embedding), and the F32 cross K / V of every layer for T frames
 * (docs/formats/moonshine.md §6.1). */
static double step_bytes(const struct gguf_file *g, double T, double d, double L) {
    double b = 2.0 * L * T * d * sizeof(float);
    for (int64_t i = 0; i < tr_gguf_n_tensors(g); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        if (!t || !t->name || strncmp(t->name, "dec.", 4) != 0) continue;
        if (strstr(t->name, ".cross_attn.k.") || strstr(t->name, ".cross_attn.v.")) continue;
        b += (double)t->nbytes;
    }
    return b;
}

/* Tool hook (transcribe-bench): the conv stem (three valid convolutions),
 * per block Q/K/V/O, attention 4·T²·d and the FFN, and the decoder's cross
 * K/V (4·T·d² per decoder layer), all inside the timed encode stage; and
 * the bytes of one decoder step (step_bytes). */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
#define MK(name) "stt.moonshine." name
    const double d = tr_enc_cost_u32(g, MK("encoder.d_model"), 0),
                 F = tr_enc_cost_u32(g, MK("encoder.ffn_dim"), 0),
                 L = tr_enc_cost_u32(g, MK("encoder.n_layers"), 0),
                 Ld = tr_enc_cost_u32(g, MK("decoder.n_layers"), 0);
    const int32_t *a = NULL;
    uint64_t na = 0;
    int ch[3], ks[3], st[3];
    const char *keys[3] = {MK("conv_stem.channels"), MK("conv_stem.kernel_sizes"),
                           MK("conv_stem.strides")};
    int *dst[3] = {ch, ks, st};
#undef MK
    for (int k = 0; k < 3; k++) {
        if (tr_gguf_get_arr_i32(g, keys[k], &a, &na) != 1 || na != 3) {
            *why = "missing moonshine conv_stem keys";
            return false;
        }
        for (int j = 0; j < 3; j++) dst[k][j] = a[j];
    }
    if (!d || !F || !L) {
        *why = "missing moonshine encoder keys";
        return false;
    }
    double t[3], len = (double)n, fl = 0, cin = 1;
    for (int j = 0; j < 3; j++) {
        if (st[j] <= 0 || ks[j] <= 0 || len < ks[j]) {
            *why = "input shorter than the conv stem's window";
            return false;
        }
        t[j] = (double)(((int64_t)len - ks[j]) / st[j] + 1);
        fl += 2.0 * t[j] * ch[j] * cin * ks[j];
        cin = ch[j];
        len = t[j];
    }
    const double T = t[2];
    fl += L * (8.0 * T * d * d + 4.0 * T * T * d + 4.0 * T * d * F) + Ld * 4.0 * T * d * d;
    out->family = "moonshine";
    out->windows = 1;
    out->gflop = fl * 1e-9;
    out->frames = (int)T;
    out->gemm_k = (int)d;
    out->gemm_n = (int)F;
    out->dec_step_mb = step_bytes(g, T, d, Ld) / 1048576.0;
    return true;
}

const tr_family tr_family_moonshine = {
    .arch = "moonshine",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
};
