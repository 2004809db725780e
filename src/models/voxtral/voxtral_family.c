/* The Voxtral family vtable (src/core/family.h). */
#include "models/voxtral/voxtral.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(vx)

/* docs/c-api.md §13.2 basis of docs/formats/voxtral.md §8: (n_ctx − 16 prompt overhead − 448
 * reserve) audio tokens of chunk_ms / 375 (80 ms); KV bytes for one utterance at the
 * context. Not published without an nb_max_frames key (§8). */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const vx_session *s = session;
    const vx_model *m = s->m;
    const int64_t tokens = (int64_t)s->dec.ceiling - VX_PROMPT_SLACK - VX_GEN_RESERVE;
    const int64_t chunk_ms = (int64_t)m->n_chunk * 1000 / m->mel.sample_rate;
    const int64_t ms = m->nb_frames_key && tokens > 0 ? tokens * chunk_ms / m->audio_per_chunk : 0;
    tr_clm_session_limits(&s->dec, &m->lm, ms, out);
}

/* Tool hooks (transcribe-bench): the Whisper encoder per 30 s chunk (the projector is
 * small and not counted); the decoder and the encoder / projector split of the latest
 * run. */
static bool fam_enc_cost(const struct gguf_file *f, int64_t n, tr_enc_cost *out, const char **why) {
    return tr_enc_cost_whisper(f, "voxtral", 0, (long)n, out, why);
}

TR_CLM_STAGES_HOOK(vx_session, s->enc_ms, s->proj_ms)

const tr_family tr_family_voxtral = {
    .arch = "voxtral",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
    .lm_stages = fam_lm_stages,
};
