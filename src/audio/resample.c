/* Resampling entry point: libsoxr (high quality) when the build has it,
 * otherwise the built-in windowed-sinc resampler. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "util/log.h"

#ifdef TR_HAVE_SOXR
#include <soxr.h>
#endif

int64_t tr_resample_out_len(int64_t n_in, int rate_in, int rate_out) {
    if (n_in <= 0 || rate_in <= 0 || rate_out <= 0) return 0;
    /* n_in <= 2^62 / rate_out keeps the product in range */
    if (n_in > (INT64_C(1) << 62) / rate_out) return -1;
    return (n_in * rate_out + rate_in / 2) / rate_in;
}

#ifdef TR_HAVE_SOXR
bool tr_resample_have_soxr(void) {
    return true;
}

transcribe_status tr_resample_soxr(const float *in, int64_t n_in, int rate_in, int rate_out,
                                   float **out, int64_t *n_out) {
    *out = NULL;
    *n_out = 0;
    int64_t olen = tr_resample_out_len(n_in, rate_in, rate_out);
    if (olen <= 0 || (uint64_t)olen > SIZE_MAX / sizeof(float)) {
        TR_ERROR("resample: bad length (%lld samples, %d -> %d Hz)", (long long)n_in, rate_in,
                 rate_out);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    float *o = calloc((size_t)olen, sizeof(float));
    if (!o) {
        TR_ERROR("resample: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_VHQ, 0);
    size_t done = 0;
    soxr_error_t e = soxr_oneshot(rate_in, rate_out, 1, in, (size_t)n_in, NULL, o, (size_t)olen,
                                  &done, &io, &q, NULL);
    if (e) {
        free(o);
        TR_ERROR("resample: soxr failed: %s", e);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    /* done < olen only by rounding at the very end; the rest stays 0. */
    *out = o;
    *n_out = olen;
    return TRANSCRIBE_OK;
}
#else
bool tr_resample_have_soxr(void) {
    return false;
}

transcribe_status tr_resample_soxr(const float *in, int64_t n_in, int rate_in, int rate_out,
                                   float **out, int64_t *n_out) {
    return tr_resample_builtin(in, n_in, rate_in, rate_out, out, n_out);
}
#endif

transcribe_status tr_resample(const float *in, int64_t n_in, int rate_in, int rate_out, float **out,
                              int64_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (!in || n_in <= 0) {
        TR_ERROR("resample: no input samples");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (rate_in < TR_AUDIO_MIN_RATE || rate_in > TR_AUDIO_MAX_RATE ||
        rate_out < TR_AUDIO_MIN_RATE || rate_out > TR_AUDIO_MAX_RATE) {
        TR_ERROR("resample: rates %d -> %d Hz outside [%d, %d]", rate_in, rate_out,
                 TR_AUDIO_MIN_RATE, TR_AUDIO_MAX_RATE);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (rate_in == rate_out) {
        if ((uint64_t)n_in > SIZE_MAX / sizeof(float)) return TRANSCRIBE_ERR_OOM;
        float *o = malloc(sizeof(float) * (size_t)n_in);
        if (!o) {
            TR_ERROR("resample: out of memory");
            return TRANSCRIBE_ERR_OOM;
        }
        memcpy(o, in, sizeof(float) * (size_t)n_in);
        *out = o;
        *n_out = n_in;
        return TRANSCRIBE_OK;
    }
    if (tr_resample_have_soxr()) return tr_resample_soxr(in, n_in, rate_in, rate_out, out, n_out);
    return tr_resample_builtin(in, n_in, rate_in, rate_out, out, n_out);
}
