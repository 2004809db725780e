/* Whisper parity against the independent PyTorch reference (tools/ref/
 * whisper.py, float64) on its random "tiny" model (tests/data/whisper/tiny):
 *   - log-mel, encoder output and first-step logits (internal entry points),
 *     for the published F16 file and F32 / Q8_0 copies made here;
 *   - greedy decodes through the public API: segments, full text, detected
 *     language and per-window telemetry for jfk (en, auto, translate) and
 *     whole-earth (long form), identical for F32 and F16 weights, F32 and
 *     F16 KV caches, and the legacy .bin file.
 * Tolerances (stated once here): mel 2e-4 abs (float32 FFT vs float64);
 * encoder F32 1e-3 abs; first-step logits 3e-6 × max|logit| (~2.8e-3 abs:
 * the model's final-norm gain ~40 spreads logits to |l| ~ 900, so float32
 * rounding alone is ~1e-3; PyTorch float32 on the same model: 4.6e-4);
 * the F16 file equals its F32 copy (the reference rounds weights to F16
 * first); Q8_0: encoder 0.05 abs, logits 5 % of max|logit|. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "gguf/ggml_bin.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "models/whisper/whisper.h"
#include "npy.h"
#include "tensor/dtype.h"
#include "test_util.h"
#include "wh_loaded.h"
#include "text/tokenizer.h"
#include "transcribe.h"
#include "transcribe/whisper.h"

#define DATA TR_SOURCE_DIR "/tests/data/whisper/tiny/"

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t r = fread(s, 1, (size_t)n, f);
    s[r] = 0;
    fclose(f);
    return s;
}

/* F32 (lin_type = F32) or quantized copy of the F16 reference file. */
static bool make_copy(const char *src_path, const char *dst_path, int lin_type) {
    gguf_file *g = NULL;
    if (tr_gguf_open(src_path, &g) != TRANSCRIBE_OK) return false;
    gguf_writer *w = tr_gguf_writer_create();
    for (int64_t i = 0; i < tr_gguf_n_kv(g); i++) tr_gguf_writer_copy_kv(w, g, i);
    bool ok = true;
    for (int64_t i = 0; i < tr_gguf_n_tensors(g) && ok; i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        int64_t n = tr_tensor_nelements(t), rows = n / t->ne[0];
        float *f = malloc((size_t)n * sizeof(float));
        for (int64_t r = 0; r < rows; r++)
            tr_dequantize_row(t->type, (const char *)t->data + r * t->nb1, f + r * t->ne[0],
                              t->ne[0]);
        bool conv = strstr(t->name, "conv") != NULL;
        int type = TR_F32;
        if (t->type != TR_F32 && !conv && t->ne[0] % 32 == 0) type = lin_type;
        void *buf = malloc(tr_row_bytes(type, t->ne[0]) * (size_t)rows);
        for (int64_t r = 0; r < rows; r++) {
            char *dst = (char *)buf + r * tr_row_bytes(type, t->ne[0]);
            if (type == TR_F32)
                memcpy(dst, f + r * t->ne[0], (size_t)t->ne[0] * sizeof(float));
            else
                ok = ok && tr_quantize_row(type, f + r * t->ne[0], dst, t->ne[0]);
        }
        ok = ok && tr_gguf_writer_add_tensor(w, t->name, type, t->n_dims, t->ne, buf);
        free(buf);
        free(f);
    }
    ok = ok && tr_gguf_writer_write(w, dst_path) == TRANSCRIBE_OK;
    tr_gguf_writer_free(w);
    tr_gguf_close(g);
    return ok;
}

/* Canonical GGUF name → whisper.cpp legacy name (docs/formats/gguf.md §11.4). */
static void legacy_of(const char *name, char *out, size_t cap) {
    static const char *const rep[][2] = {
        {"enc.pos_emb.weight", "encoder.positional_embedding"},
        {"dec.pos_emb.weight", "decoder.positional_embedding"},
        {"dec.token_embd.weight", "decoder.token_embedding.weight"},
        {"enc.conv.0.", "encoder.conv1."},
        {"enc.conv.1.", "encoder.conv2."},
        {"enc.final_norm.", "encoder.ln_post."},
        {"dec.final_norm.", "decoder.ln."},
        {".cross_attn.q.", ".cross_attn.query."},
        {".cross_attn.k.", ".cross_attn.key."},
        {".cross_attn.v.", ".cross_attn.value."},
        {".self_attn.", ".attn."},
        {".attn.q.", ".attn.query."},
        {".attn.k.", ".attn.key."},
        {".attn.v.", ".attn.value."},
        {".norm_attn.", ".attn_ln."},
        {".norm_self.", ".attn_ln."},
        {".norm_cross.", ".cross_attn_ln."},
        {".norm_ffn.", ".mlp_ln."},
        {".ffn.fc1.", ".mlp.0."},
        {".ffn.fc2.", ".mlp.2."},
        {"enc.blocks.", "encoder.blocks."},
        {"dec.blocks.", "decoder.blocks."},
    };
    char a[256], b[256];
    snprintf(a, sizeof a, "%s", name);
    for (size_t k = 0; k < sizeof rep / sizeof rep[0]; k++) {
        char *p = strstr(a, rep[k][0]);
        if (!p) continue;
        snprintf(b, sizeof b, "%.*s%s%s", (int)(p - a), a, rep[k][1], p + strlen(rep[k][0]));
        snprintf(a, sizeof a, "%s", b);
    }
    snprintf(out, cap, "%s", a);
}

/* Legacy .bin holding exactly the GGUF's weights (vocabulary from the
 * shared weightless vocabulary file), for the .bin-equals-GGUF check. */
static bool make_bin(const char *src_path, const char *dst_path) {
    gguf_file *g = NULL;
    tr_ggml_bin *voc = NULL;
    if (tr_gguf_open(src_path, &g) != TRANSCRIBE_OK) return false;
    if (tr_ggml_bin_open(TR_CORPUS_DIR "/vocab/whisper-multilingual-vocab.ggml.bin", &voc) !=
        TRANSCRIBE_OK) {
        tr_gguf_close(g);
        return false;
    }
    FILE *f = fopen(dst_path, "wb");
    bool ok = f != NULL;
#define W32(v)                                                                                     \
    do {                                                                                           \
        int32_t _v = (int32_t)(v);                                                                 \
        ok = ok && fwrite(&_v, 4, 1, f) == 1;                                                      \
    } while (0)
    uint32_t u[10] = {0};
    const char *keys[] = {
        "stt.whisper.decoder.vocab_size", "stt.whisper.encoder.max_source_positions",
        "stt.whisper.encoder.d_model",    "stt.whisper.encoder.n_heads",
        "stt.whisper.encoder.n_layers",   "stt.whisper.decoder.max_target_positions",
        "stt.whisper.decoder.d_model",    "stt.whisper.decoder.n_heads",
        "stt.whisper.decoder.n_layers",   "stt.whisper.encoder.num_mel_bins"};
    for (int i = 0; i < 10; i++) ok = ok && tr_gguf_get_u32(g, keys[i], &u[i]) == 1;
    W32(0x67676D6C);
    for (int i = 0; i < 10; i++) W32(u[i]);
    W32(1);
    const tr_tensor *fb = tr_gguf_find_tensor(g, "frontend.mel_filterbank");
    ok = ok && fb;
    if (ok) {
        W32(fb->ne[1]);
        W32(fb->ne[0]);
        ok = ok && fwrite(fb->data, 4, (size_t)(fb->ne[0] * fb->ne[1]), f) ==
                       (size_t)(fb->ne[0] * fb->ne[1]);
    }
    int nt = tr_ggml_bin_n_tokens(voc);
    W32(nt);
    for (int i = 0; i < nt && ok; i++) {
        size_t len = 0;
        const char *p = tr_ggml_bin_token(voc, i, &len);
        W32(len);
        ok = ok && fwrite(p, 1, len, f) == len;
    }
    for (int64_t i = 0; i < tr_gguf_n_tensors(g) && ok; i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        if (strncmp(t->name, "frontend.", 9) == 0) continue;
        char ln[256];
        legacy_of(t->name, ln, sizeof ln);
        bool conv_bias = strstr(t->name, "enc.conv.") && strstr(t->name, ".bias");
        int nd = conv_bias ? 2 : t->n_dims;
        W32(nd);
        W32(strlen(ln));
        W32(t->type);
        if (conv_bias) {
            W32(1);
            W32(t->ne[0]);
        } else {
            for (int d = 0; d < nd; d++) W32(t->ne[d]);
        }
        ok = ok && fwrite(ln, 1, strlen(ln), f) == strlen(ln);
        ok = ok && fwrite(t->data, 1, t->nbytes, f) == t->nbytes;
    }
#undef W32
    if (f) ok = (fclose(f) == 0) && ok;
    tr_ggml_bin_close(voc);
    tr_gguf_close(g);
    return ok;
}

static float max_abs(const float *a, const float *b, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* Encoder output (from the reference mel) and first-step logits. */
static void tensors(const char *path, const char *tag, const float *pcm, int n, float enc_tol,
                    float logit_tol) {
    loaded L;
    CHECK_MSG(load_internal(path, &L), "%s: load", tag);
    if (!L.s) return;
    npy_array mel, enc, lg;
    CHECK(npy_load(DATA "jfk.mel.npy", &mel) == 0);
    CHECK(npy_load(DATA "jfk.enc.npy", &enc) == 0);
    CHECK(npy_load(DATA "jfk.logits0.npy", &lg) == 0);
    const int D = L.m->hp.d_model, V = L.m->hp.n_vocab;
    CHECK(mel.n == 80 * 3000 && enc.n == (int64_t)1500 * D && lg.n == V);
    if (mel.n == 80 * 3000 && enc.n == (int64_t)1500 * D && lg.n == V) {
        float *m = NULL;
        int nf = 0;
        CHECK(tr_wh_log_mel(L.m, NULL, pcm, n, &m, &nf) == TRANSCRIBE_OK && nf == 3000);
        if (m) {
            float dm = max_abs(m, mel.data, (size_t)mel.n);
            printf("%s: mel max|diff| %.3g\n", tag, dm);
            CHECK(dm < 2e-4f);
        }
        free(m);
        tr_wh_encode(L.s, mel.data);
        float de = max_abs(L.s->enc_x, enc.data, (size_t)enc.n);
        tr_wh_cross_kv(L.s);
        int32_t prefix[3] = {50258, 50259, 50359};
        CHECK(tr_wh_decode_tokens(L.s, prefix, 3, 0));
        float *l = malloc((size_t)V * sizeof(float));
        tr_wh_logits_row(L.s, 2, l);
        float dl = max_abs(l, lg.data, (size_t)V), amax = 0.0f;
        for (int i = 0; i < V; i++) amax = fmaxf(amax, fabsf(((float *)lg.data)[i]));
        printf("%s: encoder max|diff| %.3g, logits max|diff| %.3g (max|logit| %.1f)\n", tag, de, dl,
               amax);
        CHECK_MSG(de < enc_tol, "%s encoder %g", tag, de);
        CHECK_MSG(dl < logit_tol * amax, "%s logits %g", tag, dl);
        free(l);
    }
    npy_free(&mel);
    npy_free(&enc);
    npy_free(&lg);
    unload_internal(&L);
}

/* Public-API decode compared with the golden segments / text / traces. */
/* avg_logprob tolerance of the session decode_case runs: F32 caches 2e-3;
 * an F16 cache also holds the cross K/V as half floats (as whisper.cpp
 * does), which moves the random model's near-zero log-probabilities by up
 * to ~4e-3 on whole-earth (the tokens stay identical). */
static float lp_tol = 2e-3f;

static void decode_case(struct transcribe_session *s, const char *tag, const char *stem,
                        const float *pcm, int n, const char *lang, transcribe_task task) {
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.language = lang;
    rp.task = task;
    transcribe_status st = transcribe_run(s, pcm, n, &rp);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s %s: %s", tag, stem, transcribe_status_string(st));
    char path[512];
    snprintf(path, sizeof path, DATA "%s.text.txt", stem);
    char *text = read_text(path);
    CHECK(text != NULL);
    if (text) {
        size_t k = strlen(text);
        while (k > 0 && (text[k - 1] == '\n')) text[--k] = 0;
        CHECK_MSG(strcmp(text, transcribe_full_text(s)) == 0,
                  "%s %s text:\n  got  '%s'\n  want '%s'", tag, stem, transcribe_full_text(s),
                  text);
    }
    free(text);
    snprintf(path, sizeof path, DATA "%s.segments.txt", stem);
    char *segs = read_text(path);
    CHECK(segs != NULL);
    int i = 0;
    for (char *line = segs ? strtok(segs, "\n") : NULL; line; line = strtok(NULL, "\n"), i++) {
        long long t0 = 0, t1 = 0;
        int off = 0;
        if (sscanf(line, "%lld %lld %n", &t0, &t1, &off) < 2) continue;
        struct transcribe_segment sg;
        transcribe_segment_init(&sg);
        CHECK(transcribe_get_segment(s, i, &sg) == TRANSCRIBE_OK);
        CHECK_MSG(sg.text && sg.t0_ms == t0 && sg.t1_ms == t1 && strcmp(sg.text, line + off) == 0,
                  "%s %s seg %d: got [%lld %lld] '%s' want [%lld %lld] '%s'", tag, stem, i,
                  (long long)sg.t0_ms, (long long)sg.t1_ms, sg.text ? sg.text : "(null)", t0, t1,
                  line + off);
    }
    CHECK_MSG(transcribe_n_segments(s) == i, "%s %s: %d segments, want %d", tag, stem,
              transcribe_n_segments(s), i);
    free(segs);
    /* per-window telemetry */
    snprintf(path, sizeof path, DATA "%s.tokens.txt", stem);
    char *tk = read_text(path);
    int w = 0;
    for (char *line = tk ? strtok(tk, "\n") : NULL; line; line = strtok(NULL, "\n"), w++) {
        int seek = 0, n_real = 0;
        float temp = 0, alp = 0, cr = 0, nsp = 0;
        const char *p = strstr(line, "n_real=");
        if (sscanf(line, "seek=%d", &seek) != 1 || !p ||
            sscanf(p,
                   "n_real=%d eos=%*d temperature=%f avg_logprob=%f compression_ratio=%f "
                   "no_speech_prob=%f",
                   &n_real, &temp, &alp, &cr, &nsp) != 5)
            continue;
        struct transcribe_whisper_chunk_trace tr;
        transcribe_whisper_chunk_trace_init(&tr);
        CHECK(transcribe_get_whisper_chunk_trace(s, w, &tr) == TRANSCRIBE_OK);
        CHECK_MSG(tr.t0_ms == 10LL * seek && tr.t1_ms == 10LL * (seek + n_real),
                  "%s %s window %d: [%lld %lld] want seek %d n_real %d", tag, stem, w,
                  (long long)tr.t0_ms, (long long)tr.t1_ms, seek, n_real);
        CHECK(fabsf(tr.temperature_used - temp) < 1e-3f);
        CHECK_MSG(fabsf(tr.avg_logprob - alp) < lp_tol, "%s %s avg_logprob %g want %g", tag, stem,
                  tr.avg_logprob, alp);
        CHECK_MSG(fabsf(tr.compression_ratio - cr) < 0.05f * cr + 0.02f,
                  "%s %s compression %g want %g", tag, stem, tr.compression_ratio, cr);
        CHECK(fabsf(tr.no_speech_prob - nsp) < 1e-4f);
    }
    CHECK_MSG(transcribe_get_whisper_chunk_count(s) == w, "%s %s: %d windows, want %d", tag, stem,
              transcribe_get_whisper_chunk_count(s), w);
    free(tk);
}

static void decodes(const char *path, const char *tag, transcribe_kv_type kv, const tr_audio *jfk,
                    const tr_audio *earth) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.kv_type = kv;
    sp.n_threads = 2;
    lp_tol = kv == TRANSCRIBE_KV_TYPE_F32 ? 2e-3f : 8e-3f;
    struct transcribe_session *s = NULL;
    transcribe_status st = transcribe_open(path, NULL, &sp, &s);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: open %s", tag, transcribe_status_string(st));
    if (!s) return;
    decode_case(s, tag, "jfk", jfk->pcm, (int)jfk->n, "en", TRANSCRIBE_TASK_TRANSCRIBE);
    decode_case(s, tag, "jfk.translate", jfk->pcm, (int)jfk->n, "en", TRANSCRIBE_TASK_TRANSLATE);
    decode_case(s, tag, "jfk.auto", jfk->pcm, (int)jfk->n, NULL, TRANSCRIBE_TASK_TRANSCRIBE);
    char *lang = read_text(DATA "jfk.auto.language.txt");
    if (lang) {
        char code[16] = {0};
        sscanf(lang, "%15s", code);
        CHECK_MSG(strcmp(code, transcribe_detected_language(s)) == 0, "%s language %s want %s", tag,
                  transcribe_detected_language(s), code);
    }
    free(lang);
    decode_case(s, tag, "whole-earth", earth->pcm, (int)earth->n, "en", TRANSCRIBE_TASK_TRANSCRIBE);
    /* word rows: linked to their segment and tokens */
    for (int i = 0; i < transcribe_n_words(s); i++) {
        struct transcribe_word wd;
        transcribe_word_init(&wd);
        CHECK(transcribe_get_word(s, i, &wd) == TRANSCRIBE_OK);
        CHECK(wd.text && wd.n_tokens >= 1 && wd.seg_index >= 0 &&
              wd.seg_index < transcribe_n_segments(s));
    }
    CHECK(transcribe_n_words(s) > 0 && transcribe_n_tokens(s) >= transcribe_n_words(s));
    struct transcribe_timings tm;
    transcribe_timings_init(&tm);
    transcribe_get_timings(s, &tm);
    printf("%s whole-earth: mel %.1f ms, encode %.1f ms, decode %.1f ms\n", tag, tm.mel_ms,
           tm.encode_ms, tm.decode_ms);
    /* text prompt with conditioning on the long input: runs, prompt is encoded */
    struct transcribe_whisper_run_ext ext;
    transcribe_whisper_run_ext_init(&ext);
    ext.initial_prompt = "  Hello, world. ";
    ext.condition_on_prev_tokens = true;
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.language = "en";
    rp.family = &ext.ext;
    st = transcribe_run(s, earth->pcm, (int)earth->n, &rp);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s prompt run: %s", tag, transcribe_status_string(st));
    CHECK(transcribe_get_whisper_chunk_count(s) >= 2);
    transcribe_session_free(s);
}

/* Vocabulary hints become the prompt text: the same result as the
 * initial_prompt of the trimmed, ", "-joined terms. */
static void vocabulary(const char *path, const tr_audio *jfk) {
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, NULL, &s) == TRANSCRIBE_OK);
    if (!s) return;
    CHECK(transcribe_model_supports(transcribe_get_model(s), TRANSCRIBE_FEATURE_VOCABULARY));
    static const char *const terms[] = {" Kennedy ", "", "Apollo"};
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.language = "en";
    rp.vocabulary = terms;
    rp.n_vocabulary = 3;
    CHECK(transcribe_run(s, jfk->pcm, (int)jfk->n, &rp) == TRANSCRIBE_OK);
    char *hinted = strdup(transcribe_full_text(s));
    struct transcribe_whisper_run_ext ext;
    transcribe_whisper_run_ext_init(&ext);
    ext.initial_prompt = "Kennedy, Apollo";
    transcribe_run_params_init(&rp);
    rp.language = "en";
    rp.family = &ext.ext;
    CHECK(transcribe_run(s, jfk->pcm, (int)jfk->n, &rp) == TRANSCRIBE_OK);
    CHECK_MSG(hinted && strcmp(hinted, transcribe_full_text(s)) == 0, "vocabulary '%s' vs '%s'",
              hinted, transcribe_full_text(s));
    free(hinted);
    transcribe_session_free(s);
}

int main(void) {
    const char *f16 = DATA "whisper-tiny-ref-F16.gguf";
    const char *bin = DATA "whisper-tiny-ref-F16.bin";
    char f32[1024], q8[1024], mybin[1024];
    snprintf(mybin, sizeof mybin, "%s/whisper-tiny-ref-F16.bin", TR_BINARY_DIR);
    snprintf(f32, sizeof f32, "%s/whisper-tiny-ref-F32.gguf", TR_BINARY_DIR);
    snprintf(q8, sizeof q8, "%s/whisper-tiny-ref-Q8_0.gguf", TR_BINARY_DIR);
    FILE *probe = fopen(f16, "rb");
    if (!probe) {
        printf("reference model missing: skipped\n");
        return 0;
    }
    fclose(probe);
    CHECK(make_copy(f16, f32, TR_F32));
    CHECK(make_copy(f16, q8, TR_Q8_0));
    CHECK(make_bin(f16, mybin));
    tr_audio jfk = {0}, earth = {0};
    CHECK(tr_audio_load_file(TR_CORPUS_DIR "/samples/jfk.wav", 16000, &jfk) == TRANSCRIBE_OK);
    CHECK(tr_audio_load_file(TR_CORPUS_DIR "/samples/whole-earth.wav", 16000, &earth) ==
          TRANSCRIBE_OK);
    if (jfk.pcm && earth.pcm) {
        tensors(f32, "F32", jfk.pcm, (int)jfk.n, 1e-3f, 3e-6f);
        tensors(f16, "F16", jfk.pcm, (int)jfk.n, 1e-3f, 3e-6f);
        tensors(q8, "Q8_0", jfk.pcm, (int)jfk.n, 0.05f, 0.05f);
        decodes(f32, "F32/kvF32", TRANSCRIBE_KV_TYPE_F32, &jfk, &earth);
        decodes(f16, "F16/kvAUTO", TRANSCRIBE_KV_TYPE_AUTO, &jfk, &earth);
        decodes(f32, "F32/kvF16", TRANSCRIBE_KV_TYPE_F16, &jfk, &earth);
        decodes(mybin, ".bin", TRANSCRIBE_KV_TYPE_AUTO, &jfk, &earth);
        vocabulary(f16, &jfk);
        /* prompt encoding: the merge-less GGUF vocabulary and the .bin
         * vocabulary encode text identically (tiktoken-style ranks) */
        struct transcribe_model *mg = NULL, *mb = NULL;
        CHECK(transcribe_model_load_file(f16, NULL, &mg) == TRANSCRIBE_OK);
        CHECK(transcribe_model_load_file(bin, NULL, &mb) == TRANSCRIBE_OK);
        if (mg && mb) {
            int32_t a[64], b[64];
            const char *txt = " And so, my fellow Americans: ask not what your country can do.";
            int na = transcribe_tokenize(mg, txt, a, 64), nb = transcribe_tokenize(mb, txt, b, 64);
            CHECK(na > 5 && na == nb && memcmp(a, b, (size_t)na * sizeof(int32_t)) == 0);
            CHECK(na < 20); /* merged, not byte-level */
        }
        transcribe_model_free(mg);
        transcribe_model_free(mb);
        /* and the reference's own .bin (written by the Python tool) */
        decodes(bin, "ref .bin", TRANSCRIBE_KV_TYPE_AUTO, &jfk, &earth);
    }
    tr_audio_free(&jfk);
    tr_audio_free(&earth);
    return TEST_DONE();
}
