/* Greedy decoders on hand-made heads (docs/formats/parakeet.md §8): the logits
 * are made to depend on the encoder frame only (identity joint / CTC
 * weights, zero predictor projection), so each frame dictates its token and
 * duration and the loop rules (collapse, TDT durations, max_symbols, the
 * RNN-T 10-symbol cap, the safety cap) can be checked exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/parakeet/pk_decode.h"
#include "test_util.h"

static float *vec0(int n) {
    return calloc((size_t)n, sizeof(float));
}

static void eye(pk_mat *m, int n) {
    tr_pk_mat_alloc(m, n, n, "eye");
    memset(m->data, 0, (size_t)n * n * sizeof(float));
    for (int i = 0; i < n; i++) m->data[(size_t)i * n + i] = 1.0f;
}

/* enc rows of width n with value 5 at class k (and at V1 + dur_idx). */
static void put(float *enc, int n, int t, int k, int di, int V1) {
    memset(enc + (size_t)t * n, 0, (size_t)n * sizeof(float));
    enc[(size_t)t * n + k] = 5.0f;
    if (di >= 0) enc[(size_t)t * n + V1 + di] = 5.0f;
}

/* Streaming (tr_pk_decode_resume): the frames decoded in chunks of 1, 2 and 3
 * give exactly the tokens of one tr_pk_decode over all of them, TDT durations
 * that jump past a chunk included. */
static void check_resume(const pk_head *h, const float *enc, int T, const pk_toks *full) {
    for (int ch = 1; ch <= 3; ch++) {
        pk_dec_work w;
        CHECK(tr_pk_dec_work_init(&w, h));
        pk_dec_carry c;
        tr_pk_dec_carry_reset(&c);
        pk_toks out = {0};
        for (int f0 = 0; f0 < T; f0 += ch) {
            const int n = T - f0 < ch ? T - f0 : ch;
            CHECK(tr_pk_decode_resume(h, NULL, &w, enc + (size_t)f0 * h->d_enc, f0, n, &out, &c,
                                      NULL, NULL) == TRANSCRIBE_OK);
        }
        CHECK_MSG(out.n == full->n, "chunk %d: %d tokens, whole %d", ch, out.n, full->n);
        for (int i = 0; i < out.n && i < full->n; i++)
            CHECK_MSG(out.v[i].id == full->v[i].id && out.v[i].frame == full->v[i].frame &&
                          out.v[i].dur == full->v[i].dur && out.v[i].p == full->v[i].p,
                      "chunk %d: token %d differs", ch, i);
        tr_pk_toks_free(&out);
        tr_pk_dec_work_free(&w);
    }
}

static void test_ctc(void) {
    enum { V1 = 4, T = 8 }; /* classes 0..2, blank 3 */
    pk_head h = {.kind = PK_HEAD_CTC, .d_enc = V1, .n_vocab = V1};
    eye(&h.ctc, V1);
    h.ctc_b = vec0(V1);
    float enc[T * V1];
    int seq[T] = {0, 0, 3, 0, 1, 1, 3, 2};
    for (int t = 0; t < T; t++) put(enc, V1, t, seq[t], -1, V1);
    pk_dec_work w;
    CHECK(tr_pk_dec_work_init(&w, &h));
    pk_toks out = {0};
    CHECK(tr_pk_decode(&h, NULL, &w, enc, T, &out, NULL, NULL) == TRANSCRIBE_OK);
    check_resume(&h, enc, T, &out);
    /* repeats collapse; a label repeated across a blank is emitted twice */
    CHECK(out.n == 4);
    int ids[] = {0, 0, 1, 2}, frames[] = {0, 3, 4, 7};
    for (int i = 0; i < out.n && i < 4; i++) {
        CHECK(out.v[i].id == ids[i] && out.v[i].frame == frames[i] && out.v[i].dur == 1);
        /* confidence = exp(log_softmax) = e^5 / (e^5 + 3) */
        CHECK_NEAR(out.v[i].p, expf(5.0f) / (expf(5.0f) + 3.0f), 1e-5);
    }
    tr_pk_toks_free(&out);
    tr_pk_dec_work_free(&w);
    tr_pk_head_free(&h);
}

/* A transducer head whose joint output is relu(enc[t]) (N = n_vocab + n_dur). */
static void make_transducer(pk_head *h, pk_head_kind kind, int V1, const int *dur, int n_dur,
                            int max_sym) {
    memset(h, 0, sizeof *h);
    int N = V1 + n_dur, Hp = 4;
    h->kind = kind;
    h->d_enc = N;
    h->n_vocab = V1;
    h->hp = Hp;
    h->n_layers = 1;
    h->joint = N;
    h->n_out = N;
    h->n_dur = n_dur;
    h->max_symbols = max_sym;
    h->act = PK_ACT_RELU;
    if (n_dur) {
        h->durations = malloc((size_t)n_dur * sizeof(int));
        memcpy(h->durations, dur, (size_t)n_dur * sizeof(int));
    }
    tr_pk_mat_alloc(&h->embed, V1, Hp, "embed");
    for (int i = 0; i < V1 * Hp; i++) h->embed.data[i] = 0.1f * (float)(i % 7);
    h->wx = calloc(1, sizeof *h->wx);
    h->wh = calloc(1, sizeof *h->wh);
    h->lstm_b = calloc(1, sizeof *h->lstm_b);
    tr_pk_mat_alloc(&h->wx[0], 4 * Hp, Hp, "wx");
    tr_pk_mat_alloc(&h->wh[0], 4 * Hp, Hp, "wh");
    for (int i = 0; i < 16 * Hp; i++) h->wx[0].data[i] = h->wh[0].data[i] = 0.05f;
    h->lstm_b[0] = vec0(4 * Hp);
    eye(&h->jenc, N);
    h->jenc_b = vec0(N);
    tr_pk_mat_alloc(&h->jpred, N, Hp, "jpred");
    memset(h->jpred.data, 0, (size_t)N * Hp * sizeof(float));
    h->jpred_b = vec0(N);
    eye(&h->jout, N);
    h->jout_b = vec0(N);
}

static void test_tdt(void) {
    enum { V1 = 4, ND = 3, N = V1 + ND, T = 6 };
    const int dur[ND] = {0, 1, 2};
    pk_head h;
    make_transducer(&h, PK_HEAD_TDT, V1, dur, ND, 3);
    float enc[T * N];
    put(enc, N, 0, 1, 2, V1); /* token 1, duration 2 → t = 2 */
    put(enc, N, 1, 2, 1, V1); /* skipped */
    put(enc, N, 2, 3, 0, V1); /* blank, duration 0 → repeats until the cap, t = 3 */
    put(enc, N, 3, 2, 0, V1); /* token 2, duration 0 → emitted max_symbols = 3 times */
    put(enc, N, 4, 0, 1, V1); /* token 0, duration 1 */
    put(enc, N, 5, 3, 2, V1); /* blank, duration 2 → past the end */
    pk_dec_work w;
    CHECK(tr_pk_dec_work_init(&w, &h));
    pk_toks out = {0};
    CHECK(tr_pk_decode(&h, NULL, &w, enc, T, &out, NULL, NULL) == TRANSCRIBE_OK);
    check_resume(&h, enc, T, &out);
    int ids[] = {1, 2, 2, 2, 0}, frames[] = {0, 3, 3, 3, 4}, durs[] = {2, 0, 0, 0, 1};
    CHECK(out.n == 5);
    for (int i = 0; i < out.n && i < 5; i++) {
        CHECK_MSG(out.v[i].id == ids[i] && out.v[i].frame == frames[i] && out.v[i].dur == durs[i],
                  "token %d: id %d frame %d dur %d", i, out.v[i].id, out.v[i].frame, out.v[i].dur);
        CHECK(out.v[i].p > 0.0f && out.v[i].p < 1.0f);
    }
    tr_pk_toks_free(&out);

    /* max_symbols = 0 and a zero-duration blank: only the safety cap ends it */
    h.max_symbols = 0;
    CHECK(tr_pk_decode(&h, NULL, &w, enc, T, &out, NULL, NULL) == TRANSCRIBE_ERR_BACKEND);
    tr_pk_toks_free(&out);
    tr_pk_dec_work_free(&w);
    tr_pk_head_free(&h);
}

static void test_rnnt(void) {
    enum { V1 = 4, T = 3 };
    pk_head h;
    make_transducer(&h, PK_HEAD_RNNT, V1, NULL, 0, 10);
    float enc[T * V1];
    put(enc, V1, 0, 1, -1, V1); /* token 1 every step: the fixed cap of 10 */
    put(enc, V1, 1, 3, -1, V1); /* blank */
    put(enc, V1, 2, 2, -1, V1);
    pk_dec_work w;
    CHECK(tr_pk_dec_work_init(&w, &h));
    pk_toks out = {0};
    CHECK(tr_pk_decode(&h, NULL, &w, enc, T, &out, NULL, NULL) == TRANSCRIBE_OK);
    check_resume(&h, enc, T, &out);
    CHECK(out.n == 20);
    int n1 = 0, n2 = 0;
    for (int i = 0; i < out.n; i++) {
        if (out.v[i].id == 1 && out.v[i].frame == 0) n1++;
        if (out.v[i].id == 2 && out.v[i].frame == 2) n2++;
        CHECK(out.v[i].dur == 1);
    }
    CHECK(n1 == 10 && n2 == 10);
    tr_pk_toks_free(&out);
    tr_pk_dec_work_free(&w);
    tr_pk_head_free(&h);
}

static void test_confidence(void) {
    float flat[5] = {1, 1, 1, 1, 1};
    CHECK_NEAR(tr_pk_confidence(flat, 5), 0.0, 1e-6);
    float peak[5] = {100, 0, 0, 0, 0};
    CHECK_NEAR(tr_pk_confidence(peak, 5), 1.0, 1e-6);
    /* two equal classes out of four: H = ln 2, conf = 1 - ln2/ln4 = 0.5 */
    float two[4] = {50, 50, -50, -50};
    CHECK_NEAR(tr_pk_confidence(two, 4), 0.5, 1e-5);
}

static void test_matvec(void) {
    pk_mat W;
    tr_pk_mat_alloc(&W, 3, 19, "w");
    float x[19], b[3] = {1, 2, 3}, y[3];
    for (int i = 0; i < 19; i++) x[i] = (float)i;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 19; c++) W.data[r * 19 + c] = (float)(r + 1);
    tr_pk_matvec(NULL, &W, b, x, y);
    for (int r = 0; r < 3; r++) CHECK_NEAR(y[r], (r + 1) * 171.0 + b[r], 1e-3);
    tr_pk_mat_free(&W);
}

int main(void) {
    test_ctc();
    test_tdt();
    test_rnnt();
    test_confidence();
    test_matvec();
    return TEST_DONE();
}
