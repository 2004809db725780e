/* Whisper's speculative decoding on a model whose greedy text loops: the
 * committed tiny model with its final-norm bias pushed toward one token's
 * embedding, so the T = 0 tier repeats that token until the 256-token
 * budget (drafts accepted, and cut short by the budget), then falls back
 * to sampled tiers (not speculative). spec_k_drafts 1, 4 and 15 give the
 * default run's status, text and ids bit for bit, and drafts really were
 * accepted (counted from the tier's debug line through the log sink); on
 * the unpatched model, where the text rarely repeats, likewise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tensor/dtype.h"
#include "test_session.h"
#include "test_util.h"
#include "transcribe.h"
#include "transcribe/whisper.h"

#define MODEL TR_SOURCE_DIR "/tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf"
#define JFK   TR_SOURCE_DIR "/samples/jfk.wav"

static int g_accepted, g_tiers, g_side_tiers;

static void on_log(transcribe_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    int toks, passes, acc, drafted;
    const char *p = strstr(msg, "speculative tier: ");
    if (p && sscanf(p, "speculative tier: %d tokens in %d decoder passes, %d of %d", &toks, &passes,
                    &acc, &drafted) == 4) {
        g_accepted += acc;
        g_tiers++;
    }
    int tiers, steps;
    p = strstr(msg, "fallback tiers side by side: ");
    if (p && sscanf(p, "fallback tiers side by side: %d tiers in %d lockstep steps", &tiers,
                    &steps) == 2)
        g_side_tiers += tiers;
}

/* A copy of MODEL with dec.final_norm.bias = gain * E[tok] / |E[tok]|. */
static bool write_loop_model(const char *path, int tok, float gain) {
    FILE *f = fopen(MODEL, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    bool ok = buf && fread(buf, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    gguf_file *g = NULL;
    if (ok) ok = tr_gguf_open_memory(buf, (size_t)n, &g) == TRANSCRIBE_OK;
    const tr_tensor *b = ok ? tr_gguf_find_tensor(g, "dec.final_norm.bias") : NULL;
    const tr_tensor *e = ok ? tr_gguf_find_tensor(g, "dec.token_embd.weight") : NULL;
    ok = b && e && b->type == TR_F32 && e->type == TR_F16 && b->ne[0] == e->ne[0];
    if (ok) {
        const long D = (long)b->ne[0];
        float row[1024];
        double norm = 0;
        tr_dequantize_row(TR_F16, (const char *)e->data + (size_t)tok * e->nb1, row, D);
        for (long i = 0; i < D; i++) norm += (double)row[i] * row[i];
        float *bias = (float *)(uintptr_t)b->data; /* inside buf */
        for (long i = 0; i < D; i++) bias[i] = (float)(gain * row[i] / sqrt(norm));
    }
    tr_gguf_close(g);
    if (ok) {
        FILE *o = fopen(path, "wb");
        ok = o && fwrite(buf, 1, (size_t)n, o) == (size_t)n;
        if (o) ok = fclose(o) == 0 && ok;
    }
    free(buf);
    return ok;
}

typedef tr_test_run_out run_out;

static run_out run(struct transcribe_session *s, const float *pcm, int n, int k) {
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.spec_k_drafts = k;
    rp.language = "en";
    return tr_test_run_take(s, transcribe_run(s, pcm, n, &rp));
}

static void check_model(const char *path, const float *pcm, int n, bool loops) {
    struct transcribe_session *s = tr_test_open(path, 2, 0, TRANSCRIBE_KV_TYPE_AUTO);
    if (!s) return;
    run_out ref = run(s, pcm, n, 0);
    CHECK_MSG(ref.st == TRANSCRIBE_OK, "%s: status %d", path, ref.st);
    const int ks[3] = {1, 4, 15};
    for (int i = 0; i < 3; i++) {
        g_accepted = g_tiers = 0;
        run_out o = run(s, pcm, n, ks[i]);
        CHECK_MSG(tr_test_run_same(&o, &ref),
                  "%s k %d: status %d/%d, %d/%d tokens, text '%s' vs '%s'", path, ks[i], o.st,
                  ref.st, o.n_tok, ref.n_tok, o.text, ref.text);
        CHECK_MSG(g_tiers > 0, "k %d: no speculative tier ran", ks[i]);
        if (loops) CHECK_MSG(g_accepted > 100, "k %d: %d drafts accepted", ks[i], g_accepted);
        printf("%s k %d: %d greedy tiers, %d drafts accepted\n", loops ? "loop" : "plain", ks[i],
               g_tiers, g_accepted);
        tr_test_run_out_free(&o);
    }
    tr_test_run_out_free(&ref);
    transcribe_session_free(s);
}

/* The fallback tiers after a failed greedy tier: with a fixed seed they run
 * one after another on the run's one generator; with seed 0 side by side in
 * lockstep, each on its own generator. On the loop model the sampled tiers
 * are as peaked as the greedy one, so both give the same ids, text, status
 * and per-window trace (temperature, tiers tried, log-probability,
 * compression). */
static run_out run_seed(struct transcribe_session *s, const float *pcm, int n, uint32_t seed,
                        struct transcribe_whisper_chunk_trace *tr, int *n_tr) {
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.language = "en";
    struct transcribe_whisper_run_ext ext;
    transcribe_whisper_run_ext_init(&ext);
    ext.seed = seed;
    rp.family = &ext.ext;
    run_out o = tr_test_run_take(s, transcribe_run(s, pcm, n, &rp));
    *n_tr = transcribe_get_whisper_chunk_count(s);
    for (int i = 0; i < *n_tr && i < 8; i++) {
        transcribe_whisper_chunk_trace_init(&tr[i]);
        CHECK(transcribe_get_whisper_chunk_trace(s, i, &tr[i]) == TRANSCRIBE_OK);
    }
    return o;
}

static void check_side_by_side(const char *path, const float *pcm, int n) {
    struct transcribe_session *s = tr_test_open(path, 2, 0, TRANSCRIBE_KV_TYPE_AUTO);
    if (!s) return;
    struct transcribe_whisper_chunk_trace a[8], b[8];
    int na = 0, nb = 0;
    g_side_tiers = 0;
    run_out seq = run_seed(s, pcm, n, 1234u, a, &na);
    CHECK_MSG(g_side_tiers == 0, "a fixed seed ran %d tiers side by side", g_side_tiers);
    run_out par = run_seed(s, pcm, n, 0u, b, &nb);
    CHECK_MSG(g_side_tiers == 5, "seed 0: %d tiers side by side, want 5", g_side_tiers);
    CHECK_MSG(tr_test_run_same(&par, &seq), "side by side: status %d/%d, %d/%d tokens", par.st,
              seq.st, par.n_tok, seq.n_tok);
    CHECK(na == nb && na > 0);
    for (int i = 0; i < na && i < nb && i < 8; i++) {
        CHECK_MSG(a[i].n_fallbacks == b[i].n_fallbacks &&
                      a[i].temperature_used == b[i].temperature_used &&
                      fabsf(a[i].avg_logprob - b[i].avg_logprob) < 1e-4f &&
                      fabsf(a[i].compression_ratio - b[i].compression_ratio) < 1e-4f,
                  "window %d: tiers %d/%d, T %g/%g, logprob %g/%g", i, a[i].n_fallbacks,
                  b[i].n_fallbacks, a[i].temperature_used, b[i].temperature_used, a[i].avg_logprob,
                  b[i].avg_logprob);
        printf("window %d: %d fallbacks, T %.1f (sequential and side by side)\n", i,
               a[i].n_fallbacks, a[i].temperature_used);
    }
    tr_test_run_out_free(&seq);
    tr_test_run_out_free(&par);
    transcribe_session_free(s);
}

int main(void) {
    transcribe_log_set(on_log, NULL);
    float *pcm = NULL;
    int n = 0;
    CHECK(transcribe_audio_load_file(JFK, 16000, &pcm, &n) == TRANSCRIBE_OK);
    char loop[1200];
    snprintf(loop, sizeof loop, "%s/whisper_spec_loop.gguf", TR_BINARY_DIR);
    /* token 440: an ordinary text piece of the multilingual vocabulary */
    CHECK(write_loop_model(loop, 440, 3000.0f));
    if (pcm) {
        check_model(MODEL, pcm, n, false);
        check_model(loop, pcm, 5 * 16000, true);
        check_side_by_side(loop, pcm, 5 * 16000);
    }
    remove(loop);
    transcribe_audio_free(pcm);
    transcribe_log_set(NULL, NULL);
    return TEST_DONE();
}
