/* The family registry: one line per implemented family. */
#include <string.h>

#include "api/family.h"

extern const tr_family tr_family_whisper;

static const tr_family *const k_families[] = {
    &tr_family_whisper,
};

/* Architectures transcribe.cpp publishes that have no loader here yet. */
static const char *const k_known_archs[] = {
    "parakeet", "canary", "qwen3_asr", "granite", "granite_nar", "moss", "canary_qwen",
    "cohere", "voxtral", "voxtral_realtime", "gigaam", "sensevoice", "medasr", "moonshine",
    "moonshine_streaming", "funasr_nano", "sortformer",
};

const tr_family *tr_family_find(const char *arch) {
    if (!arch) return NULL;
    for (size_t i = 0; i < sizeof k_families / sizeof k_families[0]; i++) {
        if (strcmp(k_families[i]->arch, arch) == 0) return k_families[i];
    }
    return NULL;
}

bool tr_family_is_known_arch(const char *arch) {
    if (!arch) return false;
    for (size_t i = 0; i < sizeof k_known_archs / sizeof k_known_archs[0]; i++) {
        if (strcmp(k_known_archs[i], arch) == 0) return true;
    }
    return false;
}
