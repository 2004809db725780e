/* tr_attention against a naive double-precision softmax(QK^T * scale + bias)V
 * for decode rows, tiles, GQA, causal offsets (also negative), kv_valid,
 * pos_bias, odd head sizes and padded strides, the register-block tails
 * and the repacked K/V of the tile path; every SIMD family; and
 * bit-identical results for 1, 2 and 3 threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/cpu.h"
#include "tensor/dtype.h"
#include "tensor/ops.h"
#include "tensor/pool.h"
#include "test_rng.h"
#include "test_util.h"

typedef struct {
    int n_q, n_kv, n_head, n_head_kv, d;
    bool causal;
    int off, kv_valid;
    bool bias;
    int pad; /* extra floats per row in q/kv/out strides */
} attn_case;

static void naive(const tr_attn_args *a, double *out) {
    const int kv_end = a->kv_valid > 0 && a->kv_valid < a->n_kv ? a->kv_valid : a->n_kv;
    double *s = malloc(sizeof(double) * (size_t)(a->n_kv + 1));
    for (int h = 0; h < a->n_head; h++) {
        const int hk = h / (a->n_head / a->n_head_kv);
        for (int i = 0; i < a->n_q; i++) {
            const float *q = a->q + (long)i * a->q_stride + h * a->head_dim;
            double m = -INFINITY, sum = 0;
            int end = kv_end;
            if (a->causal && i + a->causal_offset + 1 < end) end = i + a->causal_offset + 1;
            for (int j = 0; j < end; j++) {
                const float *k = a->k + (long)j * a->kv_stride + hk * a->head_dim;
                double dot = 0;
                for (int dd = 0; dd < a->head_dim; dd++) dot += (double)q[dd] * k[dd];
                s[j] = dot * a->scale;
                if (a->pos_bias) s[j] += a->pos_bias[((long)h * a->n_q + i) * a->n_kv + j];
                if (s[j] > m) m = s[j];
            }
            for (int j = 0; j < end; j++) sum += s[j] = exp(s[j] - m);
            double *o = out + ((long)i * a->n_head + h) * a->head_dim;
            for (int dd = 0; dd < a->head_dim; dd++) {
                double acc = 0;
                for (int j = 0; j < end; j++)
                    acc += s[j] * a->v[(long)j * a->kv_stride + hk * a->head_dim + dd];
                o[dd] = end > 0 ? acc / sum : 0.0;
            }
        }
    }
    free(s);
}

/* The same K/V laid out head-major (kv_stride = head_dim + pad, heads
 * kv_head_stride apart, a causal LM cache's layout) give the same bits on
 * every path: the whole call (F32 and F16, tile and row, packed or not) and
 * the per-KV-head share. a holds the interleaved call; k/v hold the F16
 * values of k16/v16. */
static void check_head_major(const attn_case *c, const tr_attn_args *a, const float *k,
                             const float *v, const uint16_t *k16, const uint16_t *v16,
                             tr_pool *pools[3], float *out[3]) {
    const int d = c->d, rs = d + c->pad;
    const long hs = (long)c->n_kv * rs + 3, n = hs * c->n_head_kv,
               out_n = (long)c->n_q * a->out_stride;
    float *kh = calloc((size_t)n, sizeof(float)), *vh = calloc((size_t)n, sizeof(float));
    uint16_t *kh16 = calloc((size_t)n, sizeof(uint16_t)),
             *vh16 = calloc((size_t)n, sizeof(uint16_t));
    for (int g = 0; g < c->n_head_kv; g++)
        for (int j = 0; j < c->n_kv; j++)
            for (int e = 0; e < d; e++) {
                const long src = (long)j * a->kv_stride + (long)g * d + e,
                           dst = g * hs + (long)j * rs + e;
                kh[dst] = k[src], vh[dst] = v[src], kh16[dst] = k16[src], vh16[dst] = v16[src];
            }
    tr_attn_args h = *a;
    h.k = kh, h.v = vh, h.kv_stride = rs, h.kv_head_stride = hs;
    tr_cpu_level levels[3];
    const int n_levels = tr_cpu_levels(levels);
    for (int isa = 0; isa < n_levels; isa++) {
        CHECK(tr_cpu_force(levels[isa]));
        tr_attn_args i = *a;
        i.out = out[0];
        tr_attention(pools[1], &i);
        h.out = out[1];
        tr_attention(pools[isa % 3], &h);
        CHECK_MSG(memcmp(out[0], out[1], sizeof(float) * (size_t)out_n) == 0,
                  "head-major K/V differ (%s, n_q %d n_kv %d d %d)", tr_cpu_level_name(levels[isa]),
                  c->n_q, c->n_kv, d);
        h.out = out[2];
        tr_attention_f16kv(pools[1], &h, kh16, vh16);
        CHECK_MSG(memcmp(out[0], out[2], sizeof(float) * (size_t)out_n) == 0,
                  "head-major F16 K/V differ (%s, n_q %d d %d)", tr_cpu_level_name(levels[isa]),
                  c->n_q, d);
        if (c->n_q <= 4 && !c->bias) {
            float *scratch = malloc(sizeof(float) * (size_t)tr_attention_kv_head_floats(d));
            h.out = out[2];
            for (int hk = 0; hk < c->n_head_kv; hk++)
                tr_attention_kv_head(&h, kh16, vh16, hk, scratch);
            CHECK_MSG(memcmp(out[0], out[2], sizeof(float) * (size_t)out_n) == 0,
                      "head-major kv-head share differs (%s, n_q %d)",
                      tr_cpu_level_name(levels[isa]), c->n_q);
            free(scratch);
        }
    }
    /* a head stride shorter than a head is refused */
    h.kv_head_stride = d > 1 ? d - 1 : -1;
    h.out = out[2];
    tr_attention(pools[1], &h);
    CHECK(tr_pool_take_failures(pools[1]) == TR_POOL_FAIL_INVALID);
    free(kh), free(vh), free(kh16), free(vh16);
}

static void run_case(const attn_case *c, tr_pool *pools[3]) {
    const int qs = c->n_head * c->d + c->pad, ks = c->n_head_kv * c->d + c->pad;
    const int os = c->n_head * c->d + c->pad;
    float *q = rnd_vec((long)c->n_q * qs, 1.0f);
    float *k = rnd_vec((long)c->n_kv * ks + 1, 1.0f);
    float *v = rnd_vec((long)c->n_kv * ks + 1, 1.0f);
    float *pb = c->bias ? rnd_vec((long)c->n_head * c->n_q * c->n_kv, 2.0f) : NULL;
    if (pb) /* a fully masked stretch through the bias as well */
        for (int j = 0; j < c->n_kv / 3; j++) pb[j] = -INFINITY;
    const long out_n = (long)c->n_q * os;
    float *out[3];
    for (int t = 0; t < 3; t++) {
        out[t] = malloc(sizeof(float) * (size_t)(out_n + 1));
        for (long i = 0; i < out_n; i++) out[t][i] = 12345.0f; /* padding must survive */
    }
    double *ref = malloc(sizeof(double) * (size_t)((long)c->n_q * c->n_head * c->d + 1));
    tr_attn_args a = {.q = q,
                      .q_stride = qs,
                      .k = k,
                      .v = v,
                      .kv_stride = ks,
                      .out = out[0],
                      .out_stride = os,
                      .n_q = c->n_q,
                      .n_kv = c->n_kv,
                      .kv_valid = c->kv_valid ? c->kv_valid : c->n_kv,
                      .n_head = c->n_head,
                      .n_head_kv = c->n_head_kv,
                      .head_dim = c->d,
                      .scale = 1.0f / sqrtf((float)c->d),
                      .causal = c->causal,
                      .causal_offset = c->off,
                      .pos_bias = pb};
    naive(&a, ref);
    tr_cpu_level levels[3];
    const int n_levels = tr_cpu_levels(levels); /* every level this CPU runs */
    for (int isa = 0; isa < n_levels; isa++) {
        CHECK(tr_cpu_force(levels[isa]));
        for (int t = 0; t < 3; t++) {
            a.out = out[t];
            tr_attention(pools[t], &a);
        }
        double worst = 0;
        int pad_ok = 1;
        for (int i = 0; i < c->n_q; i++) {
            for (int e = 0; e < c->n_head * c->d; e++) {
                double r = ref[(long)i * c->n_head * c->d + e];
                /* written out, not fmax: GCC 12 for aarch64 crashes vectorising
                 * that reduction at -O3; a NaN now fails the check */
                double diff = fabs(out[0][(long)i * os + e] - r);
                if (!(diff <= worst)) worst = diff;
            }
            for (int e = c->n_head * c->d; e < os; e++)
                pad_ok &= out[0][(long)i * os + e] == 12345.0f;
        }
        CHECK_MSG(worst < 3e-6, "attention %s n_q %d n_kv %d h %d/%d d %d causal %d off %d: err %g",
                  tr_cpu_level_name(levels[isa]), c->n_q, c->n_kv, c->n_head, c->n_head_kv, c->d,
                  c->causal, c->off, worst);
        CHECK(pad_ok);
        CHECK_MSG(memcmp(out[0], out[1], sizeof(float) * (size_t)out_n) == 0 &&
                      memcmp(out[0], out[2], sizeof(float) * (size_t)out_n) == 0,
                  "thread count changes bits (n_q %d d %d)", c->n_q, c->d);
        /* the K/V copy in the caller's memory: the same bits */
        const size_t np = tr_attention_pack_floats(&a);
        if (np) {
            tr_attn_args b = a;
            b.pack = aligned_alloc(64, (np * sizeof(float) + 63) / 64 * 64);
            b.pack_floats = np;
            b.out = out[1];
            tr_attention(pools[1], &b);
            CHECK_MSG(memcmp(out[0], out[1], sizeof(float) * (size_t)out_n) == 0,
                      "caller's K/V copy changes bits (n_q %d d %d)", c->n_q, c->d);
            free(b.pack);
        }
    }
    /* F16 KV cache: identical bits to F32 K/V holding the same rounded values */
    const long kv_n = (long)c->n_kv * ks;
    uint16_t *k16 = malloc(sizeof(uint16_t) * (size_t)(kv_n + 1));
    uint16_t *v16 = malloc(sizeof(uint16_t) * (size_t)(kv_n + 1));
    for (long i = 0; i < kv_n; i++) {
        k16[i] = tr_f32_to_f16(k[i]), v16[i] = tr_f32_to_f16(v[i]);
        k[i] = tr_f16_to_f32(k16[i]), v[i] = tr_f16_to_f32(v16[i]);
    }
    for (int isa = 0; isa < n_levels; isa++) {
        CHECK(tr_cpu_force(levels[isa]));
        a.out = out[0];
        tr_attention(pools[1], &a);
        a.out = out[1];
        tr_attention_f16kv(pools[isa % 3], &a, k16, v16);
        CHECK_MSG(memcmp(out[0], out[1], sizeof(float) * (size_t)out_n) == 0,
                  "f16 kv differs (%s, n_q %d d %d)", tr_cpu_level_name(levels[isa]), c->n_q, c->d);
    }
    if (c->n_head_kv > 0 && c->n_kv > 0) check_head_major(c, &a, k, v, k16, v16, pools, out);
    /* a caller-threaded share per KV head (tr_attention_kv_head) gives the
     * same bits as the whole call, on the row path */
    if (c->n_q <= 4 && c->n_head_kv > 0 && !c->bias) {
        const int G = c->n_head / c->n_head_kv;
        float *scratch = malloc(sizeof(float) * (size_t)tr_attention_kv_head_floats(c->d));
        for (int isa = 0; isa < n_levels; isa++) {
            CHECK(tr_cpu_force(levels[isa]));
            a.out = out[0];
            tr_attention_f16kv(pools[1], &a, k16, v16);
            a.out = out[1];
            for (long i = 0; i < out_n; i++) out[1][i] = 12345.0f;
            for (int hk = 0; hk < c->n_head_kv; hk++)
                tr_attention_kv_head(&a, k16, v16, hk, scratch);
            CHECK_MSG(memcmp(out[0], out[1], sizeof(float) * (size_t)out_n) == 0,
                      "kv-head share differs (%s, n_q %d h %d/%d)", tr_cpu_level_name(levels[isa]),
                      c->n_q, c->n_head, c->n_head_kv);
            a.out = out[2];
            for (int hk = 0; hk < c->n_head_kv; hk++)
                tr_attention_kv_head(&a, NULL, NULL, hk, scratch);
            CHECK_MSG(memcmp(out[0], out[2], sizeof(float) * (size_t)out_n) == 0,
                      "kv-head share on F32 K/V differs (%s, group %d)",
                      tr_cpu_level_name(levels[isa]), G);
        }
        free(scratch);
    }
    free(k16), free(v16);
    tr_cpu_unforce();
    for (int t = 0; t < 3; t++) free(out[t]);
    free(q), free(k), free(v), free(pb), free(ref);
}

int main(void) {
    tr_pool *pools[3] = {NULL, tr_pool_create(2), tr_pool_create(3)};
    const attn_case cases[] = {
        /* decoder step against a self-attention KV cache */
        {1, 448, 4, 4, 64, true, 447, 0, false, 0},
        /* decoder step cross-attention, GQA */
        {1, 300, 6, 2, 64, false, 0, 0, false, 0},
        /* row-path head groups: Qwen3-ASR's step (16 heads on 8 KV heads),
         * a group at the limit (8) and one past it (12: one head a unit) */
        {1, 190, 16, 8, 128, true, 189, 0, false, 0},
        {3, 70, 8, 1, 32, true, 67, 0, true, 2},
        {2, 90, 12, 1, 16, false, 0, 80, false, 0},
        /* odd groups (a head left after the pairs the F16 path shares V
         * vectors over), head dims past and short of four vectors */
        {1, 150, 6, 2, 40, true, 149, 0, false, 0},
        {2, 70, 3, 1, 24, true, 68, 0, false, 1},
        /* Moonshine's head dims (not multiples of a vector): base's
         * cross-attention over 457 frames (52), tiny's cache (36); F16
         * K/V read in place with scalar tails */
        {1, 457, 8, 8, 52, false, 0, 0, false, 0},
        {1, 60, 8, 8, 36, true, 59, 0, false, 0},
        /* a few prompt rows on the row path, causal, kv_valid, bias */
        {5, 40, 2, 1, 48, true, 35, 38, true, 3},
        /* encoder-style tiles, several blocks, tails in both directions */
        {150, 150, 2, 2, 64, false, 0, 0, false, 0},
        /* causal GQA tiles with offset */
        {70, 130, 4, 2, 36, true, 60, 0, false, 0},
        /* relative-position bias with kv_valid, head_dim not a multiple of 16 */
        {65, 65, 2, 2, 80, false, 0, 50, true, 5},
        /* negative offset: the first rows see no key at all -> zeros */
        {9, 20, 2, 2, 5, true, -3, 0, false, 1},
        {3, 20, 2, 2, 5, true, -2, 0, false, 0},
        /* big head, padded strides */
        {80, 70, 1, 1, 128, true, 0, 0, true, 7},
        /* register-block tails (AVX2 blocks 6 rows x 2 vectors): odd query
         * count, key blocks of 64 / 64 / 5, head dims of 3 and 5 vectors */
        {61, 133, 2, 2, 64, false, 0, 0, false, 0},
        {127, 199, 3, 3, 24, true, 72, 190, true, 2},
        {33, 77, 2, 1, 40, false, 0, 0, false, 1},
        /* enough K/V for the head-major repacking to run on the pool */
        {200, 600, 2, 2, 64, false, 0, 0, true, 0},
        {260, 300, 2, 1, 40, true, 40, 290, false, 3},
        /* no keys */
        {10, 0, 2, 2, 16, false, 0, 0, false, 0},
        {1, 0, 2, 2, 16, false, 0, 0, false, 0},
        /* one key, one head dim */
        {8, 1, 3, 3, 1, false, 0, 0, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], pools);
    /* n_q == 0 is a no-op */
    tr_attn_args empty = {.n_q = 0, .n_head = 1, .n_head_kv = 1, .head_dim = 4};
    tr_attention(pools[1], &empty);
    tr_pool_free(pools[1]);
    tr_pool_free(pools[2]);
    return TEST_DONE();
}
