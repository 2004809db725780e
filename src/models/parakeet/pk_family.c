/* The Parakeet family vtable (src/core/family.h): offline and batched runs,
 * native streaming for the cache-aware files (pk_stream.c) and buffered
 * streaming for unified-en's menu (pk_stream_buffered.c); begin declines
 * every other file with NOT_IMPLEMENTED. */
#include "models/parakeet/parakeet.h"
#include "nn/enc_cost.h"
#include "transcribe/parakeet.h"

TR_FAMILY_ADAPTERS(pk)
TR_FAMILY_STREAM_ADAPTERS(pk)

/* Cache-aware files and unified-en's buffered menu stream natively; every
 * other Parakeet file through the dispatcher's generic driver. */
static bool fam_stream_native(void *model) {
    return tr_pk_stream_native(model) || tr_pk_stream_buffered(model);
}

/* docs/c-api.md §7.2 / §7.3: on the STREAM slot, the cache-aware files take the
 * lookahead knob (PKST), the buffered-menu files the (left, chunk, right)
 * choice (PKBS); nothing else takes an extension. */
static bool fam_model_accepts_ext_kind(void *model, uint32_t kind, int slot) {
    if (slot != TRANSCRIBE_EXT_SLOT_STREAM) return false;
    if (kind == TRANSCRIBE_EXT_KIND_PARAKEET_STREAM) return tr_pk_stream_native(model);
    if (kind == TRANSCRIBE_EXT_KIND_PARAKEET_BUFFERED_STREAM) return tr_pk_stream_buffered(model);
    return false;
}

/* Preflight of the stream extension (docs/c-api.md §14.3 step 10). */
static transcribe_status fam_validate_stream(void *model, const struct transcribe_ext *ext) {
    if (tr_pk_stream_buffered(model)) {
        int lcr[3];
        return tr_pk_bstream_choice(model, ext, lcr);
    }
    int choice = 0;
    return tr_pk_stream_choice(model, ext, &choice);
}

/* Tool hook (transcribe-bench): the FastConformer encoder, an input over
 * one window counted per window exactly as pk_run.c schedules them. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
    tr_fc_hparams hp;
    if (tr_fc_read_hparams(g, "stt.parakeet.encoder.", TR_FC_KEYS_PARAKEET, &hp)) {
        *why = "unreadable encoder hyper-parameters";
        return false;
    }
    const int64_t hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160);
    if (hop <= 0) {
        *why = "bad hop_length";
        return false;
    }
    pk_window_cfg wc;
    tr_pk_window_cfg_default(&wc);
    out->family = "parakeet";
    out->gflop = 0;
    out->windows = 0;
    long T = 0;
    const int64_t factor = (int64_t)1 << hp.sub_stages; /* sub_stages 3-tap stride-2 halvings */
    const int64_t total = (n / hop + factor) / factor;
    if (total <= wc.max_frames) {
        out->gflop = tr_enc_cost_fc_pass(&hp, (long)(n / hop + 1), &T);
        out->windows = 1;
    } else {
        const int64_t spf = factor * hop;
        int64_t start = 0;
        long T_first = 0;
        for (;;) {
            const bool last = start + wc.win_frames >= total;
            const int64_t a = start * spf, b = last ? n : (start + wc.win_frames) * spf;
            out->gflop += tr_enc_cost_fc_pass(&hp, (long)((b - a) / hop + 1), &T);
            if (out->windows++ == 0) T_first = T;
            if (last) break;
            int64_t next = start + wc.hop_frames;
            if (next + wc.win_frames > total) next = total - wc.win_frames;
            start = next > start ? next : start + 1;
        }
        T = T_first;
    }
    out->gflop *= 1e-9;
    out->frames = (int)T;
    out->gemm_k = hp.d_model;
    out->gemm_n = hp.d_ff;
    return true;
}

const tr_family tr_family_parakeet = {
    .arch = "parakeet",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = tr_family_no_limits, /* docs/formats/parakeet.md §10.1: n_ctx has no effect */
    TR_FAMILY_STREAM_HOOKS,
    .stream_native = fam_stream_native,
    .model_accepts_ext_kind = fam_model_accepts_ext_kind,
    .validate_stream = fam_validate_stream,
    .enc_cost = fam_enc_cost,
};
