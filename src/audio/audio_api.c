/* Public audio helpers of the C API: decode any supported file to mono
 * float PCM at a target rate. */
#include <limits.h>
#include <stdlib.h>

#include "audio/audio.h"
#include "transcribe.h"
#include "util/log.h"

/* Declared in include/transcribe.h. Note target_rate 0 means 16000 Hz here
 * (the rate every published model takes), per the audio module's brief. */
transcribe_status transcribe_audio_load_file(const char *path, int target_rate, float **out_pcm,
                                             int *out_n_samples) {
    if (out_pcm) *out_pcm = NULL;
    if (out_n_samples) *out_n_samples = 0;
    if (!path || !out_pcm || !out_n_samples) {
        TR_ERROR("transcribe_audio_load_file: NULL argument");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (target_rate < 0) {
        TR_ERROR("transcribe_audio_load_file: negative target rate %d", target_rate);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_audio a;
    transcribe_status st = tr_audio_load_file(path, target_rate ? target_rate : 16000, &a);
    if (st != TRANSCRIBE_OK) return st;
    if (a.n > INT_MAX) {
        TR_ERROR("transcribe_audio_load_file: %lld samples exceed INT_MAX", (long long)a.n);
        tr_audio_free(&a);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *out_pcm = a.pcm;
    *out_n_samples = (int)a.n;
    return TRANSCRIBE_OK;
}

void transcribe_audio_free(float *pcm) {
    free(pcm);
}
