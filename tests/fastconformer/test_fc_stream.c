/* Cache-aware streaming encoder (docs/formats/parakeet.md §7.8): tiny random
 * chunked_limited encoders with a causal conv, mel pushed in pieces of
 * 1, 3, 7, 8, 13, 50 frames and all at once, must give the rows of the
 * offline forward of the whole input (within float rounding: the chunk's
 * attention sums fewer terms than the masked full one), emitted only in
 * whole chunks before the end; reset gives the same rows again; encoders
 * that cannot stream are refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fc_synth.h"
#include "gguf/gguf.h"
#include "nn/fastconformer.h"
#include "tensor/pool.h"
#include "test_util.h"

typedef struct {
    void *img;
    gguf_file *g;
    tr_fc_hparams hp;
    tr_fc_encoder *enc;
} loaded;

static transcribe_status load_cfg(const fc_synth_cfg *cfg, loaded *L) {
    memset(L, 0, sizeof *L);
    size_t size = 0;
    L->img = fc_synth_build(cfg, &size);
    if (!L->img) return TRANSCRIBE_ERR_OOM;
    transcribe_status st = tr_gguf_open_memory(L->img, size, &L->g);
    if (st) return st;
    st = tr_fc_read_hparams(L->g, "stt.parakeet.encoder.", TR_FC_KEYS_PARAKEET, &L->hp);
    if (st) return st;
    return tr_fc_load(L->g, &L->hp, &L->enc);
}

static void unload(loaded *L) {
    tr_fc_free(L->enc);
    tr_gguf_close(L->g);
    free(L->img);
}

/* streams mel (bin-major [nm][T_mel]) in pieces of `piece` frames; rows
 * into out; returns frames emitted */
static int stream_all(tr_fc_stream *st, tr_pool *pool, const float *mel, int nm, int T_mel,
                      int piece, int d, float *out, int T_cap) {
    float *tm = malloc(sizeof(float) * (size_t)nm * T_mel);
    for (int t = 0; t < T_mel; t++)
        for (int f = 0; f < nm; f++) tm[(size_t)t * nm + f] = mel[(size_t)f * T_mel + t];
    int got = 0;
    for (int t = 0; t <= T_mel; t += piece) {
        const int n = T_mel - t < piece ? T_mel - t : piece;
        const bool last = t + piece >= T_mel;
        const float *rows = NULL;
        int nr = 0;
        CHECK(tr_fc_stream_push(st, pool, tm + (size_t)t * nm, n, last, &rows, &nr) ==
              TRANSCRIBE_OK);
        if (!last) CHECK_MSG(nr % tr_fc_stream_chunk(st) == 0, "partial chunk before the end");
        if (nr > 0 && got + nr <= T_cap)
            memcpy(out + (size_t)got * d, rows, sizeof(float) * nr * d);
        got += nr;
        if (last) break;
    }
    free(tm);
    return got;
}

static void stream_case(const char *label, const fc_synth_cfg *cfg, int T_mel) {
    loaded L;
    transcribe_status st = load_cfg(cfg, &L);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: load %d", label, (int)st);
    if (st) {
        unload(&L);
        return;
    }
    const int d = cfg->d, T = tr_fc_out_frames(L.enc, T_mel);
    uint32_t seed = 99u + (uint32_t)T_mel;
    float *mel = malloc(sizeof(float) * (size_t)cfg->n_mels * T_mel);
    for (long i = 0; i < (long)cfg->n_mels * T_mel; i++) mel[i] = fc_rand(&seed);
    float *ref = malloc(sizeof(float) * (size_t)T * d),
          *out = malloc(sizeof(float) * (size_t)T * d);
    tr_fc_work *w = tr_fc_work_new();
    CHECK(tr_fc_forward(L.enc, NULL, w, mel, T_mel, ref, NULL, NULL, NULL) == TRANSCRIBE_OK);
    tr_fc_stream *fs = NULL;
    CHECK(tr_fc_stream_new(L.enc, -1, -1, &fs) == TRANSCRIBE_OK);
    tr_pool *pool = tr_pool_create(2);
    const int pieces[] = {1, 3, 7, 8, 13, 50, 100000};
    for (size_t i = 0; fs && i < sizeof pieces / sizeof pieces[0]; i++) {
        tr_fc_stream_reset(fs);
        memset(out, 0, sizeof(float) * (size_t)T * d);
        const int got =
            stream_all(fs, i % 2 ? pool : NULL, mel, cfg->n_mels, T_mel, pieces[i], d, out, T);
        CHECK_MSG(got == T, "%s: piece %d: %d frames, offline %d", label, pieces[i], got, T);
        double e = 0;
        for (long j = 0; j < (long)T * d; j++) {
            const double x = fabs((double)out[j] - ref[j]);
            if (!(x <= e)) e = x;
        }
        printf("%-30s T_mel %4d T_enc %3d piece %6d  max |stream - offline| %.2e\n", label, T_mel,
               T, pieces[i], e);
        CHECK_MSG(e <= 1e-4, "%s: piece %d: diff %g", label, pieces[i], e);
        const float *rows;
        int nr;
        CHECK(tr_fc_stream_push(fs, NULL, mel, 1, false, &rows, &nr) ==
              TRANSCRIBE_ERR_INVALID_ARG); /* after the end */
    }
    tr_pool_free(pool);
    tr_fc_stream_free(fs);
    tr_fc_work_free(w);
    free(mel), free(ref), free(out);
    unload(&L);
}

int main(void) {
    fc_synth_cfg c = fc_synth_default();
    c.style = "chunked_limited";
    c.att_left = 4, c.att_right = 1;
    c.conv_left = 4, c.conv_right = 0;
    c.layer_norm = true;
    c.seed = 31;
    stream_case("chunk 2, left 2 chunks", &c, 157);
    stream_case("short: 5 mel frames", &c, 5);
    stream_case("one mel frame", &c, 1);
    c.att_left = 9, c.att_right = 2;
    c.xscaling = true, c.use_bias = false, c.n_mels = 24;
    stream_case("chunk 3, left 3, xscale", &c, 203);
    c.att_left = 0, c.att_right = 0;
    stream_case("chunk 1, no left", &c, 64);
    c = fc_synth_default();
    c.style = "chunked_limited";
    c.att_left = 70, c.att_right = 13, c.conv_left = 4, c.conv_right = 0;
    c.spk = c.spk_bg = true;
    stream_case("70/13, speaker kernel, BN", &c, 400);

    /* what cannot stream is refused */
    c = fc_synth_default();
    loaded L;
    CHECK(load_cfg(&c, &L) == TRANSCRIBE_OK);
    tr_fc_stream *fs = (tr_fc_stream *)1;
    CHECK(tr_fc_stream_new(L.enc, -1, -1, &fs) == TRANSCRIBE_ERR_NOT_IMPLEMENTED && fs == NULL);
    unload(&L);
    c.style = "chunked_limited", c.att_left = 4, c.att_right = 1; /* centred conv */
    CHECK(load_cfg(&c, &L) == TRANSCRIBE_OK);
    CHECK(tr_fc_stream_new(L.enc, -1, -1, &fs) == TRANSCRIBE_ERR_NOT_IMPLEMENTED);
    unload(&L);
    return TEST_DONE();
}
