/* GroupNorm (tensor/ops.h tr_group_norm): the channels are cut into
 * `groups` runs of c / groups consecutive channels; each group is
 * normalised with the mean and biased variance of all its values (every
 * position of every channel in it), then scaled and shifted per channel.
 *
 * The statistics are two passes in double (a group of Moonshine's conv stem
 * holds the whole d x T1 output, ~800 000 values, where a float sum drifts),
 * each group by one thread in a fixed order; the apply pass is element-wise
 * over rows. So the result does not depend on the thread count, and y == x
 * works (every statistic is taken before anything is written). */
#include <math.h>
#include <stdlib.h>

#include "tensor/ops.h"
#include "util/log.h"

typedef struct {
    const float *x;
    float *y;
    int n, c, groups;
    bool channel_major;
    const float *g, *b;
    float eps;
    float *mean, *inv; /* [groups] */
} gn_ctx;

/* Element (position t, channel ch). */
static inline long at(const gn_ctx *c, long t, long ch) {
    return c->channel_major ? ch * c->n + t : t * c->c + ch;
}

static void gn_stats(void *vctx, int ith, int nth) {
    const gn_ctx *c = vctx;
    const int cg = c->c / c->groups;
    long g0, g1;
    tr_split_range(c->groups, ith, nth, &g0, &g1);
    for (long k = g0; k < g1; k++) {
        const long c0 = k * cg, c1 = c0 + cg;
        double s = 0.0, ss = 0.0;
        for (long ch = c0; ch < c1; ch++)
            for (long t = 0; t < c->n; t++) s += c->x[at(c, t, ch)];
        const double count = (double)cg * (double)c->n, mean = s / count;
        for (long ch = c0; ch < c1; ch++)
            for (long t = 0; t < c->n; t++) {
                const double d = c->x[at(c, t, ch)] - mean;
                ss += d * d;
            }
        c->mean[k] = (float)mean;
        c->inv[k] = (float)(1.0 / sqrt(ss / count + (double)c->eps));
    }
}

/* Rows: channels (channel-major) or positions (time-major). */
static void gn_apply(void *vctx, int ith, int nth) {
    const gn_ctx *c = vctx;
    const int cg = c->c / c->groups;
    const long rows = c->channel_major ? c->c : c->n;
    long r0, r1;
    tr_split_range(rows, ith, nth, &r0, &r1);
    for (long r = r0; r < r1; r++) {
        if (c->channel_major) {
            const long k = r / cg;
            const float m = c->mean[k], s = c->inv[k] * (c->g ? c->g[r] : 1.0f),
                        sh = c->b ? c->b[r] : 0.0f;
            const float *x = c->x + r * c->n;
            float *y = c->y + r * c->n;
            for (long t = 0; t < c->n; t++) y[t] = (x[t] - m) * s + sh;
        } else {
            const float *x = c->x + r * c->c;
            float *y = c->y + r * c->c;
            for (long ch = 0; ch < c->c; ch++) {
                const long k = ch / cg;
                const float s = c->inv[k] * (c->g ? c->g[ch] : 1.0f), sh = c->b ? c->b[ch] : 0.0f;
                y[ch] = (x[ch] - c->mean[k]) * s + sh;
            }
        }
    }
}

bool tr_group_norm(tr_pool *pool, const float *x, float *y, int n, int c, int groups,
                   bool channel_major, const float *g, const float *b, float eps) {
    if (n <= 0 || c <= 0) return true;
    if (groups <= 0 || c % groups != 0) {
        TR_ERROR("group_norm: %d channels do not split into %d groups", c, groups);
        return false;
    }
    float *buf = malloc(2 * sizeof(float) * (size_t)groups);
    if (!buf) {
        TR_ERROR("group_norm: out of memory (%d groups)", groups);
        return false;
    }
    gn_ctx ctx = {x, y, n, c, groups, channel_major, g, b, eps, buf, buf + groups};
    const bool big = (long)n * c >= 16384;
    tr_pool_run(big && groups > 1 ? pool : NULL, gn_stats, &ctx);
    tr_pool_run(big ? pool : NULL, gn_apply, &ctx);
    free(buf);
    return true;
}
