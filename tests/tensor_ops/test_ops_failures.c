/* Kernel failure record: every kernel that refuses its input notes the kind
 * on the pool (tr_pool_note_failure) besides logging it, so the run that owns
 * the pool can return a status instead of the zeros the kernel left behind;
 * a kernel that succeeds leaves the record empty, and taking it clears it. */
#include <stdlib.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "tensor/pool.h"
#include "test_util.h"
#include "transcribe.h"

static void record_semantics(tr_pool *pool) {
    CHECK(tr_pool_take_failures(pool) == 0);
    tr_pool_note_failure(pool, TR_POOL_FAIL_OOM);
    tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
    CHECK(tr_pool_take_failures(pool) == (TR_POOL_FAIL_OOM | TR_POOL_FAIL_INVALID));
    CHECK(tr_pool_take_failures(pool) == 0);
    tr_pool_note_failure(NULL, TR_POOL_FAIL_OOM); /* no pool: log line only */
    CHECK(tr_pool_take_failures(NULL) == 0);
}

static void matmul_refusals(tr_pool *pool) {
    float x[512], y[8];
    for (int i = 0; i < 512; i++) x[i] = (float)i / 512.0f;
    uint8_t q[8 * 288];
    memset(q, 0, sizeof q);
    /* Q4_K rows of 100 elements: not a whole block */
    tr_tensor bad_k = {"w_bad_k", TR_Q4_K, 2, {100, 8, 1, 1}, 144, 8 * 144, q};
    tr_matmul(pool, &bad_k, NULL, x, 1, 100, y, 8);
    CHECK(tr_pool_take_failures(pool) == TR_POOL_FAIL_INVALID);
    /* a row stride shorter than one row */
    tr_tensor bad_stride = {"w_bad_stride", TR_Q4_K, 2, {512, 8, 1, 1}, 100, 8 * 288, q};
    tr_matmul(pool, &bad_stride, NULL, x, 1, 512, y, 8);
    CHECK(tr_pool_take_failures(pool) == TR_POOL_FAIL_INVALID);
    /* the same weight, well formed: nothing noted */
    tr_tensor good = {"w_good", TR_Q4_K, 2, {512, 8, 1, 1}, 288, 8 * 288, q};
    tr_matmul(pool, &good, NULL, x, 1, 512, y, 8);
    tr_matmul(pool, &good, NULL, x, 1, 512, y, 8); /* M = 1 (decode path) and */
    float X[3 * 512], Y[3 * 8];
    for (int i = 0; i < 3 * 512; i++) X[i] = 0.25f;
    tr_matmul(pool, &good, NULL, X, 3, 512, Y, 8); /* M > 1 */
    CHECK(tr_pool_take_failures(pool) == 0);
}

static void attention_refusals(tr_pool *pool) {
    float q[2 * 24], k[2 * 16], v[2 * 16], out[2 * 24];
    for (int i = 0; i < 48; i++) q[i] = out[i] = 0.1f;
    for (int i = 0; i < 32; i++) k[i] = v[i] = 0.2f;
    tr_attn_args a = {.q = q,
                      .q_stride = 24,
                      .k = k,
                      .v = v,
                      .kv_stride = 16,
                      .out = out,
                      .out_stride = 24,
                      .n_q = 2,
                      .n_kv = 2,
                      .kv_valid = 2,
                      .n_head = 3,
                      .n_head_kv = 2, /* 3 query heads cannot share 2 kv heads */
                      .head_dim = 8,
                      .scale = 0.35f};
    tr_attention(pool, &a);
    CHECK(tr_pool_take_failures(pool) == TR_POOL_FAIL_INVALID);
    a.n_head = 2;
    a.q_stride = 8; /* narrower than 2 heads of 8 */
    tr_attention(pool, &a);
    CHECK(tr_pool_take_failures(pool) == TR_POOL_FAIL_INVALID);
    a.q_stride = 24;
    tr_attention_f16kv(pool, &a, NULL, NULL);
    CHECK(tr_pool_take_failures(pool) == TR_POOL_FAIL_INVALID);
    tr_attention(pool, &a); /* well formed */
    CHECK(tr_pool_take_failures(pool) == 0);
}

static void conv_refusals(tr_pool *pool) {
    float w[3 * 4 * 6];
    for (int i = 0; i < 72; i++) w[i] = 0.01f * (float)i;
    float x[4 * 10], y[6 * 10 * 10];
    for (int i = 0; i < 40; i++) x[i] = 1.0f;
    /* conv1d weight {k 3, c_in/groups 4, c_out 6} against c_in 5 */
    tr_tensor w1 = {"conv1d_w", TR_F32, 3, {3, 4, 6, 1}, 12, sizeof w, w};
    tr_conv1d(pool, x, 5, 8, &w1, NULL, 1, 1, 1, 1, 1, y);
    CHECK(tr_pool_take_failures(pool) == TR_POOL_FAIL_INVALID);
    tr_conv1d(pool, x, 4, 10, &w1, NULL, 1, 1, 1, 1, 1, y); /* fits */
    CHECK(tr_pool_take_failures(pool) == 0);
    /* conv2d weight {kw 3, kh 1, c_in/groups 4, c_out 6} against 2 groups */
    tr_tensor w2 = {"conv2d_w", TR_F32, 4, {3, 1, 4, 6}, 12, sizeof w, w};
    int ho = -1, wo = -1;
    tr_conv2d(pool, x, 4, 1, 10, &w2, NULL, 1, 1, 0, 1, 2, y, &ho, &wo);
    CHECK(tr_pool_take_failures(pool) == TR_POOL_FAIL_INVALID);
    CHECK(ho == 0 && wo == 0);
    tr_conv2d(pool, x, 4, 1, 10, &w2, NULL, 1, 1, 0, 1, 1, y, &ho, &wo); /* fits */
    CHECK(tr_pool_take_failures(pool) == 0);
    CHECK(ho == 1 && wo == 10);
    /* a prepared weight: refused when too short for its shape (noted), not
     * made for groups that do not divide c_out; a fitting one convolves
     * like the plain call and its groups must fit c_in */
    tr_tensor w2_short = w2;
    w2_short.nbytes = sizeof w / 2;
    CHECK(tr_conv2d_weight_prepare(pool, &w2_short, 1) == NULL);
    CHECK(tr_pool_take_failures(pool) == TR_POOL_FAIL_INVALID);
    CHECK(tr_conv2d_weight_prepare(pool, &w2, 4) == NULL);
    tr_conv_weight *cw = tr_conv2d_weight_prepare(pool, &w2, 1);
    CHECK(cw != NULL && tr_pool_take_failures(pool) == 0);
    float y2[6 * 10];
    tr_conv2d_prepared(pool, x, 4, 1, 10, cw, NULL, 1, 1, 0, 1, y2, &ho, &wo);
    CHECK(tr_pool_take_failures(pool) == 0 && ho == 1 && wo == 10);
    CHECK(memcmp(y, y2, sizeof y2) == 0);
    tr_conv2d_prepared(pool, x, 8, 1, 5, cw, NULL, 1, 1, 0, 1, y2, &ho, &wo); /* c_in 8 */
    CHECK(tr_pool_take_failures(pool) == TR_POOL_FAIL_INVALID);
    CHECK(ho == 0 && wo == 0);
    tr_conv_weight_free(cw);
}

int main(void) {
    transcribe_log_set(NULL, NULL); /* the refusals log on purpose */
    for (int nth = 1; nth <= 2; nth++) {
        tr_pool *pool = tr_pool_create(nth);
        CHECK(pool != NULL);
        record_semantics(pool);
        matmul_refusals(pool);
        attention_refusals(pool);
        conv_refusals(pool);
        tr_pool_free(pool);
    }
    return TEST_DONE();
}
