/* The family registry: one line per implemented family. The only file
 * outside a family folder that names families; the dispatcher finds them
 * through core/family.h. */
#include <string.h>

#include "core/family.h"

extern const tr_family tr_family_whisper;
extern const tr_family tr_family_parakeet;
extern const tr_family tr_family_canary;
extern const tr_family tr_family_qwen3_asr;
extern const tr_family tr_family_granite_speech;
extern const tr_family tr_family_moss;
extern const tr_family tr_family_sensevoice;
extern const tr_family tr_family_gigaam;
extern const tr_family tr_family_medasr;
extern const tr_family tr_family_cohere;
extern const tr_family tr_family_moonshine;
extern const tr_family tr_family_moonshine_streaming;
extern const tr_family tr_family_canary_qwen;
extern const tr_family tr_family_funasr_nano;
extern const tr_family tr_family_sortformer;
extern const tr_family tr_family_granite_nar;
extern const tr_family tr_family_voxtral;
extern const tr_family tr_family_voxtral_realtime;

static const tr_family *const k_families[] = {
    &tr_family_whisper,     &tr_family_parakeet,       &tr_family_canary,
    &tr_family_qwen3_asr,   &tr_family_granite_speech, &tr_family_moss,
    &tr_family_sensevoice,  &tr_family_gigaam,         &tr_family_medasr,
    &tr_family_cohere,      &tr_family_moonshine,      &tr_family_moonshine_streaming,
    &tr_family_canary_qwen, &tr_family_funasr_nano,    &tr_family_sortformer,
    &tr_family_granite_nar, &tr_family_voxtral,        &tr_family_voxtral_realtime,
};

/* Architectures transcribe.cpp 0.2.1 publishes (docs/formats/gguf.md §4.1) that
 * have no loader here yet (none today; NULL ends the list): loading one is
 * NOT_IMPLEMENTED rather than UNSUPPORTED_ARCH. Note three general.architecture strings differ from
 * their folder names (cohere_asr, granite_speech, granite_speech_nar). */
static const char *const k_known_archs[] = {
    NULL, /* every published architecture has a loader today */
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
        if (k_known_archs[i] && strcmp(k_known_archs[i], arch) == 0) return true;
    }
    return false;
}

const tr_family *tr_family_for_file(const void *head, size_t n) {
    if (!head || n < 4) return NULL;
    for (size_t i = 0; i < sizeof k_families / sizeof k_families[0]; i++) {
        if (k_families[i]->probe_file && k_families[i]->probe_file(head, n)) return k_families[i];
    }
    return NULL;
}
