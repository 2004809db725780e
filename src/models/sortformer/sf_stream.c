/* The streaming state of docs/formats/sortformer.md §6: operating points
 * (docs/formats/sortformer.md §6.1), the per-chunk update of the FIFO and speaker cache with the
 * silence profile (docs/formats/sortformer.md §6.3), and the speaker-cache compression
 * (docs/formats/sortformer.md §6.4). Pure arithmetic on float32 arrays, in the order the spec
 * gives, so the frames a compression keeps (and therefore the speaker slots) match upstream. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "models/sortformer/sortformer.h"
#include "util/log.h"

bool tr_sf_stream_cfg(const sf_model *m, int preset, sf_stream_cfg *out) {
    /* docs/formats/sortformer.md §6.1: chunk, rc, fifo, update, cache; the left context is always 1
     */
    static const int k_presets[4][5] = {
        {0, 1, 0, 0, 0}, /* DEFAULT: the file's values */
        {340, 40, 40, 300, 188},
        {124, 1, 124, 124, 188},
        {6, 7, 188, 144, 188},
    };
    if (preset < 0 || preset > 3) return false;
    const int *p = k_presets[preset];
    out->lc = 1;
    out->rc = p[1];
    if (preset == 0) {
        out->chunk_len = m->hp.chunk_len;
        out->fifo_len = m->hp.fifo_len;
        out->update_period = m->hp.update_period;
        out->spkcache_len = m->hp.spkcache_len;
    } else {
        out->chunk_len = p[0];
        out->fifo_len = p[2];
        out->update_period = p[3];
        out->spkcache_len = p[4];
    }
    return true;
}

static bool grow(float **p, int *cap, int need, int width) {
    if (need <= *cap) return true;
    int n = *cap > 0 ? *cap : need; /* exact at first (tr_sf_state_reserve), then doubling */
    while (n < need) n = n > INT32_MAX / 2 ? need : 2 * n;
    float *q = realloc(*p, sizeof(float) * (size_t)n * (size_t)width);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

bool tr_sf_state_init(sf_state *st, int d, int S) {
    memset(st, 0, sizeof *st);
    st->d = d;
    st->S = S;
    st->msil = calloc((size_t)d, sizeof(float));
    return st->msil != NULL;
}

void tr_sf_state_reset(sf_state *st) {
    st->sc_n = st->ff_n = st->out_n = st->n_sil = 0;
    st->sc_p_init = false;
    if (st->msil) memset(st->msil, 0, sizeof(float) * (size_t)st->d);
}

bool tr_sf_state_reserve(sf_state *st, int sc_rows, int ff_rows) {
    return grow(&st->sc, &st->sc_cap, sc_rows, st->d) &&
           grow(&st->sc_p, &st->scp_cap, sc_rows, st->S) &&
           grow(&st->ff, &st->ff_cap, ff_rows, st->d) &&
           grow(&st->ff_p, &st->ffp_cap, ff_rows, st->S);
}

void tr_sf_state_free(sf_state *st) {
    free(st->sc);
    free(st->sc_p);
    free(st->ff);
    free(st->ff_p);
    free(st->msil);
    free(st->out_p);
    memset(st, 0, sizeof *st);
}

/* docs/formats/sortformer.md §6.3 silence profile over the popped rows pe [n][d] with predictions
 * pp [n][S]. */
static void silence_profile(sf_state *st, const float *pe, const float *pp, int n) {
    const int d = st->d, S = st->S;
    int m = 0;
    for (int i = 0; i < n; i++) {
        float sum = 0.0f;
        for (int s = 0; s < S; s++) sum += pp[(size_t)i * S + s];
        if (sum < SF_SIL_THRESHOLD) m++;
    }
    if (m == 0) return;
    const int tot = st->n_sil + m;
    const float den = (float)(tot > 1 ? tot : 1);
    for (int c = 0; c < d; c++) {
        float acc = 0.0f;
        for (int i = 0; i < n; i++) {
            float sum = 0.0f;
            for (int s = 0; s < S; s++) sum += pp[(size_t)i * S + s];
            if (sum < SF_SIL_THRESHOLD) acc += pe[(size_t)i * d + c];
        }
        st->msil[c] = (st->msil[c] * (float)st->n_sil + acc) / den;
    }
    st->n_sil = tot;
}

bool tr_sf_state_update(sf_state *st, const sf_stream_cfg *cfg, const float *E, int T_diar,
                        const float *pr, int lcf, int rcf) {
    const int d = st->d, S = st->S, Sn = st->sc_n, F = st->ff_n;
    int C = T_diar - lcf - rcf;
    if (C < 0) C = 0;
    const size_t rowd = sizeof(float) * (size_t)d, rows = sizeof(float) * (size_t)S;
    /* the FIFO's predictions refreshed from this chunk, then its frames appended */
    if (!grow(&st->ff, &st->ff_cap, F + C, d) || !grow(&st->ff_p, &st->ffp_cap, F + C, S))
        return false;
    memcpy(st->ff_p, pr + (size_t)Sn * S, rows * (size_t)F);
    const float *c_p = pr + (size_t)(Sn + F + lcf) * S;
    memmove(st->ff + (size_t)F * d, E + (size_t)lcf * d, rowd * (size_t)C); /* E may be ff's */
    memcpy(st->ff_p + (size_t)F * S, c_p, rows * (size_t)C);
    st->ff_n = F + C;
    if (!grow(&st->out_p, &st->out_cap, st->out_n + C, S)) return false;
    memcpy(st->out_p + (size_t)st->out_n * S, c_p, rows * (size_t)C);
    st->out_n += C;
    if (F + C <= cfg->fifo_len) return true;
    int pop = cfg->update_period;
    if (C - cfg->fifo_len + F > pop) pop = C - cfg->fifo_len + F;
    if (pop > F + C) pop = F + C;
    silence_profile(st, st->ff, st->ff_p, pop);
    if (!grow(&st->sc, &st->sc_cap, Sn + pop, d) || !grow(&st->sc_p, &st->scp_cap, Sn + pop, S))
        return false;
    memcpy(st->sc + (size_t)Sn * d, st->ff, rowd * (size_t)pop);
    if (st->sc_p_init) memcpy(st->sc_p + (size_t)Sn * S, st->ff_p, rows * (size_t)pop);
    const int new_sn = Sn + pop;
    if (new_sn > cfg->spkcache_len && !st->sc_p_init) {
        memcpy(st->sc_p, pr, rows * (size_t)Sn);
        memcpy(st->sc_p + (size_t)Sn * S, st->ff_p, rows * (size_t)pop);
        st->sc_p_init = true;
    }
    const int rest = F + C - pop;
    memmove(st->ff, st->ff + (size_t)pop * d, rowd * (size_t)rest);
    memmove(st->ff_p, st->ff_p + (size_t)pop * S, rows * (size_t)rest);
    st->ff_n = rest;
    st->sc_n = new_sn;
    if (new_sn > cfg->spkcache_len) return tr_sf_compress(st, cfg->spkcache_len);
    return true;
}

/* A candidate of the flat top-k: value desc, then flat index asc (PyTorch
 * CPU topk's order, docs/formats/sortformer.md §6.4). */
typedef struct cand {
    float v;
    int idx;
} cand;

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->v > y->v) return -1;
    if (x->v < y->v) return 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int int_cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* boost(k, a): the k highest scores of each speaker column (value desc, row
 * asc) get score -= a·ln(0.5). */
static void boost(float *score, int N, int S, int k, float a, cand *tmp) {
    const float delta = a * logf(0.5f);
    for (int s = 0; s < S; s++) {
        for (int i = 0; i < N; i++) tmp[i] = (cand){score[(size_t)i * S + s], i};
        qsort(tmp, (size_t)N, sizeof *tmp, cand_cmp);
        for (int j = 0; j < k && j < N; j++) score[(size_t)tmp[j].idx * S + s] -= delta;
    }
}

bool tr_sf_compress(sf_state *st, int L) {
    const int N = st->sc_n, S = st->S, d = st->d, sil = SF_SIL_FRAMES_PER_SPK;
    if (N <= L) return true;
    const int per = L / S - sil;
    const int strong = (int)floorf((float)per * SF_STRONG_BOOST_RATE);
    const int weak = (int)floorf((float)per * SF_WEAK_BOOST_RATE);
    const int min_pos = (int)floorf((float)per * SF_MIN_POS_RATE);
    const int n_f = N + sil, n_c = n_f * S;
    float *score = malloc(sizeof(float) * (size_t)N * S);
    cand *c = malloc(sizeof(cand) * (size_t)(n_c > N ? n_c : N));
    int *pick = malloc(sizeof(int) * (size_t)L);
    const bool lent = st->lend && st->lend_floats >= (size_t)L * d;
    float *nsc = lent ? st->lend : malloc(sizeof(float) * (size_t)L * d),
          *nsp = malloc(sizeof(float) * (size_t)L * S);
    bool ok = score && c && pick && nsc && nsp;
    if (ok) {
        const float th = SF_PRED_SCORE_THRESH, ln_half = logf(0.5f);
        for (int i = 0; i < N; i++) {
            const float *p = st->sc_p + (size_t)i * S;
            float sum1 = 0.0f;
            for (int s = 0; s < S; s++) sum1 += logf(fmaxf(1.0f - p[s], th));
            for (int s = 0; s < S; s++) {
                float v = logf(fmaxf(p[s], th)) - logf(fmaxf(1.0f - p[s], th));
                v = v + sum1;
                v = v - ln_half;
                score[(size_t)i * S + s] = p[s] > 0.5f ? v : -INFINITY;
            }
        }
        for (int s = 0; s < S; s++) {
            int npos = 0;
            for (int i = 0; i < N; i++) npos += score[(size_t)i * S + s] > 0.0f;
            if (npos < min_pos) continue;
            for (int i = 0; i < N; i++) {
                float *v = &score[(size_t)i * S + s];
                if (st->sc_p[(size_t)i * S + s] > 0.5f && *v <= 0.0f) *v = -INFINITY;
            }
        }
        for (int i = L; i < N; i++)
            for (int s = 0; s < S; s++) score[(size_t)i * S + s] += SF_BOOST_LATEST;
        boost(score, N, S, strong, 2.0f, c);
        boost(score, N, S, weak, 1.0f, c);
        /* flat speaker-major candidates with sil rows of +inf per speaker */
        for (int s = 0; s < S; s++)
            for (int i = 0; i < n_f; i++)
                c[s * n_f + i] = (cand){i < N ? score[(size_t)i * S + s] : INFINITY, s * n_f + i};
        qsort(c, (size_t)n_c, sizeof *c, cand_cmp);
        for (int j = 0; j < L; j++)
            pick[j] = j < n_c && c[j].v != -INFINITY ? c[j].idx : SF_MAX_INDEX;
        qsort(pick, (size_t)L, sizeof *pick, int_cmp);
        for (int j = 0; j < L; j++) {
            const int frame = pick[j] % n_f;
            const bool off = pick[j] == SF_MAX_INDEX || frame >= N;
            memcpy(nsc + (size_t)j * d, off ? st->msil : st->sc + (size_t)frame * d,
                   sizeof(float) * (size_t)d);
            for (int s = 0; s < S; s++)
                nsp[(size_t)j * S + s] = off ? 0.0f : st->sc_p[(size_t)frame * S + s];
        }
        memcpy(st->sc, nsc, sizeof(float) * (size_t)L * d);
        memcpy(st->sc_p, nsp, sizeof(float) * (size_t)L * S);
        st->sc_n = L;
    }
    free(score);
    free(c);
    free(pick);
    if (!lent) free(nsc);
    free(nsp);
    if (!ok) TR_ERROR("sortformer: out of memory compressing the speaker cache");
    return ok;
}
