/* The Fun-ASR-Nano family vtable (src/core/family.h). */
#include "models/funasr_nano/funasr_nano.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(fn)

/* docs/c-api.md §13.2 and docs/formats/funasr_nano.md §8, decoder-bound:
 * (n_ctx − 48 prompt − 256 reserve) audio tokens of folds · lfr_n hops (480
 * ms with the low frame rate, 60 ms without); KV bytes for one utterance at
 * the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const fn_session *s = session;
    const fn_model *m = s->m;
    const int64_t tokens = (int64_t)s->dec.ceiling - FN_PROMPT_RESERVE - FN_MAX_NEW;
    const int64_t ms_tok = (m->ad.low_frame_rate ? 8 : 1) * (int64_t)m->mel.lfr_n *
                           m->mel.hop_length * 1000 / m->mel.sample_rate;
    tr_clm_session_limits(&s->dec, &m->lm, tokens * ms_tok, out);
}

/* Tool hooks (transcribe-bench): the SAN-M stack over the T_lfr rows of
 * docs/formats/funasr_nano.md §4 (nn/enc_cost.h; no prefix rows, no head). The
 * adaptor is timed apart (projector_ms) and not counted: the bench divides the
 * count by the encoder's own time. The decoder and that split of the latest run. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
    const int64_t win = tr_enc_cost_u32(g, "stt.frontend.win_length", 400),
                  hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160),
                  lfr_n = tr_enc_cost_u32(g, "stt.frontend.lfr_n", 6);
    if (win <= 0 || hop <= 0 || lfr_n <= 0) {
        *why = "missing funasr_nano front-end keys";
        return false;
    }
    if (n < win) {
        *why = "input shorter than one frame";
        return false;
    }
    const int64_t frames = 1 + (n - win) / hop;
    if (!tr_enc_cost_sanm(g, "stt.funasr_nano.encoder.", (frames + lfr_n - 1) / lfr_n, out, why))
        return false;
    out->family = "funasr_nano";
    return true;
}

TR_CLM_STAGES_HOOK(fn_session, s->enc_ms, s->adaptor_ms)

const tr_family tr_family_funasr_nano = {
    .arch = "funasr_nano",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
    .lm_stages = fam_lm_stages,
};
