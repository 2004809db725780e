/* Per-ISA entry points of the SIMD element-wise and attention kernels. Each
 * kernel source is compiled three times on x86-64 (generic, AVX2, AVX-512),
 * once elsewhere (generic), and the public ops pick one at run time with
 * tr_ops_isa(). Internal to tensor/. */
#ifndef TR_TENSOR_OPS_SIMD_H
#define TR_TENSOR_OPS_SIMD_H

#include "tensor/cpu.h"
#include "tensor/ops.h"

typedef enum { TR_ISA_GENERIC = 0, TR_ISA_AVX2 = 1, TR_ISA_AVX512 = 2 } tr_ops_isa_t;

/* Kernel family for the active CPU level (cheap to call). */
tr_ops_isa_t tr_ops_isa(void);

#define TR_DECLARE_ACT_KERNELS(suf)                                                                \
    void tr_act_gelu_##suf(float *x, long n);                                                      \
    void tr_act_gelu_tanh_##suf(float *x, long n);                                                 \
    void tr_act_tanh_##suf(float *x, long n);                                                      \
    void tr_act_silu_##suf(float *x, long n);                                                      \
    void tr_act_sigmoid_##suf(float *x, long n);                                                   \
    float tr_act_max_##suf(const float *x, long n);                                                \
    float tr_act_exp_shift_sum_##suf(float *x, long n, float m);                                   \
    float tr_act_exp_sum_##suf(const float *x, long n, float m);

/* An attention call: the arguments plus, for an F16 KV cache, the half
 * float K/V (NULL for F32, then a->k/a->v are used), plus, for F32 K/V on
 * the tile path, K and V repacked head-major (kp/vp: [n_head_kv][kv_rows]
 * [tr_attn_dpad(head_dim)], zero padded; NULL when not packed). */
typedef struct tr_attn_job {
    const tr_attn_args *a;
    const uint16_t *k16, *v16;
    const float *kp, *vp;
    long kv_rows;
    int heads; /* row path: consecutive query heads per unit, all on one KV head */
} tr_attn_job;

/* One (head, query range) unit of attention; scratch holds
 * tr_attn_scratch_floats(head_dim) floats. The row kernel takes heads
 * h .. h + job->heads - 1 (they share a KV head, so each K/V block is read
 * and converted once for all of them). */
#define TR_DECLARE_ATTN_KERNELS(suf)                                                               \
    void tr_attn_tile_##suf(const tr_attn_job *job, int h, int q0, int q1, float *scratch);        \
    void tr_attn_rows_##suf(const tr_attn_job *job, int h, int q0, int q1, float *scratch);

TR_DECLARE_ACT_KERNELS(generic)
TR_DECLARE_ACT_KERNELS(avx2)
TR_DECLARE_ACT_KERNELS(avx512)
TR_DECLARE_ATTN_KERNELS(generic)
TR_DECLARE_ATTN_KERNELS(avx2)
TR_DECLARE_ATTN_KERNELS(avx512)

/* Tile geometry shared by the attention kernels and their caller. */
#define TR_ATTN_BQ        64 /* query rows per tile */
#define TR_ATTN_BK        64 /* keys per tile (a multiple of 4 * 16) */
#define TR_ATTN_MAX_GROUP 8  /* query heads per row-path unit at most */
static inline long tr_attn_dpad(int head_dim) {
    return ((long)head_dim + 15) / 16 * 16;
}
/* Offset (elements) of KV head hk's part of a K/V row (ops.h: kv_head_stride). */
static inline long tr_attn_head_off(const tr_attn_args *a, int hk) {
    return (long)hk * (a->kv_head_stride > 0 ? a->kv_head_stride : (long)a->head_dim);
}
/* Floats the row kernel needs for a unit of `heads` query heads. */
static inline long tr_attn_rows_scratch_floats(int head_dim, int heads) {
    long dp = tr_attn_dpad(head_dim);
    return (long)heads * (2 * dp + TR_ATTN_BK) + 2 * TR_ATTN_BK * dp;
}
static inline long tr_attn_scratch_floats(int head_dim) {
    long dp = tr_attn_dpad(head_dim);
    /* tile: Q^T, S^T, output, K and V blocks, three row vectors, a zero
     * row; the row path needs less (q, output, scores, K and V blocks) */
    return TR_ATTN_BQ * dp + TR_ATTN_BK * TR_ATTN_BQ + TR_ATTN_BQ * dp + 2 * TR_ATTN_BK * dp +
           3 * TR_ATTN_BQ + dp + 64;
}

#endif
