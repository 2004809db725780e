/* The built-in resampler fed piece by piece (live input): each output
 * sample is computed as soon as every input under its filter has arrived,
 * with the same weights and summation order as the whole-buffer path, so
 * the output equals tr_resample_builtin on the whole input, bit for bit.
 * Only the inputs a later output still needs are kept (2K + a read). */
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "util/log.h"

transcribe_status tr_resampler_init(tr_resampler *r, int rate_in, int rate_out) {
    memset(r, 0, sizeof *r);
    if (rate_in < TR_AUDIO_MIN_RATE || rate_in > TR_AUDIO_MAX_RATE ||
        rate_out < TR_AUDIO_MIN_RATE || rate_out > TR_AUDIO_MAX_RATE) {
        TR_ERROR("resampler: rates %d -> %d Hz outside [%d, %d]", rate_in, rate_out,
                 TR_AUDIO_MIN_RATE, TR_AUDIO_MAX_RATE);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    r->rate_in = rate_in;
    r->rate_out = rate_out;
    if (rate_in != rate_out && !tr_sinc_plan_init(&r->pl, rate_in, rate_out)) {
        TR_ERROR("resampler: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    return TRANSCRIBE_OK;
}

void tr_resampler_free(tr_resampler *r) {
    tr_sinc_plan_free(&r->pl);
    free(r->hist);
    memset(r, 0, sizeof *r);
}

int64_t tr_resampler_max_out(const tr_resampler *r, int64_t n_in) {
    if (n_in < 0) return 0;
    if (r->rate_in == r->rate_out) return n_in;
    int64_t total = (r->n_in + n_in) * (int64_t)r->pl.L / (int64_t)r->pl.M + 2 - r->j;
    return total > 0 ? total : 0;
}

/* Outputs j < end, inputs past n_in read as 0. */
static int64_t emit(tr_resampler *r, int64_t end, float *out) {
    tr_sinc_plan *pl = &r->pl;
    int64_t m = 0;
    for (; r->j < end; r->j++) {
        int64_t pos = r->j * pl->M, i0 = pos / pl->L;
        const double *w = tr_sinc_row(pl, (long)(pos % pl->L));
        int64_t first = i0 - pl->K + 1;
        int k0 = first < 0 ? (int)-first : 0;
        int k1 = first + pl->taps > r->n_in ? (int)(r->n_in - first) : pl->taps;
        out[m++] =
            k1 > k0 ? tr_sinc_dot(w + k0, r->hist + (first + k0 - r->hist_start), k1 - k0) : 0.0f;
    }
    return m;
}

transcribe_status tr_resampler_feed(tr_resampler *r, const float *in, int64_t n_in, float *out,
                                    int64_t *n_out) {
    *n_out = 0;
    if (r->finished || n_in < 0 || (n_in > 0 && (!in || !out))) {
        TR_ERROR("resampler: %s", r->finished ? "fed after finish" : "bad arguments");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (n_in == 0) return TRANSCRIBE_OK;
    if (r->rate_in == r->rate_out) {
        memcpy(out, in, (size_t)n_in * sizeof *in);
        r->n_in += n_in;
        *n_out = n_in;
        return TRANSCRIBE_OK;
    }
    if (r->hist_n + n_in > r->hist_cap) {
        int64_t cap = r->hist_cap ? r->hist_cap : 4096;
        while (cap < r->hist_n + n_in) cap *= 2;
        float *h = realloc(r->hist, (size_t)cap * sizeof *h);
        if (!h) {
            TR_ERROR("resampler: out of memory");
            return TRANSCRIBE_ERR_OOM;
        }
        r->hist = h;
        r->hist_cap = cap;
    }
    memcpy(r->hist + r->hist_n, in, (size_t)n_in * sizeof *in);
    r->hist_n += n_in;
    r->n_in += n_in;
    /* output j is final once its last input, i0 + K, has arrived */
    int64_t last = r->n_in - 1 - r->pl.K; /* the largest i0 computable */
    /* j·M / L <= last  <=>  j·M < (last + 1)·L */
    int64_t end = last < 0 ? 0 : ((last + 1) * r->pl.L + r->pl.M - 1) / r->pl.M;
    if (end > r->j) *n_out = emit(r, end, out);
    /* drop the inputs no later output reads */
    int64_t keep = (r->j * r->pl.M) / r->pl.L - r->pl.K + 1;
    if (keep > r->hist_start) {
        int64_t drop = keep - r->hist_start;
        if (drop > r->hist_n) drop = r->hist_n;
        memmove(r->hist, r->hist + drop, (size_t)(r->hist_n - drop) * sizeof *r->hist);
        r->hist_n -= drop;
        r->hist_start += drop;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_resampler_finish(tr_resampler *r, float *out, int64_t *n_out) {
    *n_out = 0;
    if (r->finished) return TRANSCRIBE_OK;
    r->finished = true;
    if (r->rate_in == r->rate_out || r->n_in == 0) return TRANSCRIBE_OK;
    int64_t olen = tr_resample_out_len(r->n_in, r->rate_in, r->rate_out);
    if (olen < 0) {
        TR_ERROR("resampler: input too long");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (!out && olen > r->j) {
        TR_ERROR("resampler: out is NULL");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *n_out = emit(r, olen, out);
    return TRANSCRIBE_OK;
}
