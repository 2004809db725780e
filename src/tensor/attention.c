/* tr_attention: validates the arguments, picks the tile or row kernel and
 * spreads (head, query block) work units over the pool. Threads claim units
 * in order from an atomic counter, so a thread the OS deschedules (shared
 * cores) does not leave the others waiting at the barrier with its fixed
 * share, and causal masks' uneven units balance too; every unit's result
 * depends only on its own inputs, so any thread count gives identical bits. */
#include "tensor/ops_simd.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* Below this many query rows, per-row dot products beat packing key tiles. */
#define ATTN_TILE_MIN_Q 8
/* Query rows per work unit on the row path. */
#define ATTN_ROWS_PER_UNIT 4
/* K/V is repacked head-major when more than this many query tiles read it
 * and it holds at least this many keys. */
#define PACK_MIN_TILES 3
#define PACK_MIN_KEYS  256

/* K and V rows copied head-major into kp/vp (see tr_attn_job). Read in
 * place, a head's rows lie kv_stride floats apart: each query tile re-reads
 * the whole head (64 query rows per pass over all keys) in 256-byte pieces
 * scattered over the whole K/V, which the prefetchers do not follow (the V
 * copy of the tile kernel took a fifth of Whisper-base's attention time
 * waiting on those loads). Packed once per call, every pass is a
 * sequential stream. */
typedef struct {
    const tr_attn_args *a;
    float *kp, *vp;
    long rows, dp;
} pack_ctx;

static void pack_worker(void *vctx, int ith, int nth) {
    const pack_ctx *c = vctx;
    const tr_attn_args *a = c->a;
    const int d = a->head_dim;
    long b, e;
    tr_split_range((long)a->n_head_kv * c->rows, ith, nth, &b, &e);
    for (long u = b; u < e; u++) {
        const long hk = u / c->rows, j = u % c->rows;
        const long src = j * a->kv_stride + tr_attn_head_off(a, (int)hk);
        float *kd = c->kp + u * c->dp, *vd = c->vp + u * c->dp;
        memcpy(kd, a->k + src, sizeof(float) * (size_t)d);
        memcpy(vd, a->v + src, sizeof(float) * (size_t)d);
        for (long dd = d; dd < c->dp; dd++) kd[dd] = vd[dd] = 0.0f;
    }
}

typedef void (*attn_fn)(const tr_attn_job *job, int h, int q0, int q1, float *scratch);

typedef struct {
    const tr_attn_job *job;
    attn_fn fn;
    int rows_per_unit, n_qb, heads;
    long scratch_floats;
    float *scratch;
    atomic_long next; /* next unclaimed unit */
} attn_ctx;

static void attn_worker(void *vctx, int ith, int nth) {
    attn_ctx *c = vctx;
    const tr_attn_args *a = c->job->a;
    float *scratch = c->scratch + (long)ith * c->scratch_floats;
    const long n_units = (long)(a->n_head / c->heads) * c->n_qb;
    (void)nth;
    for (;;) {
        const long u = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
        if (u >= n_units) break;
        int h = (int)(u / c->n_qb) * c->heads, qb = (int)(u % c->n_qb);
        int q0 = qb * c->rows_per_unit;
        int q1 = q0 + c->rows_per_unit < a->n_q ? q0 + c->rows_per_unit : a->n_q;
        c->fn(c->job, h, q0, q1, scratch);
    }
}

/* Floats of the packed K/V copy (0: none): worth it when each head's K/V
 * is re-read by several query tiles; for a few tiles over a short K/V
 * (Parakeet on short audio: 3 tiles, 138 keys) the copy costs more than
 * the strided reads. */
static size_t pack_floats(const tr_attn_args *a, bool f16) {
    if (f16 || a->n_q < ATTN_TILE_MIN_Q || a->n_q <= PACK_MIN_TILES * TR_ATTN_BQ ||
        a->n_kv < PACK_MIN_KEYS || a->head_dim <= 0)
        return 0;
    const long rows = (a->kv_valid > 0 && a->kv_valid < a->n_kv) ? a->kv_valid : a->n_kv;
    const int n_kv_heads = a->n_head_kv > 0 ? a->n_head_kv : a->n_head;
    if (rows <= 0 || n_kv_heads <= 0) return 0;
    const size_t n = (size_t)n_kv_heads * (size_t)rows * (size_t)tr_attn_dpad(a->head_dim);
    return 2 * ((n + 15) / 16 * 16);
}

size_t tr_attention_pack_floats(const tr_attn_args *a) {
    return a ? pack_floats(a, false) : 0;
}

static void attention(tr_pool *pool, const tr_attn_args *in, const uint16_t *k16,
                      const uint16_t *v16) {
    if (!in || in->n_q <= 0 || in->n_head <= 0 || in->head_dim <= 0) return;
    tr_attn_args a = *in;
    if (a.n_head_kv <= 0) a.n_head_kv = a.n_head;
    if (a.n_head % a.n_head_kv != 0 || a.n_kv < 0) {
        TR_ERROR("attention: %d query heads not a multiple of %d kv heads (n_kv %d)", a.n_head,
                 a.n_head_kv, a.n_kv);
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    /* a row holds every head side by side, or (head-major) one head */
    const long qw = (long)a.n_head * a.head_dim,
               kvw = a.kv_head_stride > 0 ? a.head_dim : (long)a.n_head_kv * a.head_dim;
    if (a.kv_head_stride < 0 || (a.kv_head_stride > 0 && a.kv_head_stride < a.head_dim)) {
        TR_ERROR("attention: kv head stride %ld below head_dim %d", a.kv_head_stride, a.head_dim);
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    if (a.q_stride < qw || a.out_stride < qw || (a.n_kv > 0 && a.kv_stride < kvw)) {
        TR_ERROR("attention: strides q %d kv %d out %d narrower than the heads (%ld, %ld)",
                 a.q_stride, a.kv_stride, a.out_stride, qw, kvw);
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    const bool tile = a.n_q >= ATTN_TILE_MIN_Q;
    tr_attn_job job = {&a, k16, v16, NULL, NULL, 0, 1};
    float *packed = NULL, *kvbuf = NULL;
    const size_t pack_n = pack_floats(&a, k16 != NULL);
    if (pack_n) {
        const long rows = (a.kv_valid > 0 && a.kv_valid < a.n_kv) ? a.kv_valid : a.n_kv;
        const long dp = tr_attn_dpad(a.head_dim);
        const size_t n = (size_t)a.n_head_kv * (size_t)rows * (size_t)dp;
        /* the caller's memory; else the pool's slot, reused by every call (an
         * encoder attends once a block: a fresh copy per call was faulted in
         * each time, and freed copies fragmented the heap); else an
         * allocation; no packed copy (the slower in-place reads) when none
         * is there */
        if (a.pack && a.pack_floats >= pack_n)
            kvbuf = a.pack;
        else
            kvbuf = tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_ATTN_KV, pack_n);
        if (!kvbuf) kvbuf = packed = aligned_alloc(64, sizeof(float) * pack_n);
        if (kvbuf) {
            pack_ctx pc = {&a, kvbuf, kvbuf + (n + 15) / 16 * 16, rows, dp};
            if (tr_pool_n_threads(pool) > 1 && n >= 65536)
                tr_pool_run(pool, pack_worker, &pc);
            else
                pack_worker(&pc, 0, 1);
            job.kp = pc.kp;
            job.vp = pc.vp;
            job.kv_rows = rows;
        }
    }
    /* the row path takes every query head of a KV head in one unit, so an
     * F16 block is converted (and any block read) once per group */
    const int group = a.n_head / a.n_head_kv;
    if (!tile && group > 1 && group <= TR_ATTN_MAX_GROUP &&
        tr_attn_rows_scratch_floats(a.head_dim, group) <= tr_attn_scratch_floats(a.head_dim))
        job.heads = group;
    attn_ctx c = {.job = &job, .heads = job.heads};
    atomic_init(&c.next, 0);
    c.rows_per_unit = tile ? TR_ATTN_BQ : ATTN_ROWS_PER_UNIT;
    c.n_qb = (a.n_q + c.rows_per_unit - 1) / c.rows_per_unit;
    /* 64-float multiple keeps each thread's scratch on its own cache lines */
    c.scratch_floats = (tr_attn_scratch_floats(a.head_dim) + 63) / 64 * 64;
    const long n_units = (long)(a.n_head / c.heads) * c.n_qb;
    const int nth = n_units > 1 ? tr_pool_n_threads(pool) : 1;
    /* the pool's scratch, reused across calls: a decoder step attends once
     * per layer, and a fresh allocation of this size is mapped, faulted in
     * and unmapped every time (about a tenth of a step) */
    const size_t need = (size_t)c.scratch_floats * (size_t)nth;
    float *own = NULL;
    c.scratch = tr_pool_scratch(pool, need);
    if (!c.scratch) c.scratch = own = aligned_alloc(64, sizeof(float) * need);
    if (!c.scratch) {
        TR_ERROR("attention: out of memory for scratch");
        tr_pool_note_failure(pool, TR_POOL_FAIL_OOM);
        free(packed);
        for (int i = 0; i < a.n_q; i++)
            memset(a.out + (long)i * a.out_stride, 0,
                   sizeof(float) * (size_t)a.n_head * (size_t)a.head_dim);
        return;
    }
    switch (tr_ops_isa()) {
#if defined(TR_CPU_X86)
    case TR_ISA_AVX512:
        c.fn = tile ? tr_attn_tile_avx512 : tr_attn_rows_avx512;
        break;
    case TR_ISA_AVX2:
        c.fn = tile ? tr_attn_tile_avx2 : tr_attn_rows_avx2;
        break;
#endif
    default:
        c.fn = tile ? tr_attn_tile_generic : tr_attn_rows_generic;
        break;
    }
    if (nth > 1)
        tr_pool_run(pool, attn_worker, &c); /* workers past n_units find nothing */
    else
        attn_worker(&c, 0, 1);
    free(own);
    free(packed);
}

void tr_attention(tr_pool *pool, const tr_attn_args *a) {
    attention(pool, a, NULL, NULL);
}

void tr_attention_f16kv(tr_pool *pool, const tr_attn_args *a, const uint16_t *k16,
                        const uint16_t *v16) {
    if (!k16 || !v16) {
        TR_ERROR("attention_f16kv: NULL K/V");
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    attention(pool, a, k16, v16);
}

long tr_attention_kv_head_floats(int head_dim) {
    return tr_attn_scratch_floats(head_dim);
}

void tr_attention_kv_head(const tr_attn_args *a, const uint16_t *k16, const uint16_t *v16, int hk,
                          float *scratch) {
    const int n_kv_heads = a->n_head_kv > 0 ? a->n_head_kv : a->n_head;
    const int group = a->n_head / n_kv_heads;
    tr_attn_job job = {a, k16, v16, NULL, NULL, 0, 1};
    attn_fn fn;
    switch (tr_ops_isa()) {
#if defined(TR_CPU_X86)
    case TR_ISA_AVX512:
        fn = tr_attn_rows_avx512;
        break;
    case TR_ISA_AVX2:
        fn = tr_attn_rows_avx2;
        break;
#endif
    default:
        fn = tr_attn_rows_generic;
        break;
    }
    /* the heads of one KV head in one call where the scratch allows (as
     * tr_attention groups them; each head's result is the same either way) */
    if (group > 1 && group <= TR_ATTN_MAX_GROUP &&
        tr_attn_rows_scratch_floats(a->head_dim, group) <= tr_attn_scratch_floats(a->head_dim)) {
        job.heads = group;
        fn(&job, hk * group, 0, a->n_q, scratch);
        return;
    }
    for (int h = hk * group; h < (hk + 1) * group; h++) fn(&job, h, 0, a->n_q, scratch);
}
