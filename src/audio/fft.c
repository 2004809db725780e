/* Mixed-radix FFT (decimation in time, recursive, out of place). The real
 * transform of even size n packs even/odd samples into one complex
 * sequence of size m = n/2, transforms it and splits the result. */
#include "audio/fft.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double re, im;
} cpx;

#define TR_FFT_MAX_FACTORS 32
/* Largest prime factor accepted (generic butterflies are O(p^2)). */
#define TR_FFT_MAX_RADIX 1024

struct tr_fft {
    int n, m;
    int fac[2 * TR_FFT_MAX_FACTORS]; /* (radix p, remaining size after it) pairs */
    int maxp;
    cpx *tw;  /* tw[k] = exp(-2πi k/m), k < m */
    cpx *rtw; /* rtw[k] = exp(-2πi k/n), k <= m */
};

static inline cpx cmul(cpx a, cpx b) {
    cpx r = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    return r;
}

static void butterfly2(cpx *out, const cpx *tw, size_t fstride, int m) {
    for (int k = 0; k < m; k++) {
        cpx a = out[k], t = cmul(out[k + m], tw[k * fstride]);
        out[k].re = a.re + t.re;
        out[k].im = a.im + t.im;
        out[k + m].re = a.re - t.re;
        out[k + m].im = a.im - t.im;
    }
}

static void butterfly4(cpx *out, const cpx *tw, size_t fstride, int m) {
    for (int k = 0; k < m; k++) {
        cpx t0 = out[k];
        cpx t1 = cmul(out[k + m], tw[k * fstride]);
        cpx t2 = cmul(out[k + 2 * m], tw[2 * k * fstride]);
        cpx t3 = cmul(out[k + 3 * m], tw[3 * k * fstride]);
        cpx a0 = {t0.re + t2.re, t0.im + t2.im}, a1 = {t0.re - t2.re, t0.im - t2.im};
        cpx a2 = {t1.re + t3.re, t1.im + t3.im}, a3 = {t1.re - t3.re, t1.im - t3.im};
        out[k].re = a0.re + a2.re;
        out[k].im = a0.im + a2.im;
        out[k + 2 * m].re = a0.re - a2.re;
        out[k + 2 * m].im = a0.im - a2.im;
        /* forward transform: X1 = a1 - i·a3, X3 = a1 + i·a3 */
        out[k + m].re = a1.re + a3.im;
        out[k + m].im = a1.im - a3.re;
        out[k + 3 * m].re = a1.re - a3.im;
        out[k + 3 * m].im = a1.im + a3.re;
    }
}

static void butterfly3(cpx *out, const cpx *tw, size_t fstride, int m) {
    const double sn = 0.86602540378443864676; /* sin(2π/3) */
    for (int k = 0; k < m; k++) {
        cpx t0 = out[k];
        cpx t1 = cmul(out[k + m], tw[k * fstride]);
        cpx t2 = cmul(out[k + 2 * m], tw[2 * k * fstride]);
        cpx s = {t1.re + t2.re, t1.im + t2.im}, d = {sn * (t1.re - t2.re), sn * (t1.im - t2.im)};
        cpx p = {t0.re - 0.5 * s.re, t0.im - 0.5 * s.im};
        out[k].re = t0.re + s.re;
        out[k].im = t0.im + s.im;
        out[k + m].re = p.re + d.im; /* p - i·d */
        out[k + m].im = p.im - d.re;
        out[k + 2 * m].re = p.re - d.im; /* p + i·d */
        out[k + 2 * m].im = p.im + d.re;
    }
}

/* Radix 5 (Whisper's 400 = 2·4·2·5·5) via the symmetric pairs (1,4), (2,3). */
static void butterfly5(cpx *out, const cpx *tw, size_t fstride, int m) {
    const double c1 = 0.30901699437494742410, c2 = -0.80901699437494742410; /* cos 2π/5, 4π/5 */
    const double s1 = 0.95105651629515357212, s2 = 0.58778525229247312917;  /* sin 2π/5, 4π/5 */
    for (int k = 0; k < m; k++) {
        cpx t0 = out[k];
        cpx t1 = cmul(out[k + m], tw[k * fstride]);
        cpx t2 = cmul(out[k + 2 * m], tw[2 * k * fstride]);
        cpx t3 = cmul(out[k + 3 * m], tw[3 * k * fstride]);
        cpx t4 = cmul(out[k + 4 * m], tw[4 * k * fstride]);
        cpx a = {t1.re + t4.re, t1.im + t4.im}, b = {t1.re - t4.re, t1.im - t4.im};
        cpx c = {t2.re + t3.re, t2.im + t3.im}, d = {t2.re - t3.re, t2.im - t3.im};
        cpx P = {t0.re + c1 * a.re + c2 * c.re, t0.im + c1 * a.im + c2 * c.im};
        cpx Q = {t0.re + c2 * a.re + c1 * c.re, t0.im + c2 * a.im + c1 * c.im};
        cpx A = {s1 * b.re + s2 * d.re, s1 * b.im + s2 * d.im};
        cpx B = {s2 * b.re - s1 * d.re, s2 * b.im - s1 * d.im};
        out[k].re = t0.re + a.re + c.re;
        out[k].im = t0.im + a.im + c.im;
        out[k + m].re = P.re + A.im; /* P - i·A */
        out[k + m].im = P.im - A.re;
        out[k + 4 * m].re = P.re - A.im; /* P + i·A */
        out[k + 4 * m].im = P.im + A.re;
        out[k + 2 * m].re = Q.re + B.im; /* Q - i·B */
        out[k + 2 * m].im = Q.im - B.re;
        out[k + 3 * m].re = Q.re - B.im; /* Q + i·B */
        out[k + 3 * m].im = Q.im + B.re;
    }
}

/* Any radix p: a direct p-point DFT per output group (O(p^2)). */
static void butterfly_generic(cpx *out, const cpx *tw, size_t fstride, int p, int m, cpx *t) {
    cpx wp[TR_FFT_MAX_RADIX]; /* wp[r] = W_p^r = W_M^{r·m·fstride} */
    for (int r = 0; r < p; r++) wp[r] = tw[(size_t)r * (size_t)m * fstride];
    for (int k = 0; k < m; k++) {
        for (int q = 0; q < p; q++) t[q] = cmul(out[k + q * m], tw[(size_t)q * k * fstride]);
        for (int u = 0; u < p; u++) {
            double re = 0, im = 0;
            for (int q = 0, r = 0; q < p; q++) { /* r = q·u mod p */
                re += t[q].re * wp[r].re - t[q].im * wp[r].im;
                im += t[q].re * wp[r].im + t[q].im * wp[r].re;
                r += u;
                if (r >= p) r -= p;
            }
            out[k + u * m].re = re;
            out[k + u * m].im = im;
        }
    }
}

static void work(const tr_fft *P, cpx *out, const cpx *in, size_t fstride, const int *fac, cpx *t) {
    int p = fac[0], m = fac[1];
    if (m == 1) {
        for (int q = 0; q < p; q++) out[q] = in[(size_t)q * fstride];
    } else {
        for (int q = 0; q < p; q++)
            work(P, out + (size_t)q * m, in + (size_t)q * fstride, fstride * (size_t)p, fac + 2, t);
    }
    if (p == 2)
        butterfly2(out, P->tw, fstride, m);
    else if (p == 4)
        butterfly4(out, P->tw, fstride, m);
    else if (p == 3)
        butterfly3(out, P->tw, fstride, m);
    else if (p == 5)
        butterfly5(out, P->tw, fstride, m);
    else
        butterfly_generic(out, P->tw, fstride, p, m, t);
}

tr_fft *tr_fft_create(int n) {
    if (n < 2 || n > (1 << 20) || (n & 1)) return NULL;
    tr_fft *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n;
    p->m = n / 2;
    p->tw = malloc(sizeof(cpx) * (size_t)p->m);
    p->rtw = malloc(sizeof(cpx) * (size_t)(p->m + 1));
    if (!p->tw || !p->rtw) {
        tr_fft_free(p);
        return NULL;
    }
    for (int k = 0; k < p->m; k++) {
        double a = -2.0 * M_PI * (double)k / (double)p->m;
        p->tw[k].re = cos(a);
        p->tw[k].im = sin(a);
    }
    for (int k = 0; k <= p->m; k++) {
        double a = -2.0 * M_PI * (double)k / (double)n;
        p->rtw[k].re = cos(a);
        p->rtw[k].im = sin(a);
    }
    /* Factor m: radix 4 first (cheapest butterfly), then 2, then odd. */
    int rem = p->m, nf = 0, f = 4;
    p->maxp = 1;
    while (rem > 1) {
        while (rem % f) {
            if (f == 4)
                f = 2;
            else if (f == 2)
                f = 3;
            else
                f += 2;
            if ((long)f * f > rem) f = rem;
        }
        if (f > TR_FFT_MAX_RADIX) {
            tr_fft_free(p);
            return NULL;
        }
        rem /= f;
        p->fac[2 * nf] = f;
        p->fac[2 * nf + 1] = rem;
        if (f > p->maxp) p->maxp = f;
        nf++;
    }
    if (nf == 0) { /* m == 1 */
        p->fac[0] = 1;
        p->fac[1] = 1;
    }
    return p;
}

void tr_fft_free(tr_fft *p) {
    if (!p) return;
    free(p->tw);
    free(p->rtw);
    free(p);
}

int tr_fft_size(const tr_fft *p) {
    return p->n;
}

size_t tr_fft_scratch_len(const tr_fft *p) {
    return 2 * (2 * (size_t)p->m + (size_t)p->maxp);
}

void tr_fft_real(const tr_fft *p, const double *in, double *out, double *scratch) {
    int m = p->m;
    cpx *z = (cpx *)scratch, *Z = z + m, *t = Z + m;
    for (int j = 0; j < m; j++) {
        z[j].re = in[2 * j];
        z[j].im = in[2 * j + 1];
    }
    work(p, Z, z, 1, p->fac, t);
    for (int k = 0; k <= m; k++) {
        cpx a = Z[k == m ? 0 : k];
        cpx b = Z[k == 0 ? 0 : m - k];
        b.im = -b.im; /* conj(Z[m-k]) */
        /* even part E = (a+b)/2, odd part O = (a-b)/(2i) */
        double er = 0.5 * (a.re + b.re), ei = 0.5 * (a.im + b.im);
        double or_ = 0.5 * (a.im - b.im), oi = -0.5 * (a.re - b.re);
        cpx o = cmul((cpx){or_, oi}, p->rtw[k]);
        out[2 * k] = er + o.re;
        out[2 * k + 1] = ei + o.im;
    }
}
