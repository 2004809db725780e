/* Qwen3-ASR conv front end (§6.2) over several 1 s chunks at once.
 *
 * Each chunk is its own image (zero-padded to W frames, §6.1) and the three
 * 3x3 stride-2 pad-1 Conv2d + GELU never mix chunks. Running them chunk by
 * chunk costs, per chunk and layer, widening and packing the 480 x 4320
 * weight and a GEMM of only a few hundred positions. Here the chunks of a
 * group sit side by side along the time axis, chunk j at columns
 * [j*S, j*S + W) of one image, the rest of its slot zero, so each layer is
 * one convolution over all of them.
 *
 * Why that equals the per-chunk convs: a layer's output column o reads
 * input columns 2o-1 .. 2o+1. With S even, chunk j's output t sits at
 * column j*S/2 + t and reads j*S + 2t-1 .. j*S + 2t+1. For t = 0 that is
 * column j*S - 1, the previous slot's last column (or the image's left
 * padding): zero, as the per-chunk conv's left padding. The last output,
 * t = ceil(W/2) - 1, reads at most column j*S + W, zero when S > W, as the
 * per-chunk right padding. So each slot must keep at least one zero column
 * after its W live ones at every layer's input: after bias + GELU the
 * columns past a slot's live outputs hold junk (GELU(bias) != 0) and are
 * zeroed before they feed the next layer. The slot halves each layer
 * (S, S/2, S/4 and S/8 for the output), so S is a multiple of 8 with room
 * for that zero column at each of the three inputs. */
#include <string.h>

#include "models/qwen3_asr/qwen3_asr.h"
#include "tensor/ops.h"

int tr_qa_conv_slot(int W) {
    const int w1 = (W + 1) / 2, w2 = (w1 + 1) / 2;
    int S = (W + 1 + 7) / 8 * 8;
    while (S / 2 < w1 + 1 || S / 4 < w2 + 1) S += 8;
    return S;
}

/* Zero columns [live, slot) of every slot of every row (rows of n*slot). */
static void zero_slot_tails(float *y, long rows, int n, int slot, int live) {
    const size_t tail = sizeof(float) * (size_t)(slot - live);
    for (long r = 0; r < rows; r++)
        for (int j = 0; j < n; j++) memset(y + (r * n + j) * slot + live, 0, tail);
}

transcribe_status tr_qa_conv_chunks(const qa_model *m, tr_pool *pool, const float *img, int n,
                                    int W, float *buf_a, float *buf_b, float *feat) {
    const int C = m->enc.conv_ch;
    int h = m->enc.n_mels, slot = tr_qa_conv_slot(W), live = W, ho = 0, wo = 0, c_in = 1;
    const float *in = img;
    float *bufs[2] = {buf_a, buf_b};
    for (int i = 0; i < 3; i++) {
        float *y = bufs[i & 1];
        tr_conv2d(pool, in, c_in, h, n * slot, m->conv_w[i], m->conv_b[i], 2, 2, 1, 1, 1, y, &ho,
                  &wo);
        if (wo != n * slot / 2) return TRANSCRIBE_ERR_BACKEND; /* conv2d logged why */
        slot /= 2;
        live = (live + 1) / 2;
        tr_gelu(y, (long)C * ho * wo);
        if (i < 2) zero_slot_tails(y, (long)C * ho, n, slot, live);
        in = y;
        c_in = C;
        h = ho;
    }
    /* feature[c*M3 + f] of chunk j's time step t = y[c][f][j*slot + t] (§6.2),
     * 16 rows of y at a time so that both sides move along cache lines */
    const size_t fw = (size_t)C * h, ld = (size_t)n * slot;
    for (size_t r0 = 0; r0 < fw; r0 += 16) {
        const size_t r1 = r0 + 16 < fw ? r0 + 16 : fw;
        for (int j = 0; j < n; j++)
            for (int t = 0; t < live; t++) {
                float *dst = feat + ((size_t)j * live + t) * fw;
                const float *src = in + (size_t)j * slot + t;
                for (size_t r = r0; r < r1; r++) dst[r] = src[r * ld];
            }
    }
    return TRANSCRIBE_OK;
}
