/* The SenseVoice family vtable (src/core/family.h): offline runs; a batch
 * runs each utterance on its own (run_batch NULL: the dispatcher's serial
 * path), which gives every utterance exactly its single-run result. */
#include "models/sensevoice/sensevoice.h"
#include "gguf/gguf.h"
#include "nn/enc_cost.h"

TR_FAMILY_SERIAL_ADAPTERS(sv)

/* Tool hook (transcribe-bench): one encoder pass over T = T_lfr + 4 rows
 * (docs/formats/sensevoice.md §4–§5; nn/enc_cost.h counts the SAN-M stack),
 * then the CTC head. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
    const int64_t win = tr_enc_cost_u32(g, "stt.frontend.win_length", 400),
                  hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160),
                  lfr_n = tr_enc_cost_u32(g, "stt.frontend.lfr_n", 6);
    if (win <= 0 || hop <= 0 || lfr_n <= 0) {
        *why = "missing sensevoice front-end keys";
        return false;
    }
    if (n < win) {
        *why = "input shorter than one frame";
        return false;
    }
    const int64_t frames = 1 + (n - win) / hop, T_lfr = (frames + lfr_n - 1) / lfr_n;
    if (!tr_enc_cost_sanm(g, "stt.sensevoice.encoder.", T_lfr + 4, out, why)) return false;
    const int64_t tk = tr_gguf_find_key(g, "tokenizer.ggml.tokens");
    const double V = tk >= 0 ? (double)tr_gguf_kv_arr_n(g, tk) : 0; /* the CTC head's rows */
    out->family = "sensevoice";
    out->gflop += 2.0 * (double)(T_lfr + 4) * out->gemm_k * V * 1e-9;
    return true;
}

const tr_family tr_family_sensevoice = {
    .arch = "sensevoice",
    TR_FAMILY_SERIAL_HOOKS,
    .get_limits = tr_family_no_limits, /* docs/formats/sensevoice.md §7: n_ctx has no effect */
    .enc_cost = fam_enc_cost,
};
