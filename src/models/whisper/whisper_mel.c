/* Whisper log-mel (docs/formats/whisper.md §5.2). Short form pads to one 30 s
 * window. Long form is streamed so memory does not grow with the input:
 * pass 1 computes every frame chunk by chunk only to find the global
 * maximum g; windows are then computed on demand with the fixed g
 * (TR_NORM_GLOBAL) from slices of the reflect-padded signal framed without
 * further padding — the same values as slicing the whole-signal mel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/whisper/whisper.h"
#include "util/log.h"
#include "util/vec.h"

#define WH_CHUNK_FRAMES 3000

transcribe_status tr_wh_log_mel(const wh_model *m, tr_pool *pool, const float *pcm, int64_t n,
                                float **mel, int *n_frames) {
    transcribe_status st = tr_mel_whisper(&m->mel, pcm, n, pool, mel, n_frames);
    if (st != TRANSCRIBE_OK) return st;
    if (*n_frames <= 0) {
        free(*mel);
        *mel = NULL;
        TR_ERROR("whisper: the log-mel front end produced no frames");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

/* Sample i of the reflect-padded signal (pad = n_fft/2 each side). */
static float padded(const wh_mel_stream *ms, int64_t i) {
    int64_t pad = ms->m->mel.n_fft / 2, j = i - pad, n = ms->n;
    if (j < 0) j = -j;
    if (j >= n) j = 2 * (n - 1) - j;
    if (j < 0) j = 0; /* n >= pad + 1 is guaranteed by the caller */
    return ms->pcm[j];
}

/* Raw config for a slice: no padding, fixed maximum g (or none for pass 1). */
static transcribe_status slice_mel(wh_mel_stream *ms, int a, int N, double g, float **out) {
    const tr_mel_config *base = &ms->m->mel;
    const int hop = base->hop_length, nfft = base->n_fft;
    size_t len = (size_t)hop * (size_t)N + (size_t)nfft;
    float *nb = tr_grow(ms->buf, &ms->buf_cap, len, sizeof(float), 0);
    if (!nb) return TRANSCRIBE_ERR_OOM;
    ms->buf = nb;
    int64_t s0 = (int64_t)hop * a;
    for (size_t i = 0; i < len; i++) ms->buf[i] = padded(ms, s0 + (int64_t)i);
    tr_mel_config c = *base;
    c.pad_mode = TR_PAD_NONE;
    c.normalize = TR_NORM_GLOBAL;
    c.global_log_mel_max = (float)g;
    int nf = 0;
    transcribe_status st = tr_mel_compute(&c, ms->buf, (int64_t)len, ms->pool, out, &nf);
    if (st == TRANSCRIBE_OK && nf != N) {
        TR_ERROR("whisper: streamed mel slice gave %d frames, expected %d", nf, N);
        free(*out);
        *out = NULL;
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return st;
}

transcribe_status tr_wh_mel_stream_init(wh_mel_stream *ms, const wh_model *m, tr_pool *pool,
                                        const float *pcm, int64_t n) {
    memset(ms, 0, sizeof *ms);
    ms->m = m;
    ms->pool = pool;
    ms->pcm = pcm;
    ms->n = n;
    int64_t total = n / m->mel.hop_length;
    if (n < m->mel.n_fft / 2 + 1 || total < 1 || total > INT32_MAX / 2) {
        TR_ERROR("whisper: %lld samples cannot be streamed", (long long)n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    ms->total = (int)total;
    /* pass 1: with g = -inf the output is (L + 4) / 4, so L = 4·out − 4 */
    double g = -INFINITY;
    for (int a = 0; a < ms->total; a += WH_CHUNK_FRAMES) {
        int N = ms->total - a < WH_CHUNK_FRAMES ? ms->total - a : WH_CHUNK_FRAMES;
        float *o = NULL;
        transcribe_status st = slice_mel(ms, a, N, -INFINITY, &o);
        if (st != TRANSCRIBE_OK) return st;
        size_t cnt = (size_t)N * (size_t)m->mel.n_mels;
        for (size_t i = 0; i < cnt; i++) {
            double L = 4.0 * (double)o[i] - 4.0;
            if (L > g) g = L;
        }
        free(o);
    }
    ms->g = g;
    return TRANSCRIBE_OK;
}

transcribe_status tr_wh_mel_stream_frames(wh_mel_stream *ms, int a, int N, float *out, int ld) {
    if (a < 0 || N <= 0 || a + N > ms->total || N > ld) return TRANSCRIBE_ERR_INVALID_ARG;
    float *o = NULL;
    transcribe_status st = slice_mel(ms, a, N, ms->g, &o);
    if (st != TRANSCRIBE_OK) return st;
    for (int c = 0; c < ms->m->mel.n_mels; c++)
        memcpy(out + (size_t)c * ld, o + (size_t)c * N, (size_t)N * sizeof(float));
    free(o);
    return TRANSCRIBE_OK;
}

void tr_wh_mel_stream_free(wh_mel_stream *ms) {
    free(ms->buf);
    memset(ms, 0, sizeof *ms);
}
