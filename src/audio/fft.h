/* Real-input FFT used by the mel front ends. Any even size works: the
 * real transform of size n is computed from one complex transform of size
 * n/2 (mixed radix 4/2/3/5 and a generic odd-prime butterfly), so the
 * Whisper size 400 = 2·200 is exact, not zero-padded. Plans hold every
 * twiddle factor, computed once; executing a plan is thread-safe when each
 * thread passes its own scratch buffer. Double precision throughout. */
#ifndef TR_AUDIO_FFT_H
#define TR_AUDIO_FFT_H

#include <stddef.h>

typedef struct tr_fft tr_fft;

/* n must be even, 2 <= n <= 1<<20, with no prime factor of n/2 above
 * 1024. NULL on a bad size or OOM. */
tr_fft *tr_fft_create(int n);
void tr_fft_free(tr_fft *p); /* NULL ok */
int tr_fft_size(const tr_fft *p);
/* Doubles of scratch one tr_fft_real call needs. */
size_t tr_fft_scratch_len(const tr_fft *p);
/* in: n real samples. out: n/2+1 complex bins, interleaved re,im (n+2
 * doubles), X[k] = sum_j in[j]·exp(-2πi·jk/n). */
void tr_fft_real(const tr_fft *p, const double *in, double *out, double *scratch);

#endif
