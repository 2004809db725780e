/* Buffered streaming of a unified-en style file (docs/formats/parakeet.md §3.3
 * menus, §7.8; docs/c-api.md §7.3 PKBS) against tools/ref/parakeet.py's float64
 * reference (config tiny-unified): a tiny random RNN-T with
 * chunked_limited_with_rc attention and the menus left {6, 4}, chunk
 * {1, 3}, right {0, 2}. For four (L, C, R) choices the streamed tokens
 * (ids and frames) equal the reference's buffered tokens of the committed
 * 5 s excerpt at feeds of 10 ms, 37 ms (splits mel frames and encoder
 * frames), 80 ms, 1 s and the whole input at once; committed tokens and
 * text only grow; everything decoded is committed; finalize commits the
 * rest. The default (no extension, or -1 fields) is the largest of each
 * menu. Refused at begin: a value that is not a multiple of 80 ms, one
 * outside its menu, one below -1, the cache-aware kind. The offline run of
 * the file is untouched by the mask (the reference's offline tokens). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pk_test.h"
#include "transcribe/parakeet.h"
#include "test_util.h"

#define CFG       "tiny-unified"
#define FILE_NAME "parakeet-unified-en-tiny-F16.gguf"
#define MAXT      2048

typedef struct {
    int n;
    int id[MAXT];
    int64_t t0[MAXT];
} toks;

/* `id frame` lines; the CONTROL pieces <s> and </s> (ids 1, 2) are not
 * result rows (docs/formats/parakeet.md §9.1), so they are left out. */
static bool read_golden(const char *name, toks *t) {
    char p[2048];
    pk_path(p, sizeof p, CFG, name);
    FILE *f = fopen(p, "r");
    if (!f) return false;
    t->n = 0;
    int id, fr;
    while (t->n < MAXT && fscanf(f, "%d %d", &id, &fr) == 2) {
        if (id == 1 || id == 2) continue;
        t->id[t->n] = id;
        t->t0[t->n] = (int64_t)fr * 80;
        t->n++;
    }
    fclose(f);
    return true;
}

static void read_toks(struct transcribe_session *s, toks *t) {
    t->n = transcribe_n_tokens(s);
    if (t->n > MAXT) t->n = MAXT;
    for (int i = 0; i < t->n; i++) {
        struct transcribe_token k;
        transcribe_token_init(&k);
        CHECK(transcribe_get_token(s, i, &k) == TRANSCRIBE_OK);
        t->id[i] = k.id;
        t->t0[i] = k.t0_ms;
    }
}

static bool same(const toks *a, const toks *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (a->id[i] != b->id[i] || a->t0[i] != b->t0[i]) return false;
    return true;
}

/* Begins a stream with the extension fields (left, chunk, right) in ms, or
 * with no extension at all (use_ext false). */
static transcribe_status begin(struct transcribe_session *s, bool use_ext, int l_ms, int c_ms,
                               int r_ms) {
    struct transcribe_parakeet_buffered_stream_ext x;
    transcribe_parakeet_buffered_stream_ext_init(&x);
    x.left_ms = l_ms;
    x.chunk_ms = c_ms;
    x.right_ms = r_ms;
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    sp.family = &x.ext;
    return transcribe_stream_begin(s, NULL, use_ext ? &sp : NULL);
}

/* One stream of pcm in feeds of `feed` samples with the extension fields
 * (left, chunk, right) in ms (use_ext false: no extension). */
static void stream_once(struct transcribe_session *s, const float *pcm, int n, int feed,
                        bool use_ext, int l_ms, int c_ms, int r_ms, toks *out, const char *label) {
    CHECK_MSG(begin(s, use_ext, l_ms, c_ms, r_ms) == TRANSCRIBE_OK, "%s: begin", label);
    int prev = 0;
    char *prev_text = calloc(1, 1);
    for (int i = 0; i < n; i += feed) {
        const int m = n - i < feed ? n - i : feed;
        struct transcribe_stream_update u;
        transcribe_stream_update_init(&u);
        CHECK(transcribe_stream_feed(s, pcm + i, m, &u) == TRANSCRIBE_OK);
        const int c = transcribe_stream_n_committed_tokens(s);
        CHECK_MSG(c >= prev, "%s: committed tokens shrank %d -> %d", label, prev, c);
        CHECK_MSG(c == transcribe_n_tokens(s), "%s: %d of %d tokens committed", label, c,
                  transcribe_n_tokens(s));
        prev = c;
        struct transcribe_stream_text tx;
        transcribe_stream_text_init(&tx);
        CHECK(transcribe_stream_get_text(s, &tx) == TRANSCRIBE_OK);
        CHECK_MSG(strncmp(tx.committed_text, prev_text, strlen(prev_text)) == 0,
                  "%s: committed text is not a growth of the previous", label);
        free(prev_text);
        prev_text = strdup(tx.committed_text);
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

static void refused(struct transcribe_session *s, int l_ms, int c_ms, int r_ms) {
    CHECK_MSG(begin(s, true, l_ms, c_ms, r_ms) == TRANSCRIBE_ERR_INVALID_ARG,
              "left/chunk/right %d/%d/%d ms accepted", l_ms, c_ms, r_ms);
}

int main(void) {
    char model[2048], wav[2048];
    pk_path(model, sizeof model, CFG, FILE_NAME);
    pk_path(wav, sizeof wav, CFG, "excerpt.wav");
    if (!pk_exists(model) || !pk_exists(wav)) {
        printf("skip: %s or %s missing\n", model, wav);
        return TEST_DONE();
    }
    tr_audio a;
    CHECK(tr_audio_load_file(wav, 16000, &a) == TRANSCRIBE_OK);
    const float *pcm = a.pcm;
    const int n = (int)a.n;
    struct transcribe_session *s = NULL;
    CHECK(pk_open(model, 1, &s) == TRANSCRIBE_OK);
    if (!s) return TEST_DONE();
    const struct transcribe_model *m = transcribe_get_model(s);
    CHECK(transcribe_model_accepts_ext_kind(m, TRANSCRIBE_EXT_SLOT_STREAM,
                                            TRANSCRIBE_EXT_KIND_PARAKEET_BUFFERED_STREAM));
    CHECK(!transcribe_model_accepts_ext_kind(m, TRANSCRIBE_EXT_SLOT_STREAM,
                                             TRANSCRIBE_EXT_KIND_PARAKEET_STREAM));
    CHECK(!transcribe_model_accepts_ext_kind(m, TRANSCRIBE_EXT_SLOT_RUN,
                                             TRANSCRIBE_EXT_KIND_PARAKEET_BUFFERED_STREAM));

    const int choices[4][3] = {{6, 3, 2}, {4, 3, 0}, {6, 1, 2}, {4, 1, 0}};
    const int feeds[] = {160, 592, 1280, 16000, n};
    toks want, got;
    for (int c = 0; c < 4; c++) {
        char name[128];
        snprintf(name, sizeof name, "excerpt.buffered-%d-%d-%d.tokens.txt", choices[c][0],
                 choices[c][1], choices[c][2]);
        if (!read_golden(name, &want)) {
            CHECK_MSG(false, "golden %s missing", name);
            continue;
        }
        printf("L/C/R %d/%d/%d: reference %d tokens\n", choices[c][0], choices[c][1], choices[c][2],
               want.n);
        CHECK_MSG(want.n > 0, "empty golden %s", name);
        for (size_t f = 0; f < sizeof feeds / sizeof feeds[0]; f++) {
            char label[128];
            snprintf(label, sizeof label, "L/C/R %d/%d/%d feed %d", choices[c][0], choices[c][1],
                     choices[c][2], feeds[f]);
            stream_once(s, pcm, n, feeds[f], true, choices[c][0] * 80, choices[c][1] * 80,
                        choices[c][2] * 80, &got, label);
            CHECK_MSG(same(&got, &want), "%s: streamed %d tokens differ from the reference's %d",
                      label, got.n, want.n);
        }
    }
    /* the default is the largest of each menu: (6, 3, 2) */
    read_golden("excerpt.buffered-6-3-2.tokens.txt", &want);
    stream_once(s, pcm, n, 4000, false, 0, 0, 0, &got, "no extension");
    CHECK_MSG(same(&got, &want), "default choice differs from (6, 3, 2)");
    stream_once(s, pcm, n, 4000, true, -1, -1, -1, &got, "-1 fields");
    CHECK_MSG(same(&got, &want), "-1 fields differ from (6, 3, 2)");
    stream_once(s, pcm, n, 4000, true, 320, -1, 0, &got, "(4, default, 0)");
    read_golden("excerpt.buffered-4-3-0.tokens.txt", &want);
    CHECK_MSG(same(&got, &want), "(320, -1, 0) ms differs from (4, 3, 0)");

    /* refused before anything changes */
    const int n_before = transcribe_n_tokens(s);
    refused(s, 480, 100, 160); /* not a multiple of 80 ms */
    refused(s, 480, 160, 160); /* chunk 2 frames: not in the menu */
    refused(s, 400, 240, 160); /* left 5 frames */
    refused(s, 480, 240, 80);  /* right 1 frame */
    refused(s, -2, 240, 160);
    refused(s, 480, 0, 0);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FINISHED);
    CHECK(transcribe_n_tokens(s) == n_before);
    struct transcribe_parakeet_stream_ext pk;
    transcribe_parakeet_stream_ext_init(&pk);
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    sp.family = &pk.ext;
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_ERR_INVALID_ARG);

    /* reset mid-stream, then a whole stream: the same tokens */
    read_golden("excerpt.buffered-6-3-2.tokens.txt", &want);
    CHECK(transcribe_stream_begin(s, NULL, NULL) == TRANSCRIBE_OK);
    struct transcribe_stream_update u;
    transcribe_stream_update_init(&u);
    CHECK(transcribe_stream_feed(s, pcm, n / 2, &u) == TRANSCRIBE_OK);
    transcribe_stream_reset(s);
    stream_once(s, pcm, n, 1234, false, 0, 0, 0, &got, "after reset");
    CHECK_MSG(same(&got, &want), "stream after reset differs");
    transcribe_session_free(s);

    /* offline: plain full attention, the reference's offline tokens (jfk) */
    int nj = 0;
    float *jfk = pk_load_wav("jfk", &nj);
    char gold[2048];
    pk_path(gold, sizeof gold, CFG, "jfk.text.txt");
    char *text = pk_read_text(gold);
    if (jfk && text && pk_open(model, 1, &s) == TRANSCRIBE_OK) {
        pk_chomp(text);
        CHECK(transcribe_run(s, jfk, nj, NULL) == TRANSCRIBE_OK);
        CHECK_MSG(strcmp(transcribe_full_text(s), text) == 0, "offline text differs: %s",
                  transcribe_full_text(s));
        transcribe_session_free(s);
    } else {
        printf("skip the offline check: jfk.wav or its golden missing\n");
    }
    free(text);
    free(jfk);
    tr_audio_free(&a);
    return TEST_DONE();
}
