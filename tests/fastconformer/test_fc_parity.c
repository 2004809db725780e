/* FastConformer parity against the PyTorch reference goldens
 * (tools/ref/fastconformer.py via tools/ref/parakeet.py and canary.py): each
 * tiny random-weight GGUF of tests/data/parakeet/<config>/ and
 * tests/data/canary/tiny-canary2/ runs on the jfk mel; the pre-encode output
 * (jfk.pre.npy) and the encoder output (jfk.enc.npy) must match the float64
 * reference.
 *
 * The mel: the golden jfk.mel.npy where the folder has one (tiny-tdt,
 * canary). The 80-mel configs ship no mel golden; their mel comes from our
 * own front end (tr_mel_compute with the file's stt.frontend.* keys), so
 * those rows also carry the front end's float32 error.
 *
 * Bounds (max abs): 1e-3 for an F32 file on the golden mel (the reference's
 * own float32 run is within ~4e-6). The F16 files hold the same, already
 * F16-rounded weights, so the same goldens apply; the bound is 1e-2 (also
 * covering the front-end mel). Actual numbers are printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audio/audio.h"
#include "audio/mel.h"
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

/* Parakeet front end of the file (docs/formats/parakeet.md §6: constant padding) on jfk.wav. */
static float *frontend_mel(const gguf_file *g, tr_pool *pool, int *n_mels, int *T_mel) {
    tr_mel_config mc;
    tr_mel_config_nemo(&mc, 80);
    if (tr_mel_config_from_gguf(&mc, g) != TRANSCRIBE_OK) return NULL;
    mc.pad_mode = TR_PAD_CONSTANT;
    tr_audio a = {0};
    if (tr_audio_load_file(TR_CORPUS_DIR "/samples/jfk.wav", 16000, &a) != TRANSCRIBE_OK)
        return NULL;
    float *mel = NULL;
    if (tr_mel_compute(&mc, a.pcm, a.n, pool, &mel, T_mel) != TRANSCRIBE_OK) mel = NULL;
    tr_audio_free(&a);
    *n_mels = mc.n_mels;
    return mel;
}

typedef struct {
    const char *label, *gguf, *prefix;
    tr_fc_key_flavor flavor;
    const char *mel_npy; /* NULL: our front end */
    const char *pre_npy; /* NULL: no pre-encode golden */
    const char *enc_npy;
    double tol;
} parity_case;

static void run_case(const parity_case *pc, tr_pool *pool) {
    gguf_file *g = NULL;
    tr_fc_hparams hp;
    tr_fc_encoder *enc = NULL;
    npy_array mel = {0}, pre = {0}, ref = {0};
    float *fe_mel = NULL, *out = NULL, *pout = NULL;
    tr_fc_work *w = NULL;
    int n_mels = 0, T_mel = 0;
    CHECK_MSG(tr_gguf_open(pc->gguf, &g) == TRANSCRIBE_OK, "%s: open %s", pc->label, pc->gguf);
    if (!g) goto done;
    CHECK(tr_fc_read_hparams(g, pc->prefix, pc->flavor, &hp) == TRANSCRIBE_OK);
    CHECK(tr_fc_load(g, &hp, &enc) == TRANSCRIBE_OK);
    CHECK_MSG(npy_load(pc->enc_npy, &ref) == 0 && ref.ndim == 2, "%s: %s", pc->label, pc->enc_npy);
    if (pc->pre_npy) CHECK_MSG(npy_load(pc->pre_npy, &pre) == 0, "%s: %s", pc->label, pc->pre_npy);
    const float *m = NULL;
    if (pc->mel_npy) {
        CHECK_MSG(npy_load(pc->mel_npy, &mel) == 0 && mel.ndim == 2, "%s: %s", pc->label,
                  pc->mel_npy);
        if (mel.data) n_mels = (int)mel.shape[0], T_mel = (int)mel.shape[1], m = mel.data;
    } else {
        fe_mel = frontend_mel(g, pool, &n_mels, &T_mel);
        CHECK_MSG(fe_mel != NULL, "%s: front end", pc->label);
        m = fe_mel;
    }
    if (!enc || !m || !ref.data || (pc->pre_npy && !pre.data)) goto done;
    CHECK(n_mels == hp.n_mels);
    const int T = tr_fc_out_frames(enc, T_mel), d = hp.d_model;
    CHECK_MSG(ref.shape[0] == T && ref.shape[1] == d, "%s: golden [%lld, %lld] vs [%d, %d]",
              pc->label, (long long)ref.shape[0], (long long)ref.shape[1], T, d);
    if (ref.shape[0] != T || ref.shape[1] != d || n_mels != hp.n_mels) goto done;
    out = malloc(sizeof(float) * (size_t)T * d);
    pout = malloc(sizeof(float) * (size_t)T * d);
    w = tr_fc_work_new();
    CHECK(tr_fc_forward(enc, pool, w, m, T_mel, out, pout, NULL, NULL) == TRANSCRIBE_OK);
    double ep = pc->pre_npy ? max_abs(pout, pre.data, (long)T * d) : 0.0;
    double eo = max_abs(out, ref.data, (long)T * d);
    printf("%-32s %s mel  T_enc %4d  pre-encode %.3g  encoder %.3g  (bound %g)\n", pc->label,
           pc->mel_npy ? "golden" : "C    ", T, ep, eo, pc->tol);
    CHECK_MSG(ep <= pc->tol && eo <= pc->tol, "%s: pre %g enc %g > %g", pc->label, ep, eo, pc->tol);
done:
    tr_fc_work_free(w);
    free(out);
    free(pout);
    free(fe_mel);
    npy_free(&mel);
    npy_free(&pre);
    npy_free(&ref);
    tr_fc_free(enc);
    tr_gguf_close(g);
}

/* Every parakeet-<cfg>{,-legacy}-{F32,F16}.gguf present in the folder. */
static void parakeet_config(const char *cfg, tr_pool *pool) {
    char dir[512], gg[640], mel[640], pre[640], enc[640], label[96];
    /* TR_FC_PARAKEET_GOLDENS: a folder of freshly generated configs to try */
    const char *root = getenv("TR_FC_PARAKEET_GOLDENS");
    if (root)
        snprintf(dir, sizeof dir, "%s/%s", root, cfg);
    else
        snprintf(dir, sizeof dir, "%s/tests/data/parakeet/%s", TR_SOURCE_DIR, cfg);
    snprintf(enc, sizeof enc, "%s/jfk.enc.npy", dir);
    if (!exists(enc)) {
        printf("%-32s skipped (no goldens in %s)\n", cfg, dir);
        return;
    }
    snprintf(mel, sizeof mel, "%s/jfk.mel.npy", dir);
    snprintf(pre, sizeof pre, "%s/jfk.pre.npy", dir);
    static const char *const kinds[3] = {"F32", "F16", "legacy-F16"};
    int found = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(gg, sizeof gg, "%s/parakeet-%s-%s.gguf", dir, cfg, kinds[i]);
        if (!exists(gg)) continue;
        found++;
        snprintf(label, sizeof label, "parakeet %s %s", cfg, kinds[i]);
        const bool golden_mel = exists(mel);
        parity_case pc = {label,
                          gg,
                          "stt.parakeet.encoder.",
                          TR_FC_KEYS_PARAKEET,
                          golden_mel ? mel : NULL,
                          exists(pre) ? pre : NULL,
                          enc,
                          i == 0 && golden_mel ? F32_TOL : F16_TOL};
        run_case(&pc, pool);
    }
    CHECK_MSG(found > 0, "%s: goldens without a GGUF", dir);
}

/* tiny-canary2 has no encoder->decoder projection, so its jfk.enc.npy is the
 * encoder output itself (tiny-canary's is projected: not ours to check). */
static void canary_config(tr_pool *pool) {
    char dir[512], gg[640], mel[640], enc[640];
    snprintf(dir, sizeof dir, "%s/tests/data/canary/tiny-canary2", TR_SOURCE_DIR);
    snprintf(mel, sizeof mel, "%s/tests/data/canary/jfk.mel.npy", TR_SOURCE_DIR);
    snprintf(enc, sizeof enc, "%s/jfk.enc.npy", dir);
    snprintf(gg, sizeof gg, "%s/tiny-canary2-ref-F32.gguf", dir);
    if (!exists(enc) || !exists(mel) || !exists(gg)) {
        printf("%-32s skipped (no goldens in %s)\n", "canary tiny-canary2", dir);
        return;
    }
    parity_case pc = {"canary tiny-canary2 F32",
                      gg,
                      "stt.canary.encoder.",
                      TR_FC_KEYS_CANARY,
                      mel,
                      NULL,
                      enc,
                      F32_TOL};
    run_case(&pc, pool);
    snprintf(gg, sizeof gg, "%s/tiny-canary2-ref-F16.gguf", dir);
    snprintf(enc, sizeof enc, "%s/jfk.enc.f16.npy", dir);
    if (exists(enc) && exists(gg)) {
        parity_case p16 = {"canary tiny-canary2 F16",
                           gg,
                           "stt.canary.encoder.",
                           TR_FC_KEYS_CANARY,
                           mel,
                           NULL,
                           enc,
                           F16_TOL};
        run_case(&p16, pool);
    }
}

int main(void) {
    tr_pool *pool = tr_pool_create(2);
    parakeet_config("tiny-ctc", pool);
    parakeet_config("tiny-rnnt", pool);
    parakeet_config("tiny-tdt", pool);
    parakeet_config("tiny-ctc-sub2", pool); /* subsampling 2 and 4 */
    parakeet_config("tiny-ctc-sub4", pool);
    canary_config(pool);
    tr_pool_free(pool);
    return TEST_DONE();
}
