/* Moonshine Streaming against the float64 PyTorch reference
 * (tools/ref/moonshine_streaming.py, goldens in
 * tests/data/moonshine_streaming/tiny, written from the spec by another
 * engineer): the front end (compression, linear, conv1), conv2, encoder
 * block 0, the encoder output, the adapter, decoder layer 0's cross K / V,
 * the logits of every step over the reference's ids, and ids, status, text
 * and raw text through the public API on the F32, F16 and Q8_0 files with F32
 * and F16 caches, for the 2.5 s clip (30 tokens + EOS), its odd-length cut
 * and the 1-sample clip (one frame; 24 tokens, the generation budget:
 * OUTPUT_TRUNCATED); the clips as one batch. Streams are test_mss_stream. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "models/moonshine_streaming/mss.h"
#include "mss_json.h"
#include "npy.h"
#include "parity.h"
#include "tensor/pool.h"
#include "test_util.h"
#include "transcribe.h"

static tr_pool *g_pool;
static char *g_decode_json;

static void compare(const char *name, const float *got, int rows, int cols, double tol) {
    tr_compare_npy(MSS_DIR, name, got, rows, cols, tol, false);
}

typedef struct golden {
    int32_t ids[256];
    int n_ids;
    char text[1024], raw[1024], status[48];
} golden;

static bool golden_load(const char *which, golden *g) {
    memset(g, 0, sizeof *g);
    const char *o = tr_json_obj(g_decode_json, which);
    if (!o) return false;
    const char *e = tr_json_obj_end(o);
    g->n_ids = tr_json_ints(o, e, "ids", g->ids, 256);
    tr_json_str(o, e, "text", g->text, sizeof g->text);
    tr_json_str(o, e, "raw_text", g->raw, sizeof g->raw);
    tr_json_str(o, e, "status", g->status, sizeof g->status);
    return g->n_ids >= 0;
}

static float *load_clip(const char *file, int *n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.wav", MSS_DATA, file);
    float *pcm = NULL;
    *n = 0;
    CHECK_MSG(transcribe_audio_load_file(path, 16000, &pcm, n) == TRANSCRIBE_OK, "%s", path);
    return pcm;
}

/* One encoder stage of the whole clip (mss_enc.stop): its rows. */
static const mss_rows *stage(mss_session *s, const float *pcm, int n, int stop) {
    tr_mss_enc_reset(&s->enc);
    s->enc.stop = stop;
    transcribe_status st = tr_mss_enc_push(&s->enc, g_pool, pcm, n, true, NULL, NULL);
    s->enc.stop = 0;
    CHECK(st == TRANSCRIBE_OK);
    return stop == 1 ? &s->enc.c1_in : stop == 2 ? &s->enc.c2_in : &s->enc.x[stop - 3];
}

static void tensors(const char *dtype, const char *clip, const float *pcm, int n) {
    char path[512], name[128];
    snprintf(path, sizeof path, "%s/moonshine-streaming-tiny-ref-%s.gguf", MSS_DIR, dtype);
    gguf_file *g = NULL;
    mss_model *m = NULL;
    mss_session *s = NULL;
    CHECK(tr_gguf_open(path, &g) == TRANSCRIBE_OK);
    tr_load_ctx lc = {.path = path, .gguf = g};
    CHECK(g && tr_mss_model_load(&lc, &m) == TRANSCRIBE_OK);
    tr_session_cfg cfg = {.n_threads = 2, .kv_type = TRANSCRIBE_KV_TYPE_F32, .pool = g_pool};
    CHECK(m && tr_mss_session_create(m, &cfg, &s) == TRANSCRIBE_OK);
    if (!s) goto done;
    const mss_hparams *hp = &m->hp;
    const int e = hp->enc_d, D = hp->dec_d, V = hp->n_vocab;
    /* Q8_0 weights against a single row (every decode step, a one-frame
     * clip's encoder) multiply int8-quantized activations as ggml's Q8_0 dot
     * does: ~1 % of the values' range off the float products (ids exact:
     * margins >= 9). Everything else is held to 1e-3 (measured ~1e-5). */
    const bool q8 = !strcmp(dtype, "Q8_0");
    const int64_t T = tr_mss_enc_frames(hp, n);
    const double tol = q8 && T == 1 ? 5e-2 : 1e-3;
    if (!strcmp(dtype, "F32") && !strcmp(clip, "clip")) {
        const mss_rows *r = stage(s, pcm, n, 1);
        compare("F32_clip_linear_out", r->v, r->n, e, 1e-4);
        r = stage(s, pcm, n, 2);
        compare("F32_clip_conv1_out", r->v, r->n, 2 * e, 1e-4);
    }
    const mss_rows *r = stage(s, pcm, n, 3);
    snprintf(name, sizeof name, "%s_%s_conv2_out", dtype, clip);
    compare(name, r->v, r->n, e, tol);
    r = stage(s, pcm, n, 4);
    snprintf(name, sizeof name, "%s_%s_block0_out", dtype, clip);
    compare(name, r->v, r->n, e, tol);
    /* encoder output (the stage before the adapter) */
    tr_mss_enc_reset(&s->enc);
    CHECK(tr_mss_enc_push(&s->enc, g_pool, pcm, n, true, NULL, NULL) == TRANSCRIBE_OK);
    snprintf(name, sizeof name, "%s_%s_enc_out", dtype, clip);
    compare(name, s->enc.out.v, s->enc.out.n, e, tol);
    /* the adapter: (enc + pos) · projᵀ, through the cross path's scratch */
    int Te = 0;
    CHECK(tr_mss_encode(s, pcm, n, &Te, NULL, NULL) == TRANSCRIBE_OK);
    CHECK(Te == (int)T);
    snprintf(name, sizeof name, "%s_%s_adapter_out", dtype, clip);
    compare(name, s->adapt + (size_t)Te * e, Te, D, tol);
    float *k0 = malloc(sizeof(float) * (size_t)Te * D),
          *v0 = malloc(sizeof(float) * (size_t)Te * D);
    tr_nn_cross_rows(s->ck, s->cap_frames, (size_t)Te, &s->m->msd.dec.dims, k0);
    tr_nn_cross_rows(s->cv, s->cap_frames, (size_t)Te, &s->m->msd.dec.dims, v0);
    snprintf(name, sizeof name, "%s_%s_cross_k0", dtype, clip);
    compare(name, k0, Te, D, tol);
    snprintf(name, sizeof name, "%s_%s_cross_v0", dtype, clip);
    compare(name, v0, Te, D, tol);
    free(k0);
    free(v0);

    /* logits of every step over [start] + the reference's ids */
    golden gd;
    snprintf(name, sizeof name, "%s_%s", dtype, clip);
    CHECK_MSG(golden_load(name, &gd), "decode.json has no %s", name);
    const bool eos = !strcmp(gd.status, "OK");
    const int steps = gd.n_ids + (eos ? 1 : 0);
    snprintf(path, sizeof path, "%s/%s_%s_logits.npy", MSS_DIR, dtype, clip);
    npy_array a;
    if (npy_load(path, &a) == 0) {
        CHECK(a.ndim == 2 && a.shape[1] == V && a.shape[0] == steps);
        const double range = tr_max_abs(a.data, a.n);
        const double ltol = q8 ? 0.02 * range : 1e-3;
        double err = 0;
        int32_t ids[257];
        ids[0] = hp->start_id;
        memcpy(ids + 1, gd.ids, sizeof(int32_t) * (size_t)gd.n_ids);
        for (int j = 0; j < (int)a.shape[0]; j++) {
            const tr_ed_seq seq = {.rows = 1,
                                   .n_past = j,
                                   .n_src = Te,
                                   .kv = &s->kv,
                                   .ck = s->ck,
                                   .cv = s->cv,
                                   .cross_stride = s->cap_frames * (size_t)D,
                                   .cross_rows = s->cap_frames,
                                   .ids = &ids[j]};
            tr_ed_step(g_pool, &m->msd.dec, 1, &seq, s->dec_x, s->dec_scratch, s->logits);
            err = fmax(err, tr_max_abs_err(s->logits, (const float *)a.data + (size_t)j * V, V));
        }
        snprintf(name, sizeof name, "%s_%s_logits", dtype, clip);
        printf("%-28s [%d, %d] max abs err %.3g (tolerance %.3g)\n", name, (int)a.shape[0], V, err,
               ltol);
        CHECK_MSG(err <= ltol, "%s: %g", name, err);
        npy_free(&a);
    } else {
        CHECK_MSG(false, "cannot read %s", path);
    }
done:
    tr_mss_session_free(s);
    tr_mss_model_free(m);
    tr_gguf_close(g);
}

static void decode(const char *dtype, const char *clip, const char *gname, const float *pcm, int n,
                   transcribe_kv_type kv) {
    char path[512], name[64];
    snprintf(path, sizeof path, "%s/moonshine-streaming-tiny-ref-%s.gguf", MSS_DIR, dtype);
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = NULL;
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.kv_type = kv;
    CHECK(transcribe_model_load_file(path, NULL, &m) == TRANSCRIBE_OK);
    CHECK(m && transcribe_session_init(m, &sp, &s) == TRANSCRIBE_OK);
    if (!s) {
        transcribe_model_free(m);
        return;
    }
    golden g;
    snprintf(name, sizeof name, "%s_%s", dtype, gname);
    CHECK_MSG(golden_load(name, &g), "decode.json has no %s", name);
    const transcribe_status want =
        !strcmp(g.status, "OK") ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    const transcribe_status st = transcribe_run(s, pcm, n, NULL);
    CHECK_MSG(st == want, "%s %s: status %d, want %s", name, clip, st, g.status);
    CHECK(transcribe_was_truncated(s) == (want == TRANSCRIBE_ERR_OUTPUT_TRUNCATED));
    const int nt = transcribe_n_tokens(s);
    bool same = nt == g.n_ids;
    for (int k = 0; same && k < nt; k++) {
        struct transcribe_token t;
        transcribe_token_init(&t);
        same = transcribe_get_token(s, k, &t) == TRANSCRIBE_OK && t.id == g.ids[k];
    }
    CHECK_MSG(same, "%s (kv %d): %d ids, want %d", name, kv, nt, g.n_ids);
    const char *txt = transcribe_full_text(s), *raw = transcribe_raw_text(s);
    CHECK_MSG(txt && !strcmp(txt, g.text), "%s text [%s] want [%s]", name, txt ? txt : "", g.text);
    CHECK_MSG(raw && !strcmp(raw, g.raw), "%s raw [%s] want [%s]", name, raw ? raw : "", g.raw);
    CHECK(transcribe_n_segments(s) == (g.n_ids > 0 ? 1 : 0));
    if (kv == TRANSCRIBE_KV_TYPE_AUTO)
        printf("%s: %d tokens, status %d: %.80s\n", name, nt, st, txt ? txt : "");
    transcribe_session_free(s);
    transcribe_model_free(m);
}

static void batch(const char *dtype, float *const *pcm, const int *n) {
    char path[512], name[64];
    snprintf(path, sizeof path, "%s/moonshine-streaming-tiny-ref-%s.gguf", MSS_DIR, dtype);
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_model_load_file(path, NULL, &m) == TRANSCRIBE_OK);
    CHECK(m && transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    static const char *const gn[3] = {"clip", "clip_odd", "clip_min"};
    if (s) {
        transcribe_run_batch(s, (const float *const *)pcm, n, 3, NULL);
        for (int i = 0; i < 3; i++) {
            golden g;
            snprintf(name, sizeof name, "%s_%s", dtype, gn[i]);
            CHECK(golden_load(name, &g));
            const transcribe_status want =
                !strcmp(g.status, "OK") ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
            CHECK_MSG(transcribe_batch_status(s, i) == want, "batch %s %d", dtype, i);
            const char *t = transcribe_batch_full_text(s, i);
            CHECK_MSG(t && !strcmp(t, g.text), "batch %s %d: [%s]", dtype, i, t ? t : "");
            CHECK(transcribe_batch_n_tokens(s, i) == g.n_ids);
        }
    }
    transcribe_session_free(s);
    transcribe_model_free(m);
}

int main(void) {
    if (!tr_test_file_exists(MSS_DIR "/moonshine-streaming-tiny-ref-F32.gguf")) {
        printf("skipped: the reference files are missing\n");
        return 0;
    }
    g_decode_json = tr_test_read_text(MSS_DIR "/decode.json", NULL);
    CHECK(g_decode_json != NULL);
    if (!g_decode_json) return TEST_DONE();
    g_pool = tr_pool_create(2);
    static const char *const dtypes[3] = {"F32", "F16", "Q8_0"};
    int n[3] = {0, 0, 0};
    float *pcm[3] = {load_clip("clip", &n[0]), NULL, load_clip("clip_min", &n[2])};
    if (pcm[0] && pcm[2]) {
        n[1] = 39900; /* decode.json's clip_odd: the clip's first 39 900 samples */
        pcm[1] = pcm[0];
        static const char *const clips[3] = {"clip", "clip_odd", "clip_min"};
        for (int d = 0; d < 3; d++) {
            tensors(dtypes[d], "clip", pcm[0], n[0]);
            tensors(dtypes[d], "clip_min", pcm[2], n[2]);
            for (int c = 0; c < 3; c++) {
                decode(dtypes[d], clips[c], clips[c], pcm[c], n[c], TRANSCRIBE_KV_TYPE_AUTO);
                decode(dtypes[d], clips[c], clips[c], pcm[c], n[c], TRANSCRIBE_KV_TYPE_F16);
            }
            batch(dtypes[d], pcm, n);
        }
    }
    transcribe_audio_free(pcm[0]);
    transcribe_audio_free(pcm[2]);
    free(g_decode_json);
    tr_pool_free(g_pool);
    return TEST_DONE();
}
