/* The Whisper family vtable (src/core/family.h). */
#include <stdio.h>
#include <string.h>

#include "core/ext_query.h"
#include "gguf/ggml_bin.h"
#include "models/whisper/whisper.h"
#include "models/whisper/whisper_bin_info.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(wh)

static bool fam_accepts_ext_kind(uint32_t kind, int slot) {
    return slot == TRANSCRIBE_EXT_SLOT_RUN && kind == TRANSCRIBE_EXT_KIND_WHISPER_RUN;
}

static bool trace_get(const wh_session *s, int i, struct transcribe_whisper_chunk_trace *out) {
    if (!s || !out || i < 0 || i >= s->n_traces) return false;
    const wh_trace *t = &s->traces[i];
    out->t0_ms = t->t0_ms;
    out->t1_ms = t->t1_ms;
    out->temperature_used = t->temperature;
    out->compression_ratio = t->compression_ratio;
    out->avg_logprob = t->avg_logprob;
    out->no_speech_prob = t->no_speech_prob;
    out->no_speech_triggered = t->no_speech;
    out->n_fallbacks = t->n_fallbacks;
    return true;
}

static int fam_ext_query(void *session, uint32_t what, int index, void *out) {
    const wh_session *s = session;
    switch (what) {
    case TR_QUERY_WHISPER_CHUNK_COUNT:
        return s ? s->n_traces : 0;
    case TR_QUERY_WHISPER_CHUNK_TRACE:
        return trace_get(s, index, out) ? 1 : 0;
    default:
        return -1;
    }
}

/* Legacy whisper.cpp .bin files (docs/formats/gguf.md §11) are Whisper's. */
static bool fam_probe_file(const void *head, size_t n) {
    return tr_ggml_bin_sniff(head, n);
}

/* Tool hook (transcribe-bench): the encoder per 30 s window plus the
 * decoder's cross K/V, projected inside the timed encode stage. */
static bool fam_enc_cost(const struct gguf_file *f, int64_t n, tr_enc_cost *out, const char **why) {
    const uint32_t n_dec = tr_enc_cost_u32(f, "stt.whisper.decoder.n_layers", 0);
    return tr_enc_cost_whisper(f, "whisper", n_dec, (long)n, out, why);
}

/* Tool hook (transcribe-inspect info): what a legacy .bin implies. */
static bool fam_bin_summary(const tr_ggml_bin_hparams *hp, char *out, size_t cap) {
    tr_whisper_bin_info wi;
    tr_whisper_bin_info_from(hp, &wi);
    snprintf(out, cap, "variant %s, %s, %d languages, eot %d, sot %d, timestamps from %d",
             wi.variant, wi.multilingual ? "multilingual" : "English-only", wi.num_languages,
             wi.eot, wi.sot, wi.timestamp_begin);
    return true;
}

const tr_family tr_family_whisper = {
    .arch = "whisper",
    TR_FAMILY_ADAPTED_HOOKS,
    .accepts_ext_kind = fam_accepts_ext_kind,
    .get_limits = tr_family_no_limits,
    .ext_query = fam_ext_query,
    .probe_file = fam_probe_file,
    .enc_cost = fam_enc_cost,
    .bin_summary = fam_bin_summary,
};
