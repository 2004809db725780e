/* libFuzzer harness: arbitrary bytes through the container detection and
 * decoders (WAV here, the rest via libsndfile when built with it), then a
 * short resample and log-mel of whatever decodes (short clips, and only
 * for input sizes divisible by 8: that stage is slow and would otherwise
 * dominate the execution rate), so decoded garbage
 * (NaN-free but extreme values, odd rates) is exercised downstream too.
 * Build with -DTRANSCRIBE_FUZZ=ON (clang), run:
 *   ./fuzz_wav -max_total_time=180 corpus/ */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "audio/audio_internal.h"
#include "audio/mel.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int quiet;
    if (!quiet) {
        tr_log_set(NULL, NULL); /* errors are expected; keep output clean */
        quiet = 1;
    }
    tr_audio a;
    if (tr_audio_decode_memory(data, size, &a) != TRANSCRIBE_OK) return 0;
    if (a.n > 0 && a.n <= 2048 && size % 8 == 0) { /* keep executions fast */
        float *r = NULL;
        int64_t nr = 0;
        if (tr_resample(a.pcm, a.n, a.rate, 16000, &r, &nr) == TRANSCRIBE_OK && nr <= 48000) {
            tr_mel_config c;
            tr_mel_config_nemo(&c, 80);
            float *mel = NULL;
            int nf = 0;
            if (tr_mel_compute(&c, r, nr, NULL, &mel, &nf) == TRANSCRIBE_OK) free(mel);
        }
        free(r);
    }
    tr_audio_free(&a);
    return 0;
}
