/* Front ends: FFT exactness against a direct DFT, parity with the numpy
 * goldens of tools/ref/mel_ref.py (max abs error <= 1e-4 per variant),
 * Whisper short/long-form frame counts, thread invariance, baked buffers,
 * GGUF configuration and argument errors. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "audio/fft.h"
#include "audio/mel.h"
#include "audio/mel_internal.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "npy.h"
#include "tensor/dtype.h"
#include "tensor/pool.h"
#include "test_util.h"

static void test_fft(void) {
    int sizes[] = {2, 4, 6, 10, 30, 98, 250, 400, 512, 1024, 882};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        tr_fft *p = tr_fft_create(n);
        CHECK(p != NULL);
        if (!p) continue;
        double *in = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * (n + 2));
        double *scr = malloc(sizeof(double) * tr_fft_scratch_len(p));
        for (int i = 0; i < n; i++) in[i] = sin(0.37 * i * i + 1.0) + 0.1 * i / n;
        tr_fft_real(p, in, out, scr);
        double err = 0, mag = 0;
        for (int k = 0; k <= n / 2; k++) {
            long double re = 0, im = 0;
            for (int j = 0; j < n; j++) {
                long double a = -2.0L * 3.14159265358979323846264338327950288L * j * k / n;
                re += in[j] * cosl(a);
                im += in[j] * sinl(a);
            }
            double e = fabs((double)(out[2 * k] - re)) + fabs((double)(out[2 * k + 1] - im));
            if (e > err) err = e;
            if (fabs((double)re) > mag) mag = fabs((double)re);
        }
        CHECK_MSG(err < 1e-11 * (mag + 1), "fft n=%d err %g", n, err);
        free(in);
        free(out);
        free(scr);
        tr_fft_free(p);
    }
    CHECK(tr_fft_create(401) == NULL);
    CHECK(tr_fft_create(0) == NULL);
    printf("fft: sizes 2..1024 (incl. 400, 882, 98) match the direct DFT\n");
}

typedef struct {
    const char *name, *wav;
    int64_t start, len;
    int kind; /* 0 whisper, 1 parakeet, 2 canary, 3 kaldi */
    int n_mels;
} golden;

static tr_audio load(const char *wav) {
    char path[1024];
    snprintf(path, sizeof path, "%s/samples/%s", TR_CORPUS_DIR, wav);
    tr_audio a = {0};
    CHECK(tr_audio_load_file(path, 0, &a) == TRANSCRIBE_OK);
    return a;
}

static void test_goldens(tr_pool *pool) {
    static const golden g[] = {
        {"jfk_whisper80", "jfk.wav", 0, 160000, 0, 80},
        {"jfk_whisper128", "jfk.wav", 0, 160000, 0, 128},
        {"jfk_parakeet128", "jfk.wav", 0, 160000, 1, 128},
        {"jfk_kaldi80", "jfk.wav", 0, 160000, 3, 80},
        {"ja_whisper80", "ja.wav", 0, 64000, 0, 80},
        {"ja_canary128", "ja.wav", 0, 64000, 2, 128},
        {"ja_kaldi80", "ja.wav", 0, 64000, 3, 80},
        {"we32s_whisper80_long", "whole-earth.wav", 0, 512000, 0, 80},
        {"we_slice_parakeet80", "whole-earth.wav", 320000, 48000, 1, 80},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        char path[1024];
        npy_array ref, meta;
        snprintf(path, sizeof path, "%s/tests/data/audio/%s.npy", TR_SOURCE_DIR, g[i].name);
        int r1 = npy_load(path, &ref);
        snprintf(path, sizeof path, "%s/tests/data/audio/%s.meta.npy", TR_SOURCE_DIR, g[i].name);
        int r2 = npy_load(path, &meta);
        CHECK_MSG(r1 == 0 && r2 == 0, "cannot load golden %s", g[i].name);
        if (r1 || r2) continue;
        tr_audio a = load(g[i].wav);
        CHECK(a.n >= g[i].start + g[i].len);
        if (!a.pcm || a.n < g[i].start + g[i].len) { /* reported above; never read past it */
            tr_audio_free(&a);
            npy_free(&ref);
            npy_free(&meta);
            continue;
        }
        tr_mel_config c;
        if (g[i].kind == 0)
            tr_mel_config_whisper(&c, g[i].n_mels);
        else if (g[i].kind == 3)
            tr_mel_config_kaldi(&c, g[i].n_mels);
        else
            tr_mel_config_nemo(&c, g[i].n_mels);
        if (g[i].kind == 2) c.pad_mode = TR_PAD_REFLECT; /* canary */
        float *out = NULL;
        int nf = 0;
        transcribe_status st =
            g[i].kind == 0 ? tr_mel_whisper(&c, a.pcm + g[i].start, g[i].len, pool, &out, &nf)
                           : tr_mel_compute(&c, a.pcm + g[i].start, g[i].len, pool, &out, &nf);
        const int32_t *m = meta.data;
        int rows = (int)ref.shape[0], keep = (int)ref.shape[1];
        CHECK(st == TRANSCRIBE_OK);
        CHECK_MSG(nf == m[0], "%s: %d frames, golden %d", g[i].name, nf, m[0]);
        CHECK(rows == tr_mel_n_features(&c));
        if (st == TRANSCRIBE_OK && nf == m[0] && rows == tr_mel_n_features(&c)) {
            double err = 0;
            const float *rf = ref.data;
            for (int r = 0; r < rows; r++)
                for (int t = 0; t < keep; t++) {
                    double d = fabs(out[(size_t)r * nf + t] - rf[(size_t)r * keep + t]);
                    if (d > err) err = d;
                }
            printf("golden %-22s [%d x %d] (checked %d frames): max abs err %.2e\n", g[i].name,
                   rows, nf, keep, err);
            CHECK_MSG(err <= 1e-4, "%s: max abs err %g", g[i].name, err);
        }
        free(out);
        tr_audio_free(&a);
        npy_free(&ref);
        npy_free(&meta);
    }
}

/* Same features with 1 and 2 threads, and with baked buffers. */
static void test_threads_and_baked(tr_pool *pool) {
    tr_audio a = load("jfk.wav");
    int variants[] = {0, 1, 3};
    for (int v = 0; v < 3; v++) {
        tr_mel_config c;
        if (variants[v] == 0)
            tr_mel_config_whisper(&c, 80);
        else if (variants[v] == 1)
            tr_mel_config_nemo(&c, 80);
        else
            tr_mel_config_kaldi(&c, 80);
        float *o1 = NULL, *o2 = NULL;
        int n1 = 0, n2 = 0;
        CHECK(tr_mel_compute(&c, a.pcm, a.n, NULL, &o1, &n1) == TRANSCRIBE_OK);
        CHECK(tr_mel_compute(&c, a.pcm, a.n, pool, &o2, &n2) == TRANSCRIBE_OK);
        CHECK(n1 == n2 && o1 && o2 &&
              !memcmp(o1, o2, sizeof(float) * (size_t)n1 * tr_mel_n_features(&c)));
        free(o2);
        if (c.type == TR_FRONTEND_MEL) { /* into the caller's buffer: the same bits */
            const size_t cap = (size_t)n1 * (size_t)tr_mel_n_features(&c);
            float *o3 = malloc(sizeof(float) * cap);
            int n3 = 0;
            CHECK(tr_mel_compute_into(&c, a.pcm, a.n, pool, o3, cap, &n3) == TRANSCRIBE_OK);
            CHECK(n3 == n1 && !memcmp(o1, o3, sizeof(float) * cap));
            CHECK(tr_mel_compute_into(&c, a.pcm, a.n, pool, o3, cap - 1, &n3) ==
                  TRANSCRIBE_ERR_INVALID_ARG);
            CHECK(tr_mel_compute_into(&c, a.pcm, a.n, pool, NULL, cap, &n3) ==
                  TRANSCRIBE_ERR_INVALID_ARG);
            free(o3);
        }
        if (variants[v] != 3) {
            /* bake the same filterbank and window as float tensors would */
            int nb = c.n_fft / 2 + 1;
            double *fb = malloc(sizeof(double) * 80 * nb), *w = malloc(sizeof(double) * 400);
            float *fbf = malloc(sizeof(float) * 80 * nb), *wf = malloc(sizeof(float) * 400);
            tr_mel_filterbank(16000, c.n_fft, 80, 0, 8000, TR_MELSCALE_SLANEY, true, fb);
            tr_mel_window(c.window, 400, w);
            for (int i = 0; i < 80 * nb; i++) fbf[i] = (float)fb[i];
            for (int i = 0; i < 400; i++) wf[i] = (float)w[i];
            c.filterbank = fbf;
            c.baked_window = wf;
            CHECK(tr_mel_compute(&c, a.pcm, a.n, pool, &o2, &n2) == TRANSCRIBE_OK);
            double err = 0;
            for (size_t i = 0; o2 && i < (size_t)n1 * 80; i++)
                if (fabs(o1[i] - o2[i]) > err) err = fabs(o1[i] - o2[i]);
            CHECK_MSG(err < 1e-4, "baked variant %d: err %g", variants[v], err);
            free(o2);
            free(fb);
            free(w);
            free(fbf);
            free(wf);
        }
        free(o1);
    }
    /* Whisper short form is always 3000 frames; long form floor(n/160). */
    tr_mel_config c;
    tr_mel_config_whisper(&c, 80);
    float *o = NULL;
    int nf = 0;
    CHECK(tr_mel_whisper(&c, a.pcm, 1000, pool, &o, &nf) == TRANSCRIBE_OK && nf == 3000);
    free(o);
    CHECK(tr_mel_whisper(&c, a.pcm, 0, pool, &o, &nf) == TRANSCRIBE_OK && nf == 3000);
    free(o);
    float *longpcm = calloc(480161, sizeof(float));
    memcpy(longpcm, a.pcm, sizeof(float) * (size_t)a.n);
    CHECK(tr_mel_whisper(&c, longpcm, 480161, pool, &o, &nf) == TRANSCRIBE_OK && nf == 3001);
    free(o);
    free(longpcm);
    /* Parakeet: 11 s -> 1101 frames, last frame zero; none-normalised too */
    tr_mel_config_nemo(&c, 128);
    CHECK(tr_mel_compute(&c, a.pcm, 176000, pool, &o, &nf) == TRANSCRIBE_OK && nf == 1101);
    CHECK(o && o[1100] == 0.0f && o[(size_t)127 * 1101 + 1100] == 0.0f);
    free(o);
    c.normalize = TR_NORM_NONE;
    CHECK(tr_mel_compute(&c, a.pcm, 176000, pool, &o, &nf) == TRANSCRIBE_OK && nf == 1101);
    CHECK(o && o[1100] == 0.0f && o[1099] != 0.0f);
    free(o);
    c.ceil_frames = true;
    CHECK(tr_mel_compute(&c, a.pcm, 176000, pool, &o, &nf) == TRANSCRIBE_OK && nf == 1100);
    free(o);
    tr_audio_free(&a);
}

static void test_errors(void) {
    float pcm[600] = {0};
    tr_mel_config c;
    float *o = NULL;
    int nf;
    tr_mel_config_whisper(&c, 80);
    CHECK(tr_mel_compute(&c, pcm, 150, NULL, &o, &nf) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(tr_mel_compute(&c, NULL, 100, NULL, &o, &nf) == TRANSCRIBE_ERR_INVALID_ARG);
    tr_mel_config_nemo(&c, 80);
    CHECK(tr_mel_compute(&c, pcm, 159, NULL, &o, &nf) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(tr_mel_compute(&c, pcm, 160, NULL, &o, &nf) == TRANSCRIBE_OK && nf == 2);
    free(o);
    c.n_fft = 401;
    CHECK(tr_mel_compute(&c, pcm, 600, NULL, &o, &nf) == TRANSCRIBE_ERR_INVALID_ARG);
    tr_mel_config_nemo(&c, 80);
    c.win_length = 1000;
    CHECK(tr_mel_compute(&c, pcm, 600, NULL, &o, &nf) == TRANSCRIBE_ERR_INVALID_ARG);
    tr_mel_config_kaldi(&c, 80);
    CHECK(tr_mel_compute(&c, pcm, 399, NULL, &o, &nf) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(tr_mel_compute(&c, pcm, 400, NULL, &o, &nf) == TRANSCRIBE_OK && nf == 1);
    free(o);
    c.apply_cmvn = true;
    CHECK(tr_mel_compute(&c, pcm, 400, NULL, &o, &nf) == TRANSCRIBE_ERR_INVALID_ARG);
    tr_mel_config_whisper(&c, 80);
    c.type = TR_FRONTEND_RAW;
    CHECK(tr_mel_compute(&c, pcm, 600, NULL, &o, &nf) == TRANSCRIBE_ERR_INVALID_ARG);
}

static gguf_file *open_img(gguf_writer *w, void **img) {
    size_t size;
    gguf_file *f = NULL;
    *img = NULL;
    if (tr_gguf_writer_to_memory(w, img, &size) != TRANSCRIBE_OK) return NULL;
    if (tr_gguf_open_memory(*img, size, &f) != TRANSCRIBE_OK) return NULL;
    return f;
}

static void test_gguf(void) {
    gguf_writer *w = tr_gguf_writer_create();
    tr_gguf_writer_set_str(w, "stt.frontend.type", "mel");
    tr_gguf_writer_set_u32(w, "stt.frontend.num_mels", 80);
    tr_gguf_writer_set_u32(w, "stt.frontend.n_fft", 400);
    tr_gguf_writer_set_u32(w, "stt.frontend.win_length", 400);
    tr_gguf_writer_set_u32(w, "stt.frontend.hop_length", 160);
    tr_gguf_writer_set_str(w, "stt.frontend.window", "hann_periodic");
    tr_gguf_writer_set_str(w, "stt.frontend.normalize", "whisper_logmel");
    tr_gguf_writer_set_str(w, "stt.frontend.pad_mode", "reflect");
    tr_gguf_writer_set_f32(w, "stt.frontend.dither", 0.0f);
    tr_gguf_writer_set_f32(w, "stt.frontend.f_max", 8000.0f);
    float *fb = calloc(80 * 201, sizeof(float)), win[400];
    for (int i = 0; i < 400; i++) win[i] = 0.25f;
    fb[5] = 1.0f;
    int64_t ne_fb[2] = {201, 80}, ne_w[1] = {400};
    tr_gguf_writer_add_tensor(w, "frontend.mel_filterbank", TR_F32, 2, ne_fb, fb);
    tr_gguf_writer_add_tensor(w, "frontend.window", TR_F32, 1, ne_w, win);
    void *img;
    gguf_file *f = open_img(w, &img);
    CHECK(f != NULL);
    if (f) {
        tr_mel_config c;
        tr_mel_config_nemo(&c, 128); /* defaults get overridden */
        CHECK(tr_mel_config_from_gguf(&c, f) == TRANSCRIBE_OK);
        CHECK(c.n_mels == 80 && c.n_fft == 400 && c.window == TR_WIN_HANN_PERIODIC);
        CHECK(c.normalize == TR_NORM_PER_UTTERANCE && c.pad_mode == TR_PAD_REFLECT);
        CHECK(c.filterbank && c.filterbank[5] == 1.0f && c.baked_window &&
              c.baked_window[7] == 0.25f);
        tr_gguf_close(f);
    }
    free(img);
    tr_gguf_writer_free(w);
    /* wrongly typed key and misshaped tensor -> GGUF */
    w = tr_gguf_writer_create();
    tr_gguf_writer_set_i32(w, "stt.frontend.num_mels", 80);
    f = open_img(w, &img);
    if (f) {
        tr_mel_config c;
        tr_mel_config_whisper(&c, 80);
        CHECK(tr_mel_config_from_gguf(&c, f) == TRANSCRIBE_ERR_GGUF);
        tr_gguf_close(f);
    }
    free(img);
    tr_gguf_writer_free(w);
    w = tr_gguf_writer_create();
    tr_gguf_writer_add_tensor(w, "frontend.window", TR_F32, 1, (int64_t[]){300}, win);
    f = open_img(w, &img);
    if (f) {
        tr_mel_config c;
        tr_mel_config_whisper(&c, 80);
        CHECK(tr_mel_config_from_gguf(&c, f) == TRANSCRIBE_ERR_GGUF);
        tr_gguf_close(f);
    }
    free(img);
    tr_gguf_writer_free(w);
    free(fb);
}

int main(void) {
    (void)npy_save_f32; /* npy.h helpers are plain static functions */
    tr_pool *pool = tr_pool_create(2);
    test_fft();
    test_goldens(pool);
    test_threads_and_baked(pool);
    test_errors();
    test_gguf();
    tr_pool_free(pool);
    return TEST_DONE();
}
