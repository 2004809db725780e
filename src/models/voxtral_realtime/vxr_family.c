/* The Voxtral Realtime family vtable (src/core/family.h): offline runs, lockstep batches and
 * native streaming (vxr_stream.c). */
#include "models/voxtral_realtime/vxr.h"
#include "nn/enc_cost.h"
#include "transcribe/voxtral_realtime.h"

TR_FAMILY_ADAPTERS(vxr)
TR_FAMILY_STREAM_ADAPTERS(vxr)

/* docs/formats/voxtral_realtime.md §8: the stream slot's VRST kind only. */
static bool fam_accepts_ext_kind(uint32_t kind, int slot) {
    return slot == TRANSCRIBE_EXT_SLOT_STREAM &&
           kind == TRANSCRIBE_EXT_KIND_VOXTRAL_REALTIME_STREAM;
}

static transcribe_status fam_validate_stream(void *model, const struct transcribe_ext *ext) {
    return tr_vxr_validate_stream(model, ext);
}

/* Tool hook (transcribe-bench): the encoder's work on n samples at the default delay
 * (docs/formats/voxtral_realtime.md §4, §5): the padded input's T_mel frames through the two
 * k = 3 convolutions, per block Q/K/V/O (width a = heads·head_dim), the SwiGLU FFN and windowed
 * attention 4·T·min(T, window)·a, then the projector on T/4 rows. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
#define EK(name) "stt.voxtral_realtime.encoder." name
    const double L = tr_enc_cost_u32(g, EK("n_layers"), 0),
                 d = tr_enc_cost_u32(g, EK("d_model"), 0),
                 a = (double)tr_enc_cost_u32(g, EK("n_heads"), 0) *
                     tr_enc_cost_u32(g, EK("head_dim"), 0),
                 F = tr_enc_cost_u32(g, EK("ffn_dim"), 0),
                 M = tr_enc_cost_u32(g, EK("num_mel_bins"), 0),
                 W = tr_enc_cost_u32(g, EK("sliding_window"), 0),
                 D = tr_enc_cost_u32(g, "stt.voxtral_realtime.decoder.hidden_size", 0),
                 dl = tr_enc_cost_u32(g, "stt.voxtral_realtime.time.default_num_delay_tokens", 6);
#undef EK
    if (!L || !d || !a || !F || !M || !W || !D || n <= 0) {
        *why = "missing voxtral_realtime encoder keys";
        return false;
    }
    const double n_tok = 32 + (double)((n + 1279) / 1280) + dl + 11, T_mel = 8 * n_tok,
                 T = T_mel / 2, Tk = T < W ? T : W;
    double fl = 2.0 * T_mel * 3 * M * d + 2.0 * T * 3 * d * d;
    fl += L * (2.0 * T * d * a * 4 + 4.0 * T * Tk * a + 6.0 * T * d * F);
    fl += 2.0 * (T / 4) * (4 * d * D + D * D);
    out->family = "voxtral_realtime";
    out->windows = 1;
    out->gflop = fl * 1e-9;
    out->frames = (int)T;
    out->gemm_k = (int)d;
    out->gemm_n = (int)F;
    return true;
}

TR_CLM_STAGES_HOOK(vxr_session, -1, -1)

const tr_family tr_family_voxtral_realtime = {
    .arch = "voxtral_realtime",
    TR_FAMILY_ADAPTED_HOOKS,
    /* docs/c-api.md §13.2; docs/formats/voxtral_realtime.md §8: the session n_ctx is ignored and
     * nothing is bounded but the decoder's positions, so every limit reads 0 (unbounded) */
    .get_limits = tr_family_no_limits,
    .accepts_ext_kind = fam_accepts_ext_kind,
    .validate_stream = fam_validate_stream,
    TR_FAMILY_STREAM_HOOKS,
    .enc_cost = fam_enc_cost,
    .lm_stages = fam_lm_stages,
};
