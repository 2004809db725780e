/* Native cache-aware streaming of Parakeet (docs/formats/parakeet.md §7.8,
 * docs/c-api.md §14) through the public API. The committed tiny RNN-T, TDT and
 * CTC models are rewritten into cache-aware streaming files (the published
 * schema: chunked_limited (L, R) with its choices, causal depthwise conv
 * k-1/0, normalize none, and a causal-sized pre-encode projection with new
 * random weights). For each: the streamed tokens equal the offline run's at
 * feeds of 10 ms, 37 ms (splits mel frames and subsampling windows), 80 ms,
 * 160 ms, 1 s and 2 s; committed tokens/text only grow; finalize commits
 * everything; reset and a second stream give the same tokens; an offline
 * file refuses a stream. Each file carries a three-entry lookahead menu
 * (L, R), (L, R2), (L, 0): every choice, selected through the PKST stream
 * extension, streams the tokens of the offline run of a file whose only
 * context is that pair; a right context outside the menu, < -1, the
 * buffered kind or a short struct is refused at begin. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pk_test.h"
#include "transcribe/parakeet.h"
#include "test_util.h"

typedef struct {
    const char *cfg, *file;
    int k, C, n_mels, d;
    int L, R, R2; /* the lookahead menu: (L, R), (L, R2), (L, 0) */
} model_case;

static float rnd(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f;
}

/* Writes the streaming file with the lookahead menu `choices` ([n][2],
 * pair 0 the default), or with only (L, R) when n == 1. */
static bool make_streaming(const model_case *mc, const char *dst, const int32_t *choices, int n) {
    char src[2048];
    pk_path(src, sizeof src, mc->cfg, mc->file);
    gguf_file *g = NULL;
    if (tr_gguf_open(src, &g) != TRANSCRIBE_OK) return false;
    gguf_writer *w = tr_gguf_writer_create();
    bool ok = w != NULL;
    for (int64_t i = 0; ok && i < tr_gguf_n_kv(g); i++)
        if (!pk_test_streaming_key(tr_gguf_key_name(g, i))) ok = tr_gguf_writer_copy_kv(w, g, i);
    ok = ok &&
         tr_gguf_writer_set_str(w, "stt.parakeet.encoder.att_context_style", "chunked_limited") &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.att_context_left", choices[0]) &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.att_context_right", choices[1]) &&
         tr_gguf_writer_set_arr_i32(w, "stt.parakeet.encoder.att_context_size_choices", choices,
                                    2 * n) &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.conv_context_left", mc->k - 1) &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.conv_context_right", 0) &&
         tr_gguf_writer_set_str(w, "stt.frontend.normalize", "none") &&
         tr_gguf_writer_set_bool(w, "stt.capability.streaming", true);
    /* causal pre-encode: F' = three stages of L -> L/2 + 1 */
    int F = mc->n_mels;
    for (int i = 0; i < 3; i++) F = F / 2 + 1;
    const int64_t in = (int64_t)mc->C * F;
    float *pw = malloc(sizeof(float) * (size_t)(in * mc->d));
    uint32_t seed = 4242;
    const float sc = 10.0 / sqrtf((float)in);
    for (int64_t i = 0; pw && i < in * mc->d; i++) pw[i] = rnd(&seed) * sc;
    ok = ok && pw;
    for (int64_t i = 0; ok && i < tr_gguf_n_tensors(g); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        if (!strcmp(t->name, "enc.pre_encode.out.weight")) {
            const int64_t ne[4] = {in, mc->d, 1, 1};
            ok = tr_gguf_writer_add_tensor(w, t->name, TR_F32, 2, ne, pw);
        } else {
            ok = tr_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data);
        }
    }
    if (ok) ok = tr_gguf_writer_write(w, dst) == TRANSCRIBE_OK;
    free(pw);
    tr_gguf_writer_free(w);
    tr_gguf_close(g);
    return ok;
}

typedef struct {
    int n;
    int id[4096];
    int64_t t0[4096], t1[4096];
    int n_words;
    char text[8192], raw[8192], words[8192];
} toks;

static void read_toks(struct transcribe_session *s, toks *t) {
    t->n = transcribe_n_tokens(s);
    if (t->n > 4096) t->n = 4096;
    for (int i = 0; i < t->n; i++) {
        struct transcribe_token k;
        transcribe_token_init(&k);
        CHECK(transcribe_get_token(s, i, &k) == TRANSCRIBE_OK);
        t->id[i] = k.id;
        t->t0[i] = k.t0_ms;
        t->t1[i] = k.t1_ms;
    }
    /* the texts and word rows too: the stream builds them in place */
    snprintf(t->text, sizeof t->text, "%s", transcribe_full_text(s));
    snprintf(t->raw, sizeof t->raw, "%s", transcribe_raw_text(s));
    t->n_words = transcribe_n_words(s);
    size_t at = 0;
    t->words[0] = 0;
    for (int i = 0; i < t->n_words && at < sizeof t->words; i++) {
        struct transcribe_word w;
        transcribe_word_init(&w);
        CHECK(transcribe_get_word(s, i, &w) == TRANSCRIBE_OK);
        at += (size_t)snprintf(t->words + at, sizeof t->words - at, "%s|%lld|%lld/", w.text,
                               (long long)w.t0_ms, (long long)w.t1_ms);
    }
}

static bool same_toks(const toks *a, const toks *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (a->id[i] != b->id[i] || a->t0[i] != b->t0[i] || a->t1[i] != b->t1[i]) return false;
    return a->n_words == b->n_words && !strcmp(a->text, b->text) && !strcmp(a->raw, b->raw) &&
           !strcmp(a->words, b->words);
}

/* Streams pcm in feeds of `feed` samples; checks the commit rules on the
 * way; the final tokens into out. */
static void stream_once_ext(struct transcribe_session *s, const float *pcm, int n, int feed,
                            toks *out, const char *label, int att_right) {
    struct transcribe_parakeet_stream_ext x;
    transcribe_parakeet_stream_ext_init(&x);
    x.att_context_right = att_right;
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    sp.family = &x.ext;
    CHECK_MSG(transcribe_stream_begin(s, NULL, att_right == -2 ? NULL : &sp) == TRANSCRIBE_OK,
              "%s: begin", label);
    int prev_committed = 0;
    char *prev_text = calloc(1, 1);
    for (int i = 0; i < n; i += feed) {
        const int m = n - i < feed ? n - i : feed;
        struct transcribe_stream_update u;
        transcribe_stream_update_init(&u);
        CHECK(transcribe_stream_feed(s, pcm + i, m, &u) == TRANSCRIBE_OK);
        const int c = transcribe_stream_n_committed_tokens(s);
        CHECK_MSG(c >= prev_committed, "%s: committed tokens shrank %d -> %d", label,
                  prev_committed, c);
        prev_committed = c;
        struct transcribe_stream_text tx;
        transcribe_stream_text_init(&tx);
        CHECK(transcribe_stream_get_text(s, &tx) == TRANSCRIBE_OK);
        CHECK_MSG(strncmp(tx.committed_text, prev_text, strlen(prev_text)) == 0,
                  "%s: committed text is not a growth of the previous", label);
        free(prev_text);
        prev_text = strdup(tx.committed_text);
        /* native commits: everything decoded is committed */
        CHECK_MSG(c == transcribe_n_tokens(s), "%s: %d of %d tokens committed", label, c,
                  transcribe_n_tokens(s));
    }
    struct transcribe_stream_update u;
    transcribe_stream_update_init(&u);
    CHECK(transcribe_stream_finalize(s, &u) == TRANSCRIBE_OK);
    CHECK(u.is_final);
    struct transcribe_stream_text tx;
    transcribe_stream_text_init(&tx);
    CHECK(transcribe_stream_get_text(s, &tx) == TRANSCRIBE_OK);
    CHECK_MSG(strcmp(tx.committed_text, tx.full_text) == 0, "%s: finalize left text tentative",
              label);
    CHECK(strncmp(tx.committed_text, prev_text, strlen(prev_text)) == 0);
    CHECK(transcribe_stream_n_committed_tokens(s) == transcribe_n_tokens(s));
    free(prev_text);
    read_toks(s, out);
}

static void stream_once(struct transcribe_session *s, const float *pcm, int n, int feed, toks *out,
                        const char *label) {
    stream_once_ext(s, pcm, n, feed, out, label, -2);
}

/* The lookahead menu (docs/c-api.md §7.3 PKST): every choice streams the tokens
 * of an offline run with that attention context (a file whose default is
 * the choice); values outside the menu are refused before anything
 * changes. */
static void menu_case(const model_case *mc, const char *dst, const float *pcm, int n) {
    struct transcribe_session *s = NULL;
    CHECK(pk_open(dst, 1, &s) == TRANSCRIBE_OK);
    if (!s) return;
    const struct transcribe_model *model = transcribe_get_model(s);
    CHECK(transcribe_model_accepts_ext_kind(model, TRANSCRIBE_EXT_SLOT_STREAM,
                                            TRANSCRIBE_EXT_KIND_PARAKEET_STREAM));
    CHECK(!transcribe_model_accepts_ext_kind(model, TRANSCRIBE_EXT_SLOT_STREAM,
                                             TRANSCRIBE_EXT_KIND_PARAKEET_BUFFERED_STREAM));
    CHECK(!transcribe_model_accepts_ext_kind(model, TRANSCRIBE_EXT_SLOT_RUN,
                                             TRANSCRIBE_EXT_KIND_PARAKEET_STREAM));
    const int rights[3] = {mc->R, mc->R2, 0};
    for (int i = 0; i < 3; i++) {
        char one[2048];
        snprintf(one, sizeof one, "%s/pk_stream_%s_r%d.gguf", TR_BINARY_DIR, mc->cfg, rights[i]);
        const int32_t pair[2] = {mc->L, rights[i]};
        if (!make_streaming(mc, one, pair, 1)) {
            CHECK_MSG(false, "%s: could not write the R %d file", mc->cfg, rights[i]);
            continue;
        }
        struct transcribe_session *o = NULL;
        CHECK(pk_open(one, 1, &o) == TRANSCRIBE_OK);
        toks off, st;
        off.n = -1;
        if (o) {
            CHECK(transcribe_run(o, pcm, n, NULL) == TRANSCRIBE_OK);
            read_toks(o, &off);
            transcribe_session_free(o);
        }
        remove(one);
        printf("%s: lookahead %d: offline %d tokens\n", mc->cfg, rights[i], off.n);
        const int feeds[] = {592, 16000};
        for (size_t f = 0; f < sizeof feeds / sizeof feeds[0]; f++) {
            char label[128];
            snprintf(label, sizeof label, "%s R %d feed %d", mc->cfg, rights[i], feeds[f]);
            stream_once_ext(s, pcm, n, feeds[f], &st, label, rights[i]);
            CHECK_MSG(same_toks(&st, &off), "%s: streamed %d tokens differ from offline %d", label,
                      st.n, off.n);
        }
    }
    /* -1 is the default pair */
    toks def, st;
    stream_once(s, pcm, n, 4000, &def, "menu default");
    stream_once_ext(s, pcm, n, 4000, &st, "menu -1", -1);
    CHECK(same_toks(&def, &st));
    /* refused: not in the menu, below -1, the wrong kind, a short struct;
     * the finished stream and its result stay */
    const int bad[] = {mc->R + 1 == mc->R2 ? mc->R + 2 : mc->R + 1, -2, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct transcribe_parakeet_stream_ext x;
        transcribe_parakeet_stream_ext_init(&x);
        x.att_context_right = bad[i];
        struct transcribe_stream_params sp;
        transcribe_stream_params_init(&sp);
        sp.family = &x.ext;
        CHECK_MSG(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_ERR_INVALID_ARG,
                  "att_context_right %d accepted", bad[i]);
        CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FINISHED);
        CHECK(transcribe_stream_last_status(s) == TRANSCRIBE_OK); /* refused before it */
        CHECK(transcribe_n_tokens(s) == st.n);
    }
    struct transcribe_parakeet_buffered_stream_ext b;
    transcribe_parakeet_buffered_stream_ext_init(&b);
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    sp.family = &b.ext;
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_ERR_INVALID_ARG);
    struct transcribe_parakeet_stream_ext x;
    transcribe_parakeet_stream_ext_init(&x);
    x.ext.size = sizeof x.ext + 2;
    sp.family = &x.ext;
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FINISHED);
    transcribe_session_free(s);
}

static void run_case(const model_case *mc, const float *pcm, int n, const char *audio) {
    char dst[2048];
    snprintf(dst, sizeof dst, "%s/pk_stream_%s.gguf", TR_BINARY_DIR, mc->cfg);
    const int32_t menu[6] = {mc->L, mc->R, mc->L, mc->R2, mc->L, 0};
    if (!make_streaming(mc, dst, menu, 3)) {
        CHECK_MSG(false, "%s: could not write the streaming model", mc->cfg);
        return;
    }
    struct transcribe_session *s = NULL;
    CHECK(pk_open(dst, 1, &s) == TRANSCRIBE_OK);
    if (!s) return;
    toks off, st;
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK);
    read_toks(s, &off);
    printf("%s (%s, L %d R %d): offline %d tokens: %s\n", mc->cfg, audio, mc->L, mc->R, off.n,
           transcribe_full_text(s));
    CHECK_MSG(off.n > 0, "%s: the offline run emits no tokens; the test would be empty", mc->cfg);
    const int feeds[] = {160, 592, 1280, 2560, 16000, 32000};
    for (size_t i = 0; i < sizeof feeds / sizeof feeds[0]; i++) {
        char label[128];
        snprintf(label, sizeof label, "%s feed %d", mc->cfg, feeds[i]);
        stream_once(s, pcm, n, feeds[i], &st, label);
        CHECK_MSG(same_toks(&st, &off), "%s: streamed %d tokens differ from offline %d", label,
                  st.n, off.n);
    }
    /* reset mid-stream, then a second whole stream: the same tokens */
    CHECK(transcribe_stream_begin(s, NULL, NULL) == TRANSCRIBE_OK);
    struct transcribe_stream_update u;
    transcribe_stream_update_init(&u);
    CHECK(transcribe_stream_feed(s, pcm, n / 2, &u) == TRANSCRIBE_OK);
    transcribe_stream_reset(s);
    stream_once(s, pcm, n, 4000, &st, "after reset");
    CHECK_MSG(same_toks(&st, &off), "%s: stream after reset differs", mc->cfg);
    transcribe_session_free(s);
    /* a second session: same again */
    CHECK(pk_open(dst, 2, &s) == TRANSCRIBE_OK);
    if (s) {
        stream_once(s, pcm, n, 1234, &st, "2 threads");
        CHECK_MSG(same_toks(&st, &off), "%s: 2-thread stream differs", mc->cfg);
        transcribe_session_free(s);
    }
    menu_case(mc, dst, pcm, n);
    remove(dst);
}

/* Deterministic speech-like test signal: voiced bursts with moving pitch
 * and noise, separated by short pauses. */
static float *synth_audio(int n) {
    float *x = malloc(sizeof(float) * (size_t)n);
    uint32_t seed = 7;
    for (int i = 0; i < n; i++) {
        const double t = i / 16000.0;
        const double env = sin(3.14159 * fmod(t, 0.6) / 0.6);
        const double f = 120.0 + 80.0 * sin(t * 1.3);
        double v = 0.3 * sin(2 * 3.14159 * f * t) + 0.2 * sin(2 * 3.14159 * 3.1 * f * t);
        v += 0.05 * rnd(&seed);
        x[i] = (float)(env * env * v);
    }
    return x;
}

int main(void) {
    const model_case cases[] = {
        {"tiny-rnnt", "parakeet-tiny-rnnt-F16.gguf", 7, 24, 80, 64, 8, 3, 1},
        {"tiny-tdt", "parakeet-tiny-tdt-F32.gguf", 9, 24, 128, 64, 6, 2, 1},
        {"tiny-ctc", "parakeet-tiny-ctc-F16.gguf", 9, 16, 80, 64, 4, 3, 1},
    };
    int n = 0;
    /* PK_STREAM_SYNTH=1 forces the synthetic signal (the fallback when the
     * recording cannot be read) */
    const char *force = getenv("PK_STREAM_SYNTH");
    float *pcm = force && *force == '1' ? NULL : pk_load_wav("jfk", &n);
    const char *audio = "jfk.wav";
    if (!pcm) {
        n = 16000 * 7 + 123;
        pcm = synth_audio(n);
        audio = "synthetic";
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char p[2048];
        pk_path(p, sizeof p, cases[i].cfg, cases[i].file);
        if (!pk_exists(p)) {
            printf("skip %s: %s missing\n", cases[i].cfg, p);
            continue;
        }
        run_case(&cases[i], pcm, n, audio);
    }
    /* an offline file streams through the generic path, never the native one */
    char p[2048];
    pk_path(p, sizeof p, cases[0].cfg, cases[0].file);
    struct transcribe_session *s = NULL;
    if (pk_open(p, 1, &s) == TRANSCRIBE_OK) {
        transcribe_status b = transcribe_stream_begin(s, NULL, NULL);
        CHECK(b == TRANSCRIBE_ERR_NOT_IMPLEMENTED || b == TRANSCRIBE_OK);
        transcribe_session_free(s);
    }
    free(pcm);
    return TEST_DONE();
}
