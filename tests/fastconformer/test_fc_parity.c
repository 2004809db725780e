/* FastConformer parity against the PyTorch reference goldens
 * (tools/ref/fastconformer.py via tools/ref/parakeet.py and canary.py): the
 * tiny random-weight GGUFs of tests/data/parakeet/<config>/ and
 * tests/data/canary/tiny-canary2/ run on the golden jfk mel; the pre-encode
 * output and the encoder output must match the float64 reference.
 *
 * Bounds: F32 files 1e-3 max abs (the reference's own float32 run is within
 * ~2e-6). The F16 files hold the same, already F16-rounded weights, so only
 * our kernels' treatment of F16 rows differs: 1e-2. Actual numbers are
 * printed. A config whose folder is absent is reported as skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf/gguf.h"
#include "nn/fastconformer.h"
#include "npy.h"
#include "tensor/pool.h"
#include "test_util.h"

#define F32_TOL 1e-3
#define F16_TOL 1e-2

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static double max_abs(const float *a, const float *b, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= m)) m = e;
    }
    return m;
}

/* One GGUF against its goldens; pre_path may be NULL. */
static void run_file(const char *label, const char *gguf_path, const char *prefix,
                     tr_fc_key_flavor flavor, const char *mel_path, const char *pre_path,
                     const char *enc_path, double tol, tr_pool *pool) {
    gguf_file *g = NULL;
    tr_fc_hparams hp;
    tr_fc_encoder *enc = NULL;
    npy_array mel = {0}, pre = {0}, ref = {0};
    float *out = NULL, *pout = NULL;
    tr_fc_work *w = NULL;
    CHECK_MSG(gguf_open(gguf_path, &g) == TRANSCRIBE_OK, "%s: open %s", label, gguf_path);
    if (!g) goto done;
    CHECK(tr_fc_read_hparams(g, prefix, flavor, &hp) == TRANSCRIBE_OK);
    CHECK(tr_fc_load(g, &hp, &enc) == TRANSCRIBE_OK);
    CHECK_MSG(npy_load(mel_path, &mel) == 0 && mel.ndim == 2, "%s: %s", label, mel_path);
    CHECK_MSG(npy_load(enc_path, &ref) == 0 && ref.ndim == 2, "%s: %s", label, enc_path);
    if (pre_path) CHECK_MSG(npy_load(pre_path, &pre) == 0, "%s: %s", label, pre_path);
    if (!enc || !mel.data || !ref.data || (pre_path && !pre.data)) goto done;
    CHECK(mel.shape[0] == hp.n_mels);
    const int T_mel = (int)mel.shape[1], T = tr_fc_out_frames(enc, T_mel), d = hp.d_model;
    CHECK_MSG(ref.shape[0] == T && ref.shape[1] == d, "%s: golden [%lld, %lld] vs [%d, %d]", label,
              (long long)ref.shape[0], (long long)ref.shape[1], T, d);
    if (ref.shape[0] != T || ref.shape[1] != d) goto done;
    out = malloc(sizeof(float) * (size_t)T * d);
    pout = malloc(sizeof(float) * (size_t)T * d);
    w = tr_fc_work_new();
    CHECK(tr_fc_forward(enc, pool, w, mel.data, T_mel, out, pout, NULL, NULL) == TRANSCRIBE_OK);
    double ep = pre_path ? max_abs(pout, pre.data, (long)T * d) : 0.0;
    double eo = max_abs(out, ref.data, (long)T * d);
    double mag = 0;
    for (long i = 0; i < (long)T * d; i++)
        if (fabs(((float *)ref.data)[i]) > mag) mag = fabs(((float *)ref.data)[i]);
    printf("%-26s T_enc %4d  pre-encode %.3g  encoder %.3g  (max |enc| %.3g, bound %g)\n", label, T,
           ep, eo, mag, tol);
    CHECK_MSG(ep <= tol && eo <= tol, "%s: pre %g enc %g > %g", label, ep, eo, tol);
done:
    tr_fc_work_free(w);
    free(out);
    free(pout);
    npy_free(&mel);
    npy_free(&pre);
    npy_free(&ref);
    tr_fc_free(enc);
    gguf_close(g);
}

static void parakeet_config(const char *cfg, tr_pool *pool) {
    char dir[512], gg[640], mel[640], pre[640], enc[640], label[96];
    /* TR_FC_PARAKEET_GOLDENS: a folder of freshly generated configs to try */
    const char *root = getenv("TR_FC_PARAKEET_GOLDENS");
    if (root)
        snprintf(dir, sizeof dir, "%s/%s", root, cfg);
    else
        snprintf(dir, sizeof dir, "%s/tests/data/parakeet/%s", TR_SOURCE_DIR, cfg);
    snprintf(mel, sizeof mel, "%s/jfk.mel.npy", dir);
    if (!exists(mel)) {
        printf("%-26s skipped (no goldens in %s)\n", cfg, dir);
        return;
    }
    snprintf(pre, sizeof pre, "%s/jfk.pre.npy", dir);
    snprintf(enc, sizeof enc, "%s/jfk.enc.npy", dir);
    static const char *const dts[2] = {"F32", "F16"};
    for (int i = 0; i < 2; i++) {
        snprintf(gg, sizeof gg, "%s/parakeet-%s-%s.gguf", dir, cfg, dts[i]);
        snprintf(label, sizeof label, "parakeet %s %s", cfg, dts[i]);
        run_file(label, gg, "stt.parakeet.encoder.", TR_FC_KEYS_PARAKEET, mel,
                 exists(pre) ? pre : NULL, enc, i ? F16_TOL : F32_TOL, pool);
    }
}

/* tiny-canary2 has no encoder->decoder projection, so its jfk.enc.npy is the
 * encoder output itself (tiny-canary's is projected: not ours to check). */
static void canary_config(tr_pool *pool) {
    char dir[512], gg[640], mel[640], enc[640];
    snprintf(dir, sizeof dir, "%s/tests/data/canary/tiny-canary2", TR_SOURCE_DIR);
    snprintf(mel, sizeof mel, "%s/tests/data/canary/jfk.mel.npy", TR_SOURCE_DIR);
    snprintf(enc, sizeof enc, "%s/jfk.enc.npy", dir);
    if (!exists(enc) || !exists(mel)) {
        printf("%-26s skipped (no goldens in %s)\n", "canary tiny-canary2", dir);
        return;
    }
    snprintf(gg, sizeof gg, "%s/tiny-canary2-ref-F32.gguf", dir);
    run_file("canary tiny-canary2 F32", gg, "stt.canary.encoder.", TR_FC_KEYS_CANARY, mel, NULL,
             enc, F32_TOL, pool);
    snprintf(gg, sizeof gg, "%s/tiny-canary2-ref-F16.gguf", dir);
    snprintf(enc, sizeof enc, "%s/jfk.enc.f16.npy", dir);
    if (exists(enc))
        run_file("canary tiny-canary2 F16", gg, "stt.canary.encoder.", TR_FC_KEYS_CANARY, mel, NULL,
                 enc, F16_TOL, pool);
}

int main(void) {
    tr_pool *pool = tr_pool_create(2);
    parakeet_config("tiny-ctc", pool);
    parakeet_config("tiny-rnnt", pool);
    parakeet_config("tiny-tdt", pool);
    canary_config(pool);
    tr_pool_free(pool);
    return TEST_DONE();
}
