/* Replacement of non-finite input samples (see audio.h). */
#include <math.h>
#include <stdlib.h>

#include "audio/audio.h"
#include "util/log.h"

int64_t tr_pcm_count_nonfinite(const float *pcm, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += !isfinite(pcm[i]);
    return bad;
}

void tr_pcm_sanitize_copy(const float *in, int64_t n, float *out) {
    for (int64_t i = 0; i < n; i++) {
        float x = in[i];
        out[i] = isnan(x) ? 0.0f : isinf(x) ? (x > 0 ? 1.0f : -1.0f) : x;
    }
}

const float *tr_pcm_sanitized(const float *pcm, int64_t n, const char *who, float **owned) {
    *owned = NULL;
    int64_t bad = tr_pcm_count_nonfinite(pcm, n);
    if (!bad) return pcm;
    float *c = malloc((size_t)n * sizeof *c);
    if (!c) {
        TR_ERROR("%s: out of memory cleaning %lld samples", who, (long long)n);
        return NULL;
    }
    tr_pcm_sanitize_copy(pcm, n, c);
    TR_WARN("%s: %lld non-finite input samples replaced (NaN → 0, ±Inf → ±1)", who, (long long)bad);
    *owned = c;
    return c;
}
