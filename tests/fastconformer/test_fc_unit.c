/* FastConformer encoder without goldens: rel_shift closed form against the
 * pad / reshape procedure, length formulas, batch-norm fold, tiny random
 * encoders (full, local, chunked_limited + causal + LayerNorm conv, F16)
 * against the naive reference in fc_ref.h, thread-count bit-identity, work
 * reuse, abort, and the loader's error paths. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fc_ref.h"
#include "fc_synth.h"
#include "gguf/gguf.h"
#include "nn/fastconformer.h"
#include "nn/fastconformer_internal.h"
#include "tensor/pool.h"
#include "test_util.h"

typedef struct {
    void *img;
    gguf_file *g;
    tr_fc_hparams hp;
    tr_fc_encoder *enc;
} loaded;

static transcribe_status load_cfg(const fc_synth_cfg *cfg, tr_fc_key_flavor flavor, loaded *L) {
    memset(L, 0, sizeof *L);
    size_t size = 0;
    L->img = fc_synth_build(cfg, &size);
    if (!L->img) return TRANSCRIBE_ERR_OOM;
    transcribe_status st = tr_gguf_open_memory(L->img, size, &L->g);
    if (st) return st;
    const char *prefix = cfg->prefix ? cfg->prefix : "stt.parakeet.encoder.";
    st = tr_fc_read_hparams(L->g, prefix, flavor, &L->hp);
    if (st) return st;
    return tr_fc_load(L->g, &L->hp, &L->enc);
}

static void unload(loaded *L) {
    tr_fc_free(L->enc);
    tr_gguf_close(L->g);
    free(L->img);
    memset(L, 0, sizeof *L);
}

static float *random_mel(int n_mels, int T, uint32_t seed) {
    float *m = malloc(sizeof(float) * (size_t)n_mels * T);
    for (long i = 0; i < (long)n_mels * T; i++) m[i] = fc_rand(&seed);
    return m;
}

static double max_abs_diff(const float *a, const float *b, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= m)) m = e; /* NaN propagates as failure */
    }
    return m;
}

static void test_rel_shift(void) {
    const int Ts[] = {1, 2, 3, 7, 64, 65, 130};
    uint32_t seed = 7;
    for (size_t n = 0; n < sizeof Ts / sizeof Ts[0]; n++) {
        const int T = Ts[n], P = 2 * T - 1;
        float *bdr = malloc(sizeof(float) * T * P), *ref = malloc(sizeof(float) * T * T);
        float *got = malloc(sizeof(float) * T * T);
        for (long i = 0; i < (long)T * P; i++) bdr[i] = fc_rand(&seed);
        fcr_rel_shift(bdr, T, ref);
        /* blocks of 64 query rows, each reading BDr columns [T - a1, ...) */
        for (int a0 = 0; a0 < T; a0 += 64) {
            int a1 = a0 + 64 < T ? a0 + 64 : T;
            tr_fc_shift_rows(bdr + (long)a0 * P + (T - a1), P, a0, a1, T, 1.0f, got);
        }
        CHECK_MSG(memcmp(ref, got, sizeof(float) * T * T) == 0, "rel_shift T=%d", T);
        /* closed form: BD[a][b] = BDr[a][b - a + T - 1] */
        int bad = 0;
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++) bad += ref[a * T + b] != bdr[(long)a * P + b - a + T - 1];
        CHECK_MSG(bad == 0, "closed form T=%d", T);
        free(bdr), free(ref), free(got);
    }
}

static void test_pos_table(void) {
    const int ds[] = {2, 16, 1026, 10000}; /* 10000: several frequency chunks */
    for (size_t n = 0; n < sizeof ds / sizeof ds[0]; n++) {
        const int d = ds[n], P = 7, pos0 = 3; /* positions 3 .. -3 */
        float *pe = malloc(sizeof(float) * P * d);
        tr_pool *pool = tr_pool_create(2);
        tr_fc_pos_table(pool, pe, P, d, pos0);
        tr_pool_free(pool);
        double worst = 0;
        for (int i = 0; i < P; i++)
            for (int j = 0; j < d / 2; j++) {
                double arg = (pos0 - i) * exp(-(2.0 * j) * log(10000.0) / d);
                double e1 = fabs(pe[i * d + 2 * j] - sin(arg));
                double e2 = fabs(pe[i * d + 2 * j + 1] - cos(arg));
                if (e1 > worst) worst = e1;
                if (e2 > worst) worst = e2;
            }
        CHECK_MSG(worst < 1e-5, "pos table d=%d err %g", d, worst);
        free(pe);
    }
}

static void test_lengths(void) {
    fc_synth_cfg cfg = fc_synth_default();
    loaded L;
    CHECK(load_cfg(&cfg, TR_FC_KEYS_PARAKEET, &L) == TRANSCRIBE_OK);
    for (int t = 1; t <= 50; t++) CHECK_MSG(tr_fc_out_frames(L.enc, t) == (t + 7) / 8, "T %d", t);
    CHECK(tr_fc_out_frames(L.enc, 1101) == 138);
    CHECK(tr_fc_out_frames(L.enc, 0) == 0);
    CHECK(tr_fc_get_hparams(L.enc)->n_layers == 2);
    unload(&L);

    cfg.style = "chunked_limited";
    cfg.att_left = 4, cfg.att_right = 1;
    cfg.n_mels = 128; /* causal F' = 17 (docs/formats/parakeet.md §4.1) */
    CHECK(load_cfg(&cfg, TR_FC_KEYS_PARAKEET, &L) == TRANSCRIBE_OK);
    CHECK(L.enc && L.enc->f_out == 17);
    for (int t = 1; t <= 50; t++) {
        /* conv length with padding 2 before, 1 after, kernel 3, stride 2 */
        int want = t;
        for (int s = 0; s < 3; s++) want = (want + 2 + 1 - 3) / 2 + 1;
        CHECK_MSG(tr_fc_out_frames(L.enc, t) == want, "causal T %d", t);
    }
    unload(&L);
}

/* Subsampling factors 2, 4, 8, 16: log2(factor) stride-2 stages, one
 * ceil-halving (causal: L/2 + 1) of time and frequency each; any n_mels. */
static void test_sub_factors(void) {
    for (int fac = 2; fac <= 16; fac *= 2) {
        for (int causal = 0; causal < 2; causal++) {
            fc_synth_cfg cfg = fc_synth_default();
            cfg.sub_factor = fac;
            cfg.n_mels = 20; /* not a multiple of the factor */
            if (causal) {
                cfg.style = "chunked_limited";
                cfg.att_left = 4, cfg.att_right = 1;
                cfg.conv_left = 4, cfg.conv_right = 0; /* causal depthwise, k = 5 */
            }
            loaded L;
            CHECK_MSG(load_cfg(&cfg, TR_FC_KEYS_PARAKEET, &L) == TRANSCRIBE_OK, "factor %d", fac);
            if (!L.enc) continue;
            const tr_fc_hparams *hp = tr_fc_get_hparams(L.enc);
            int stages = 0, F = 20;
            for (int f = fac; f > 1; f /= 2) stages++;
            for (int st = 0; st < stages; st++) F = causal ? F / 2 + 1 : (F + 1) / 2;
            CHECK(hp->sub_factor == fac && hp->sub_stages == stages);
            CHECK_MSG(L.enc->f_out == F, "factor %d causal %d: F' %d vs %d", fac, causal,
                      L.enc->f_out, F);
            for (int t = 1; t <= 70; t++) {
                int want = t;
                for (int st = 0; st < stages; st++) want = causal ? want / 2 + 1 : (want + 1) / 2;
                CHECK_MSG(tr_fc_out_frames(L.enc, t) == want, "factor %d causal %d T %d", fac,
                          causal, t);
            }
            /* the cache-aware stream is written for factor 8 only */
            CHECK(tr_fc_stream_supported(L.enc) == (causal && fac == 8));
            unload(&L);
        }
    }
    /* a key that disagrees with the weights: the weights' stages run */
    fc_synth_cfg cfg = fc_synth_default();
    cfg.sub_factor = 8;
    cfg.sub_factor_key = 2;
    loaded L;
    CHECK(load_cfg(&cfg, TR_FC_KEYS_PARAKEET, &L) == TRANSCRIBE_OK);
    if (L.enc) {
        CHECK(tr_fc_get_hparams(L.enc)->sub_factor == 2);
        CHECK(tr_fc_get_hparams(L.enc)->sub_stages == 3);
        CHECK(tr_fc_out_frames(L.enc, 80) == 10);
    }
    unload(&L);
}

static void test_bn_fold(void) {
    enum { N = 33 };
    float g[N], b[N], m[N], v[N], sc[N], sh[N];
    uint32_t seed = 99;
    for (int i = 0; i < N; i++) {
        g[i] = 1.0f + 0.3f * fc_rand(&seed);
        b[i] = fc_rand(&seed);
        m[i] = fc_rand(&seed);
        v[i] = 1.0f + 0.9f * fc_rand(&seed);
    }
    tr_nn_bn_fold(g, b, m, v, N, 1e-5f, sc, sh);
    double worst = 0;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 4; k++) {
            double x = fc_rand(&seed) * 3.0;
            double direct = (x - m[i]) / sqrt((double)v[i] + 1e-5) * g[i] + b[i];
            double folded = x * sc[i] + sh[i];
            double e = fabs(direct - folded);
            if (e > worst) worst = e;
        }
    CHECK_MSG(worst < 1e-5, "bn fold err %g", worst);
}

/* Runs the encoder and the naive reference; checks both outputs. */
static void parity_case(const char *label, const fc_synth_cfg *cfg, int T_mel, double tol) {
    loaded L;
    transcribe_status st = load_cfg(cfg, TR_FC_KEYS_PARAKEET, &L);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: load %d", label, (int)st);
    if (st) {
        unload(&L);
        return;
    }
    const int T = tr_fc_out_frames(L.enc, T_mel), d = cfg->d;
    float *mel = random_mel(cfg->n_mels, T_mel, 5u + (uint32_t)T_mel);
    float *out = malloc(sizeof(float) * T * d), *pre = malloc(sizeof(float) * T * d);
    float *rout = malloc(sizeof(float) * T * d), *rpre = malloc(sizeof(float) * T * d);
    float *out2 = malloc(sizeof(float) * T * d);
    tr_fc_work *w = tr_fc_work_new();
    st = tr_fc_forward(L.enc, NULL, w, mel, T_mel, out, pre, NULL, NULL);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: forward %d", label, (int)st);
    int rT = fcr_forward(L.g, cfg, mel, T_mel, rout, rpre);
    CHECK_MSG(rT == T, "%s: T %d vs ref %d", label, T, rT);
    double ep = max_abs_diff(pre, rpre, (long)T * d), eo = max_abs_diff(out, rout, (long)T * d);
    printf("%-28s T_mel %4d T_enc %3d  pre-encode %.2e  output %.2e\n", label, T_mel, T, ep, eo);
    CHECK_MSG(ep <= tol && eo <= tol, "%s: pre %g out %g (tol %g)", label, ep, eo, tol);

    /* 2 threads, reused (larger) work area: bit-identical */
    tr_pool *pool = tr_pool_create(2);
    st = tr_fc_forward(L.enc, pool, w, mel, T_mel, out2, NULL, NULL, NULL);
    CHECK(st == TRANSCRIBE_OK);
    CHECK_MSG(memcmp(out, out2, sizeof(float) * T * d) == 0, "%s: 1 vs 2 threads differ", label);
    tr_pool *pool3 = tr_pool_create(3);
    memset(out2, 0, sizeof(float) * T * d);
    CHECK(tr_fc_forward(L.enc, pool3, w, mel, T_mel, out2, NULL, NULL, NULL) == TRANSCRIBE_OK);
    CHECK_MSG(memcmp(out, out2, sizeof(float) * T * d) == 0, "%s: 1 vs 3 threads differ", label);
    tr_pool_free(pool3);
    CHECK(tr_fc_work_bytes(w) > 0);
    /* one head per attention pass: same bits */
    tr_fc_work *w1 = tr_fc_work_new();
    tr_fc_work_set_bias_budget(w1, 1);
    st = tr_fc_forward(L.enc, pool, w1, mel, T_mel, out2, NULL, NULL, NULL);
    CHECK(st == TRANSCRIBE_OK);
    CHECK_MSG(memcmp(out, out2, sizeof(float) * T * d) == 0, "%s: head groups differ", label);
    tr_fc_work_free(w1);
    /* sized up front for T frames: the pass allocates nothing more, and the
     * arena is lent between passes */
    tr_fc_work *wr = tr_fc_work_new();
    CHECK(tr_fc_work_reserve(L.enc, pool, wr, T, 0));
    const size_t reserved = tr_fc_work_bytes(wr);
    CHECK(tr_fc_forward(L.enc, pool, wr, mel, T_mel, out2, NULL, NULL, NULL) == TRANSCRIBE_OK);
    CHECK_MSG(tr_fc_work_bytes(wr) == reserved, "%s: the arena grew after reserve", label);
    CHECK_MSG(memcmp(out, out2, sizeof(float) * T * d) == 0, "%s: reserved arena differs", label);
    float *lent = tr_fc_work_borrow(wr, reserved / sizeof(float));
    CHECK(lent != NULL && ((uintptr_t)lent & 63) == 0 && tr_fc_work_bytes(wr) == reserved);
    CHECK(!tr_fc_work_reserve(L.enc, pool, wr, 0, 0));
    tr_fc_work_free(wr);
    /* pre-encode in chunks of 1 and 3 frames: same values (GEMM shapes
     * differ, so within rounding rather than bitwise) */
    for (int ch = 1; ch <= 3; ch += 2) {
        tr_fc_work *wc = tr_fc_work_new();
        tr_fc_work_set_pre_chunk(wc, ch);
        float *pre2 = malloc(sizeof(float) * T * d);
        st = tr_fc_forward(L.enc, pool, wc, mel, T_mel, out2, pre2, NULL, NULL);
        CHECK(st == TRANSCRIBE_OK);
        double e1 = max_abs_diff(pre2, pre, (long)T * d), e2 = max_abs_diff(out2, out, (long)T * d);
        CHECK_MSG(e1 <= 1e-5 && e2 <= 1e-5, "%s: chunk %d: pre %g out %g", label, ch, e1, e2);
        free(pre2);
        tr_fc_work_free(wc);
    }
    tr_pool_free(pool);
    tr_fc_work_free(w);
    free(mel), free(out), free(pre), free(rout), free(rpre), free(out2);
    unload(&L);
}

static void test_parity(void) {
    fc_synth_cfg c = fc_synth_default();
    parity_case("full, bias, batch norm", &c, 61, 1e-4);
    parity_case("full, 2 query blocks", &c, 600, 1e-4);
    parity_case("full, T_mel 1", &c, 1, 1e-4);
    /* big enough (T * d >= 32768) for the pooled element-wise passes */
    c.d = 64, c.H = 4, c.d_ff = 128, c.n_layers = 1, c.seed = 5;
    parity_case("full, 525 frames, d 64", &c, 4200, 1e-4);

    c = fc_synth_default();
    c.use_bias = false;
    c.xscaling = true;
    c.att_left = 3, c.att_right = 2;
    c.seed = 77;
    parity_case("local 3/2, xscale, no bias", &c, 150, 1e-4);
    c.att_left = 100, c.att_right = 7;
    parity_case("local 100/7 (wider than T)", &c, 90, 1e-4);

    c = fc_synth_default();
    c.style = "chunked_limited";
    c.att_left = 4, c.att_right = 1;
    c.conv_left = 4, c.conv_right = 0;
    c.layer_norm = true;
    c.seed = 31;
    parity_case("chunked_limited, causal", &c, 157, 1e-4);
    c.n_mels = 24;
    parity_case("chunked_limited, odd sizes", &c, 118, 1e-4);
    c.att_left = -1, c.att_right = 2;
    parity_case("chunked_limited, left -1", &c, 118, 1e-4);

    c = fc_synth_default();
    c.style = "chunked_limited_with_rc";
    parity_case("chunked_limited_with_rc", &c, 40, 1e-4);

    c = fc_synth_default();
    c.spk = true;
    parity_case("speaker kernel", &c, 50, 1e-4);
    c.spk_bg = true;
    c.xscaling = true;
    parity_case("speaker + background kernel", &c, 50, 1e-4);

    /* quantized LIN weights: the reference uses the dequantized values; the
     * Q8_0 kernels also quantize the activations to int8 on some CPUs */
    c = fc_synth_default();
    c.d = 64, c.H = 4, c.d_ff = 128, c.lin_type = TR_Q8_0, c.seed = 8;
    parity_case("Q8_0 linear weights", &c, 120, 5e-2);
    c.d = 256, c.H = 4, c.d_ff = 512, c.n_layers = 1, c.lin_type = TR_Q4_K;
    parity_case("Q4_K linear weights", &c, 70, 5e-2);

    c = fc_synth_default();
    c.f16 = true;
    c.H = 4;
    c.seed = 4242;
    parity_case("F16 weights, 4 heads", &c, 77, 1e-4);

    /* other subsampling factors (chunked pre-encode included) */
    c = fc_synth_default();
    c.sub_factor = 2;
    c.n_mels = 20;
    parity_case("factor 2, 20 mels", &c, 61, 1e-4);
    c.sub_factor = 4;
    parity_case("factor 4, 20 mels", &c, 133, 1e-4);
    c.sub_factor = 16;
    c.xscaling = true;
    parity_case("factor 16, 20 mels", &c, 250, 1e-4);
    c = fc_synth_default();
    c.sub_factor = 4;
    c.style = "chunked_limited";
    c.att_left = 4, c.att_right = 1;
    c.conv_left = 4, c.conv_right = 0;
    c.seed = 12;
    parity_case("factor 4, chunked_limited", &c, 101, 1e-4);
}

/* tr_fc_forward_batch: utterances of different lengths packed in one pass
 * give each utterance's single-run rows bit for bit (every length here
 * has > 4 encoder frames, so single runs take the same GEMM path). */
static void batch_case(const char *label, const fc_synth_cfg *cfg) {
    loaded L;
    transcribe_status st = load_cfg(cfg, TR_FC_KEYS_PARAKEET, &L);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: load %d", label, (int)st);
    if (st) {
        unload(&L);
        return;
    }
    enum { NB = 4 };
    const int T_mel[NB] = {61, 150, 37, 97}, d = cfg->d;
    float *mel[NB], *single[NB];
    int rows = 0;
    tr_pool *pool = tr_pool_create(2);
    tr_fc_work *w = tr_fc_work_new();
    for (int i = 0; i < NB; i++) {
        const int T = tr_fc_out_frames(L.enc, T_mel[i]);
        mel[i] = random_mel(cfg->n_mels, T_mel[i], 11u + (uint32_t)i);
        single[i] = malloc(sizeof(float) * T * d);
        CHECK(tr_fc_forward(L.enc, pool, w, mel[i], T_mel[i], single[i], NULL, NULL, NULL) ==
              TRANSCRIBE_OK);
        rows += T;
    }
    float *packed = malloc(sizeof(float) * rows * d);
    tr_fc_work *wb = tr_fc_work_new();
    st = tr_fc_forward_batch(L.enc, pool, wb, NB, (const float *const *)mel, T_mel, packed, NULL,
                             NULL);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: batch forward %d", label, (int)st);
    int off = 0, same = 0;
    for (int i = 0; i < NB; i++) {
        const int T = tr_fc_out_frames(L.enc, T_mel[i]);
        same += memcmp(single[i], packed + (size_t)off * d, sizeof(float) * T * d) == 0;
        off += T;
    }
    printf("%-28s batch of %d: %d bit-identical to single runs\n", label, NB, same);
    CHECK_MSG(same == NB, "%s: %d of %d batch rows differ from single runs", label, NB - same, NB);
    /* a row without frames fails the batch before any work */
    const int bad[2] = {61, 0};
    CHECK(tr_fc_forward_batch(L.enc, pool, wb, 2, (const float *const *)mel, bad, packed, NULL,
                              NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    for (int i = 0; i < NB; i++) free(mel[i]), free(single[i]);
    free(packed);
    tr_fc_work_free(w);
    tr_fc_work_free(wb);
    tr_pool_free(pool);
    unload(&L);
}

static void test_batch(void) {
    fc_synth_cfg c = fc_synth_default();
    batch_case("batch: full", &c);
    c.att_left = 3, c.att_right = 2, c.xscaling = true, c.seed = 77;
    batch_case("batch: local 3/2", &c);
    c = fc_synth_default();
    c.style = "chunked_limited";
    c.att_left = 4, c.att_right = 1, c.conv_left = 4, c.conv_right = 0, c.layer_norm = true;
    batch_case("batch: chunked_limited", &c);
    c = fc_synth_default();
    c.spk = true, c.spk_bg = true;
    batch_case("batch: speaker kernel", &c);
    c = fc_synth_default();
    c.d = 64, c.H = 4, c.d_ff = 128, c.lin_type = TR_Q8_0, c.seed = 8;
    batch_case("batch: Q8_0", &c);
}

static bool abort_now(void *u) {
    int *n = u;
    return ++*n > 1; /* let block 0 run, stop before block 1 */
}

static void test_abort_and_args(void) {
    fc_synth_cfg c = fc_synth_default();
    loaded L;
    CHECK(load_cfg(&c, TR_FC_KEYS_PARAKEET, &L) == TRANSCRIBE_OK);
    float *mel = random_mel(c.n_mels, 40, 3);
    float out[5 * 16];
    tr_fc_work *w = tr_fc_work_new();
    int calls = 0;
    CHECK(tr_fc_forward(L.enc, NULL, w, mel, 40, out, NULL, abort_now, &calls) ==
          TRANSCRIBE_ERR_ABORTED);
    CHECK(calls == 2);
    CHECK(tr_fc_forward(L.enc, NULL, w, mel, 0, out, NULL, NULL, NULL) ==
          TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(tr_fc_forward(L.enc, NULL, w, NULL, 40, out, NULL, NULL, NULL) ==
          TRANSCRIBE_ERR_INVALID_ARG);
    tr_fc_work_free(w);
    tr_fc_work_free(NULL);
    tr_fc_free(NULL);
    free(mel);
    unload(&L);
}

static void expect_gguf_error(const char *label, const fc_synth_cfg *cfg, tr_fc_key_flavor fl) {
    loaded L;
    transcribe_status st = load_cfg(cfg, fl, &L);
    CHECK_MSG(st == TRANSCRIBE_ERR_GGUF && !L.enc, "%s: got %d", label, (int)st);
    unload(&L);
}

static void test_errors(void) {
    fc_synth_cfg c = fc_synth_default();
    c.skip_tensor = "enc.blocks.1.attn.pos_bias_v";
    expect_gguf_error("missing pos_bias_v", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.skip_tensor = "enc.blocks.0.conv.bn.running_var";
    expect_gguf_error("missing running_var", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.skip_tensor = "enc.pre_encode.out.bias";
    expect_gguf_error("missing pre_encode.out.bias", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.misshape_tensor = "enc.blocks.0.conv.depthwise.weight";
    expect_gguf_error("misshaped depthwise", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.misshape_tensor = "enc.pre_encode.out.weight";
    expect_gguf_error("misshaped pre_encode.out", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.n_layers_as_i32 = true;
    expect_gguf_error("n_layers as int32", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.n_layers_key = 60000, c.k = 60001; /* huge claims, only 2 blocks stored */
    expect_gguf_error("n_layers beyond the tensors", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.bad_var = true;
    expect_gguf_error("negative running_var", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.skip_key = "pos_emb_max_len";
    expect_gguf_error("missing pos_emb_max_len", &c, TR_FC_KEYS_PARAKEET);
    c.skip_key = "subsampling_factor";
    expect_gguf_error("missing subsampling_factor", &c, TR_FC_KEYS_PARAKEET);
    c.skip_key = "d_ff";
    expect_gguf_error("missing d_ff", &c, TR_FC_KEYS_CANARY);
    c = fc_synth_default();
    c.bad_style = "chunky";
    expect_gguf_error("bad style", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.bad_choices = true;
    expect_gguf_error("choices mismatch", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.conv_left = 3, c.conv_right = 3; /* 6 != k - 1 */
    expect_gguf_error("conv context", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.sub_factor_key = 6; /* not a power of two */
    expect_gguf_error("subsampling_factor 6", &c, TR_FC_KEYS_PARAKEET);
    c.sub_factor_key = 32; /* five stages: NeMo builds up to 16 */
    expect_gguf_error("subsampling_factor 32", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.sub_factor = 4;
    c.skip_tensor = "enc.pre_encode.conv.3.bias";
    expect_gguf_error("factor 4 without its pointwise bias", &c, TR_FC_KEYS_PARAKEET);
    c = fc_synth_default();
    c.H = 3;
    c.d = 16;
    expect_gguf_error("d % H", &c, TR_FC_KEYS_PARAKEET);

    c = fc_synth_default();
    c.spk = true;
    c.skip_tensor = "enc.spk_kernel.0.3.bias";
    expect_gguf_error("missing speaker kernel bias", &c, TR_FC_KEYS_PARAKEET);

    /* Canary: biases required whatever use_bias says */
    c = fc_synth_default();
    c.prefix = "stt.canary.encoder.";
    c.use_bias_key_false = true;
    loaded L;
    CHECK(load_cfg(&c, TR_FC_KEYS_CANARY, &L) == TRANSCRIBE_OK);
    CHECK(L.enc && L.hp.use_bias && !L.hp.xscaling && L.hp.att_left == -1);
    unload(&L);
    c.use_bias = false; /* no bias tensors at all */
    expect_gguf_error("canary without biases", &c, TR_FC_KEYS_CANARY);
}

/* The two public halves (tr_fc_pre_encode_rows, then tr_fc_forward_rows on its rows) give
 * tr_fc_forward's rows bit for bit; the Sortformer key flavor (biases, x-scaling, full
 * attention, centred padding) loads the biased key set. */
static void test_halves(void) {
    fc_synth_cfg cfg = fc_synth_default();
    cfg.prefix = "stt.sortformer.encoder.";
    cfg.biased_keys_only = true;
    loaded L;
    transcribe_status st = load_cfg(&cfg, TR_FC_KEYS_SORTFORMER, &L);
    CHECK_MSG(st == TRANSCRIBE_OK, "sortformer flavor: load %d", (int)st);
    if (st) {
        unload(&L);
        return;
    }
    CHECK(L.hp.use_bias && L.hp.xscaling && L.hp.att_left == -1 && L.hp.att_right == -1);
    CHECK(L.hp.conv_pad_left == 2 && L.hp.conv_pad_right == 2 && !L.hp.conv_layer_norm);
    const int T_mel = 77, T = tr_fc_out_frames(L.enc, T_mel), d = cfg.d;
    float *mel = random_mel(cfg.n_mels, T_mel, 99u);
    float *a = malloc(sizeof(float) * T * d), *b = malloc(sizeof(float) * T * d);
    tr_fc_work *w = tr_fc_work_new();
    CHECK(tr_fc_forward(L.enc, NULL, w, mel, T_mel, a, NULL, NULL, NULL) == TRANSCRIBE_OK);
    CHECK(tr_fc_pre_encode_rows(L.enc, NULL, w, mel, T_mel, b) == TRANSCRIBE_OK);
    CHECK(tr_fc_forward_rows(L.enc, NULL, w, b, T, NULL, NULL) == TRANSCRIBE_OK);
    CHECK(memcmp(a, b, sizeof(float) * T * d) == 0);
    CHECK(tr_fc_forward_rows(L.enc, NULL, w, b, 0, NULL, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(tr_fc_pre_encode_rows(L.enc, NULL, w, NULL, T_mel, b) == TRANSCRIBE_ERR_INVALID_ARG);
    tr_fc_work_free(w);
    free(mel);
    free(a);
    free(b);
    unload(&L);
}

int main(void) {
    test_rel_shift();
    test_halves();
    test_pos_table();
    test_lengths();
    test_sub_factors();
    test_bn_fold();
    test_parity();
    test_batch();
    test_abort_and_args();
    test_errors();
    return TEST_DONE();
}
