/* PLACEHOLDER until the Whisper family lands: the registry links against it. */
#include "api/family.h"

static transcribe_status whisper_load(const tr_load_ctx *lc, void **out_model,
                                      tr_model_desc *desc) {
    (void)lc;
    (void)desc;
    *out_model = NULL;
    return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
}

const tr_family tr_family_whisper = {
    .arch = "whisper",
    .load = whisper_load,
};
