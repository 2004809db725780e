/* MedASR without goldens: tiny random files (ma_synth.h, F32 / F16 / Q8_0 weights) against the
 * naive double-precision model of ma_ref.h, which reads the same files: the unpadded clamped
 * log-mel, the subsampler, every block (weighted residuals, rotary attention, even-kernel
 * depthwise conv with batch norm), the output norm and the logits; then the greedy CTC rules
 * of docs/formats/medasr.md §6.2 on constructed logits, the result rows of §6.3 / §7, the frame
 * arithmetic, packed batches equal to single runs and thread-count independence, bit for
 * bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/result.h"
#include "gguf/gguf.h"
#include "ma_ref.h"
#include "ma_synth.h"
#include "models/medasr/medasr.h"
#include "tensor/pool.h"
#include "test_util.h"
#include "transcribe.h"

typedef struct loaded {
    gguf_file *g;
    ma_model *m;
} loaded;

static bool load(const char *path, loaded *L) {
    memset(L, 0, sizeof *L);
    if (tr_gguf_open(path, &L->g) != TRANSCRIBE_OK) return false;
    tr_load_ctx lc = {.path = path, .gguf = L->g};
    return tr_ma_model_load(&lc, &L->m) == TRANSCRIBE_OK;
}

static void unload(loaded *L) {
    tr_ma_model_free(L->m);
    tr_gguf_close(L->g);
}

/* A deterministic test signal: a gliding tone over noise. */
static float *signal(int n, uint32_t seed) {
    float *x = malloc(sizeof(float) * (size_t)n);
    uint32_t s = seed;
    double ph = 0;
    for (int i = 0; i < n; i++) {
        ph += 2.0 * M_PI * (200.0 + 3000.0 * i / n) / 16000.0;
        x[i] = (float)(0.3 * sin(ph) + 0.05 * tr_synth_rand32(&s));
    }
    return x;
}

/* max over rows of (max |got − want| in the row) / max(1, max |want| in the row) */
static double row_err(const float *got, const double *want, int rows, int cols) {
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        double e = 0, s = 1;
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * cols + c;
            double dd = fabs((double)got[i] - want[i]);
            if (!(dd <= e)) e = dd;
            if (fabs(want[i]) > s) s = fabs(want[i]);
        }
        if (!(e / s <= worst)) worst = e / s;
    }
    return worst;
}

static ma_ref_dims ref_dims(const ma_model *m) {
    const ma_hparams *hp = &m->hp;
    ma_ref_dims D = {hp->n_layers,  hp->d_model,     hp->n_heads,     hp->d_ff,
                     hp->kernel,    hp->sub_c,       hp->n_mels,      hp->sub_kernel,
                     hp->n_vocab,   hp->ln_eps,      hp->rope_theta,  hp->ff_res[0],
                     hp->ff_res[1], hp->conv_res[0], hp->conv_res[1], m->mel.log_clamp_min};
    return D;
}

/* Everything of one file against the reference on one signal. */
static void against_ref(const char *tag, const loaded *L, tr_pool *pool, const float *pcm, int n,
                        double tol) {
    const ma_model *m = L->m;
    const ma_ref_dims D = ref_dims(m);
    float *feats = NULL;
    int T_mel = 0;
    CHECK(tr_ma_features(m, pool, pcm, n, &feats, &T_mel) == TRANSCRIBE_OK);
    double *rmel = NULL;
    int rT = ma_ref_mel(L->g, &D, pcm, n, &rmel);
    CHECK_MSG(rT == T_mel && T_mel == tr_ma_mel_frames(m, n), "%s: %d mel frames vs %d", tag, T_mel,
              rT);
    double e = feats ? row_err(feats, rmel, T_mel, D.nm) : 1;
    printf("%s mel [%d x %d] err %.3g\n", tag, T_mel, D.nm, e);
    CHECK_MSG(e <= 1e-4, "%s mel %g", tag, e);
    /* the encoder from our features, so each stage's error is its own */
    for (size_t i = 0; i < (size_t)T_mel * D.nm; i++) rmel[i] = feats[i];
    ma_ref_out R;
    ma_ref_encode(L->g, &D, rmel, T_mel, &R);
    const int T = tr_ma_enc_frames(m, T_mel), d = D.d, V = D.V;
    CHECK_MSG(R.T == T, "%s: %d encoder frames vs %d", tag, T, R.T);
    float *sub = malloc(sizeof(float) * (size_t)T * d), *b0 = malloc(sizeof(float) * (size_t)T * d),
          *b1 = malloc(sizeof(float) * (size_t)T * d), *no = malloc(sizeof(float) * (size_t)T * d),
          *lg = malloc(sizeof(float) * (size_t)T * V);
    ma_taps taps = {
        .sub_out = sub, .block_idx = {0, 1, -1, -1}, .block_out = {b0, b1}, .norm_out = no};
    CHECK(tr_ma_encode(m, pool, feats, 1, &T_mel, lg, &taps, NULL, NULL) == TRANSCRIBE_OK);
    struct {
        const char *name;
        const float *got;
        const double *want;
        int cols;
    } st[] = {{"subsampling.out", sub, R.sub, d},
              {"block.0.out", b0, R.block[0], d},
              {"block.1.out", b1, R.block[1], d},
              {"out_norm.out", no, R.norm, d},
              {"ctc_logits", lg, R.logits, V}};
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++) {
        double err = row_err(st[i].got, st[i].want, T, st[i].cols);
        printf("%s %-16s err %.3g\n", tag, st[i].name, err);
        CHECK_MSG(err <= tol, "%s %s: %g", tag, st[i].name, err);
    }
    /* the greedy ids of our logits equal those of the reference's */
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)T * 4);
    float *rl = malloc(sizeof(float) * (size_t)T * V);
    for (size_t i = 0; i < (size_t)T * V; i++) rl[i] = (float)R.logits[i];
    int n1 = tr_ma_greedy(lg, T, V, 0, ids, ids + T);
    int n2 = tr_ma_greedy(rl, T, V, 0, ids + 2 * T, ids + 3 * T);
    bool same = n1 == n2;
    for (int i = 0; same && i < n1; i++) same = ids[i] == ids[2 * T + i];
    printf("%s greedy: %d ids\n", tag, n1);
    CHECK_MSG(same, "%s greedy ids differ (%d vs %d)", tag, n1, n2);
    free(ids);
    free(rl);
    free(sub);
    free(b0);
    free(b1);
    free(no);
    free(lg);
    ma_ref_out_free(&R);
    free(rmel);
    free(feats);
}

/* docs/formats/medasr.md §8.1: two utterances packed in one pass give each its single run's
 * logits bit for bit, and 1 vs 3 threads agree bit for bit. */
static void packed_and_threads(const loaded *L, tr_pool *p1, tr_pool *p3) {
    const ma_model *m = L->m;
    const int na = 9000, nb = 5200, V = m->hp.n_vocab, M = m->hp.n_mels;
    float *a = signal(na, 3), *b = signal(nb, 5);
    float *fa = NULL, *fb = NULL;
    int Ta = 0, Tb = 0;
    CHECK(tr_ma_features(m, p1, a, na, &fa, &Ta) == TRANSCRIBE_OK);
    CHECK(tr_ma_features(m, p1, b, nb, &fb, &Tb) == TRANSCRIBE_OK);
    const int Ea = tr_ma_enc_frames(m, Ta), Eb = tr_ma_enc_frames(m, Tb);
    float *both = malloc(sizeof(float) * (size_t)(Ta + Tb) * M);
    memcpy(both, fa, sizeof(float) * (size_t)Ta * M);
    memcpy(both + (size_t)Ta * M, fb, sizeof(float) * (size_t)Tb * M);
    float *la = malloc(sizeof(float) * (size_t)Ea * V),
          *lb = malloc(sizeof(float) * (size_t)Eb * V),
          *lab = malloc(sizeof(float) * (size_t)(Ea + Eb) * V),
          *l3 = malloc(sizeof(float) * (size_t)Ea * V);
    const int seg[2] = {Ta, Tb};
    CHECK(tr_ma_encode(m, p1, fa, 1, &Ta, la, NULL, NULL, NULL) == TRANSCRIBE_OK);
    CHECK(tr_ma_encode(m, p1, fb, 1, &Tb, lb, NULL, NULL, NULL) == TRANSCRIBE_OK);
    CHECK(tr_ma_encode(m, p1, both, 2, seg, lab, NULL, NULL, NULL) == TRANSCRIBE_OK);
    CHECK(tr_ma_encode(m, p3, fa, 1, &Ta, l3, NULL, NULL, NULL) == TRANSCRIBE_OK);
    CHECK_MSG(!memcmp(la, lab, sizeof(float) * (size_t)Ea * V), "packed utterance 0 differs");
    CHECK_MSG(!memcmp(lb, lab + (size_t)Ea * V, sizeof(float) * (size_t)Eb * V),
              "packed utterance 1 differs");
    CHECK_MSG(!memcmp(la, l3, sizeof(float) * (size_t)Ea * V), "3 threads differ from 1");
    free(a);
    free(b);
    free(fa);
    free(fb);
    free(both);
    free(la);
    free(lb);
    free(lab);
    free(l3);
}

/* docs/formats/medasr.md §6.2 on constructed logits: strict arg-max (ties → lowest id), blank
 * resets, repeats collapse, ids 1–3 dropped after updating the memory. */
static void greedy_rules(void) {
    enum { V = 6 };
    /* frame winners: 4 4 0 4 2 4 2 2 5 1 1 5 3 [tie 4/5 → 4] */
    const int win[] = {4, 4, 0, 4, 2, 4, 2, 2, 5, 1, 1, 5, 3, -1};
    const int T = (int)(sizeof win / sizeof win[0]);
    float lg[sizeof win / sizeof win[0]][V];
    for (int t = 0; t < T; t++) {
        for (int v = 0; v < V; v++) lg[t][v] = -1.0f;
        if (win[t] >= 0)
            lg[t][win[t]] = 1.0f;
        else
            lg[t][4] = lg[t][5] = 2.0f; /* tie */
    }
    int32_t ids[16], fr[16];
    int n = tr_ma_greedy(&lg[0][0], T, V, 0, ids, fr);
    /* 4@0, (4 repeat), blank, 4@3, (2 dropped), 4@5, (2 dropped, 2 repeat), 5@8, (1 dropped,
     * repeat), 5@11, (3 dropped), 4@13 */
    const int want[] = {4, 4, 4, 5, 5, 4}, wf[] = {0, 3, 5, 8, 11, 13};
    CHECK_MSG(n == 6, "greedy: %d ids", n);
    for (int i = 0; i < n && i < 6; i++) {
        CHECK_MSG(ids[i] == want[i] && fr[i] == wf[i], "greedy id %d: %d@%d, want %d@%d", i, ids[i],
                  fr[i], want[i], wf[i]);
    }
    /* the blank comes from the key: with blank 4, frames 4 4 0 emit only 0 */
    n = tr_ma_greedy(&lg[0][0], 3, V, 4, ids, fr);
    CHECK(n == 1 && ids[0] == 0 && fr[0] == 2);
}

/* docs/formats/medasr.md §6.3 / §7: text, raw text, token rows with raw pieces at 40 ms, words
 * at U+2581, one segment; none for no ids. */
static void result_rows(const ma_model *m) {
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    /* ▁the s ▁cat ed t <0x41> ▁z, then an id past the vocabulary */
    const int32_t ids[] = {4, 6, 7, 8, 15, 14, 13, 40};
    const int32_t fr[] = {2, 3, 7, 8, 9, 12, 20, 21};
    tr_result r;
    tr_result_init(&r);
    CHECK(tr_ma_build_result(m, ids, fr, 8, &p, &r) == TRANSCRIBE_OK);
    CHECK_MSG(!strcmp(tr_result_full_text(&r), "thes catedtA z"), "text '%s'",
              tr_result_full_text(&r));
    CHECK_MSG(!strcmp(tr_result_raw_text(&r), " thes catedtA z"), "raw '%s'",
              tr_result_raw_text(&r));
    CHECK(r.ts_kind == TRANSCRIBE_TIMESTAMPS_TOKEN);
    CHECK(r.n_segs == 1 && r.segs[0].t0_ms == 80 && r.segs[0].t1_ms == 22 * 40);
    CHECK_MSG(r.n_words == 3, "%d words", r.n_words);
    if (r.n_words == 3) {
        CHECK(!strcmp(tr_result_str(&r, r.words[0].text_off), "thes"));
        CHECK(r.words[0].t0_ms == 80 && r.words[0].t1_ms == 160);
        CHECK(!strcmp(tr_result_str(&r, r.words[1].text_off), "catedtA"));
        CHECK(r.words[1].t0_ms == 280 && r.words[1].t1_ms == 13 * 40);
        CHECK(!strcmp(tr_result_str(&r, r.words[2].text_off), "z"));
        CHECK(r.words[2].t1_ms == 22 * 40);
    }
    CHECK(r.n_toks == 8);
    if (r.n_toks == 8) {
        CHECK(!strcmp(tr_result_str(&r, r.toks[0].text_off), "\xE2\x96\x81the"));
        CHECK(r.toks[0].t0_ms == 80 && r.toks[0].t1_ms == 120 && r.toks[0].id == 4);
        CHECK(!strcmp(tr_result_str(&r, r.toks[5].text_off), "<0x41>"));
        CHECK(!strcmp(tr_result_str(&r, r.toks[7].text_off), ""));
    }
    tr_result_free(&r);
    tr_result_init(&r);
    CHECK(tr_ma_build_result(m, ids, fr, 0, &p, &r) == TRANSCRIBE_OK);
    CHECK(r.n_segs == 0 && r.n_toks == 0 && !strcmp(tr_result_full_text(&r), ""));
    tr_result_free(&r);
}

/* docs/formats/medasr.md §4, §5.1: frame counts, 2 320 samples the shortest input. */
static void frames(const ma_model *m) {
    CHECK(tr_ma_mel_frames(m, 399) == 0);
    CHECK(tr_ma_mel_frames(m, 400) == 1);
    CHECK(tr_ma_mel_frames(m, 176000) == 1098);
    CHECK(tr_ma_enc_frames(m, 1098) == 272);
    CHECK(tr_ma_enc_frames(m, 12) == 0);
    CHECK(tr_ma_enc_frames(m, 13) == 1);
    CHECK(tr_ma_enc_frames(m, tr_ma_mel_frames(m, 2319)) == 0);
    CHECK(tr_ma_enc_frames(m, tr_ma_mel_frames(m, 2320)) == 1);
}

int main(void) {
    tr_pool *p1 = tr_pool_create(1), *p3 = tr_pool_create(3);
    char path[512];
    snprintf(path, sizeof path, "%s/ma_unit_%d.gguf", TR_BINARY_DIR, (int)getpid());
    const int n = 16000 + 1234;
    float *pcm = signal(n, 11);
    struct {
        const char *tag;
        int lin, conv;
        double tol;
    } files[] = {{"F32", TR_F32, TR_F32, 1e-4},
                 {"F16", TR_F16, TR_F16, 1e-4},
                 {"Q8_0", TR_Q8_0, TR_F16, 1e-4}};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        ma_synth_cfg c = ma_synth_default();
        c.lin_type = files[f].lin;
        c.conv_type = files[f].conv;
        CHECK(ma_synth_write(path, &c));
        loaded L;
        bool ok = load(path, &L);
        CHECK_MSG(ok, "load %s", files[f].tag);
        if (ok) {
            against_ref(files[f].tag, &L, p3, pcm, n, files[f].tol);
            if (f == 0) {
                /* 6 s: 147 encoder rows, so the subsampler runs in three passes (49 rows each) and,
                 * with blocks of 48 rows, every block stage in row blocks (4 of 36-37 rows) */
                const int n_long = 6 * 16000;
                float *lp = signal(n_long, 13);
                L.m->dims.block_rows = 48;
                against_ref("F32 6 s, row blocks of 48", &L, p3, lp, n_long, files[f].tol);
                L.m->dims.block_rows = 0;
                free(lp);
                packed_and_threads(&L, p1, p3);
                result_rows(L.m);
                frames(L.m);
            }
        }
        unload(&L);
    }
    remove(path);
    greedy_rules();
    free(pcm);
    tr_pool_free(p1);
    tr_pool_free(p3);
    return TEST_DONE();
}
