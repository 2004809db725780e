/* The Qwen3-ASR conv front end over chunks laid side by side
 * (tr_qa_conv_chunks) against the same three Conv2d + GELU run on each
 * chunk's own zero-padded image: the real 100-frame chunk, odd widths and
 * mel counts, a last chunk of one frame, one chunk alone, F32 and F16
 * weights, 1 and 2 threads; and the slot width's invariants. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "models/qwen3_asr/qwen3_asr.h"
#include "tensor/dtype.h"
#include "tensor/ops.h"
#include "test_util.h"

static uint32_t g_rng = 12345u;
static float urand(void) { /* uniform in [-1, 1) */
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)(g_rng >> 8) / (float)(1u << 23) - 1.0f;
}

typedef struct {
    int C, M, W, n, last, type; /* channels, mel bins, chunk frames, chunks, last chunk's frames */
} conv_case;

/* Weights ne {3, 3, cin, C} of `type` with values in [-amp, amp). */
static tr_tensor make_w(int type, int cin, int C, float amp, void **store) {
    const long n = 9L * cin * C;
    const size_t es = type == TR_F16 ? 2 : 4;
    *store = malloc(es * (size_t)n);
    for (long i = 0; i < n; i++) {
        float v = amp * urand();
        if (type == TR_F16)
            ((uint16_t *)*store)[i] = tr_f32_to_f16(v);
        else
            ((float *)*store)[i] = v;
    }
    return (tr_tensor){.name = "conv",
                       .type = type,
                       .n_dims = 4,
                       .ne = {3, 3, cin, C},
                       .nb1 = 3 * es,
                       .nbytes = es * (size_t)n,
                       .data = *store};
}

/* One chunk's image [M][W] through the three layers one at a time (the
 * encoder's former path); rows [T_c][C*M3] into feat. */
static int ref_chunk(const qa_model *m, tr_pool *pool, const float *img, int W, float *feat) {
    const int C = m->enc.conv_ch;
    int h = m->enc.n_mels, w = W, ho, wo, c_in = 1;
    float *in = malloc(sizeof(float) * (size_t)h * w);
    memcpy(in, img, sizeof(float) * (size_t)h * w);
    for (int i = 0; i < 3; i++) {
        float *y = malloc(sizeof(float) * (size_t)C * ((h + 1) / 2) * ((w + 1) / 2));
        tr_conv2d(pool, in, c_in, h, w, m->conv_w[i], m->conv_b[i], 2, 2, 1, 1, 1, y, &ho, &wo);
        tr_gelu(y, (long)C * ho * wo);
        free(in);
        in = y;
        c_in = C;
        h = ho;
        w = wo;
    }
    for (int t = 0; t < w; t++)
        for (int cf = 0; cf < C * h; cf++) feat[(size_t)t * C * h + cf] = in[(size_t)cf * w + t];
    free(in);
    return w;
}

/* Length after three 3-tap stride-2 pad-1 convs: ceil(L/2) thrice. */
static int halved3(int L) {
    for (int i = 0; i < 3; i++) L = (L + 1) / 2;
    return L;
}

static void run_case(const conv_case *k, tr_pool *pool) {
    tr_tensor w[3];
    void *store[3];
    float *bias[3];
    qa_model m;
    memset(&m, 0, sizeof m);
    m.enc.conv_ch = k->C;
    m.enc.n_mels = k->M;
    for (int i = 0; i < 3; i++) {
        const int cin = i ? k->C : 1;
        w[i] = make_w(k->type, cin, k->C, 1.0f / sqrtf(9.0f * cin), &store[i]);
        bias[i] = malloc(sizeof(float) * (size_t)k->C);
        for (int c = 0; c < k->C; c++) bias[i][c] = 0.5f * urand(); /* GELU(bias) != 0 */
        m.conv_w[i] = &w[i];
        m.conv_b[i] = bias[i];
    }
    const int S = tr_qa_conv_slot(k->W), T_c = halved3(k->W), M3 = halved3(k->M);
    const size_t fw = (size_t)k->C * M3, iw = (size_t)k->n * S;
    /* per-chunk images (the last one zero-padded past its frames) and the
     * side-by-side image with zero gaps */
    float *chunks = calloc((size_t)k->n * k->M * k->W, sizeof(float));
    float *img = calloc((size_t)k->M * iw, sizeof(float));
    for (int j = 0; j < k->n; j++) {
        const int len = j == k->n - 1 ? k->last : k->W;
        for (int f = 0; f < k->M; f++)
            for (int t = 0; t < len; t++) {
                const float v = 2.0f * urand();
                chunks[((size_t)j * k->M + f) * k->W + t] = v;
                img[(size_t)f * iw + (size_t)j * S + t] = v;
            }
    }
    float *ref = malloc(sizeof(float) * (size_t)k->n * T_c * fw);
    float *got = malloc(sizeof(float) * (size_t)k->n * T_c * fw);
    float *ba = malloc(sizeof(float) * (size_t)k->C * ((k->M + 1) / 2) * (iw / 2));
    float *bb = malloc(sizeof(float) * (size_t)k->C * ((k->M + 3) / 4) * (iw / 4));
    for (int j = 0; j < k->n; j++)
        CHECK(ref_chunk(&m, pool, chunks + (size_t)j * k->M * k->W, k->W,
                        ref + (size_t)j * T_c * fw) == T_c);
    CHECK(tr_qa_conv_chunks(&m, pool, img, k->n, k->W, ba, bb, got) == TRANSCRIBE_OK);
    double peak = 0, worst = 0;
    for (size_t i = 0; i < (size_t)k->n * T_c * fw; i++) {
        peak = fmax(peak, fabs(ref[i]));
        worst = fmax(worst, fabs((double)ref[i] - got[i]));
    }
    CHECK_MSG(peak > 0 && worst <= 1e-5 * peak, "C %d M %d W %d n %d last %d: max diff %g of %g",
              k->C, k->M, k->W, k->n, k->last, worst, peak);
    for (int i = 0; i < 3; i++) {
        free(store[i]);
        free(bias[i]);
    }
    free(chunks);
    free(img);
    free(ref);
    free(got);
    free(ba);
    free(bb);
}

int main(void) {
    /* the slot: a multiple of 8 leaving a zero column after each layer's
     * live input columns, and the smallest such */
    CHECK(tr_qa_conv_slot(100) == 104);
    for (int W = 1; W <= 300; W++) {
        const int w1 = (W + 1) / 2, w2 = (w1 + 1) / 2, S = tr_qa_conv_slot(W);
        CHECK(S % 8 == 0 && S >= W + 1 && S / 2 >= w1 + 1 && S / 4 >= w2 + 1);
        const int s = S - 8;
        CHECK(s <= 0 || s < W + 1 || s / 2 < w1 + 1 || s / 4 < w2 + 1);
    }
    const conv_case cases[] = {
        {8, 16, 100, 3, 37, TR_F16}, /* the real chunk width, a partial last chunk */
        {6, 13, 13, 4, 13, TR_F32},  /* odd width and mel count */
        {5, 9, 7, 5, 1, TR_F32},     /* last chunk of one frame */
        {4, 8, 2, 3, 2, TR_F16},     /* two-frame chunks */
        {4, 8, 1, 2, 1, TR_F32},     /* one-frame chunks */
        {7, 11, 17, 1, 9, TR_F32},   /* one chunk alone */
    };
    tr_pool *pool2 = tr_pool_create(2);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i], NULL);
        run_case(&cases[i], pool2);
    }
    tr_pool_free(pool2);
    return TEST_DONE();
}
