/* Long audio through the library (src/api/chunk.c): transcribe_run with
 * default parameters on a recording of several minutes (samples/jfk.wav
 * sixteen times with pauses of low hiss between, built here) with the tiny
 * random-weight models of the families that decode a fixed output budget
 * (Qwen3-ASR, Granite Speech, MOSS). Checks: the run is split at the pauses
 * (the pieces transcribe_pause_split plans), the whole transcript comes
 * back equal to running the same pieces by hand (transcribe_run_batch in
 * groups of four with chunking off, as the library batches them; one call
 * each with chunk_batch 1) with their texts joined by spaces; rows on the
 * file's clock, monotonic and inside the audio; timings summed; progress
 * told per piece, never backwards, ending at 1; a batch holding the long
 * recording beside a short one splits only the long one; chunking off and
 * bad chunking parameters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

#define RATE   16000
#define ROUNDS 16

static char g_expect[1 << 16];

/* The trimmed texts joined with one space (the pieces here are ASCII). */
static void join_text(char *dst, size_t cap, const char *t) {
    while (*t == ' ') t++;
    size_t n = strlen(t);
    while (n > 0 && t[n - 1] == ' ') n--;
    if (n == 0) return;
    size_t len = strlen(dst);
    if (len > 0 && len + 1 < cap) dst[len++] = ' ', dst[len] = '\0';
    if (len + n + 1 < cap) {
        memcpy(dst + len, t, n);
        dst[len + n] = '\0';
    }
}

typedef struct progress_log {
    int calls;
    float last;
    bool backwards;
} progress_log;

static void on_progress(float f, void *ud) {
    progress_log *p = ud;
    if (f < p->last) p->backwards = true;
    p->last = f;
    p->calls++;
}

/* The same pieces run by hand, `group` a call, chunking off: their texts
 * joined into g_expect. False when a piece did not end OK (the library
 * would then have split it again: not what this compares). */
static bool by_hand(struct transcribe_session *s, const float *pcm,
                    const struct transcribe_audio_span *sp, int ns, int group) {
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.chunking = TRANSCRIBE_CHUNKING_OFF;
    g_expect[0] = '\0';
    bool ok = true;
    for (int i = 0; i < ns; i += group) {
        int g = ns - i < group ? ns - i : group;
        const float *p[8];
        int n[8];
        for (int j = 0; j < g; j++) {
            p[j] = pcm + sp[i + j].start;
            n[j] = (int)(sp[i + j].end - sp[i + j].start);
        }
        if (g == 1) {
            ok = ok && transcribe_run(s, p[0], n[0], &rp) == TRANSCRIBE_OK;
            join_text(g_expect, sizeof g_expect, transcribe_full_text(s));
        } else {
            ok = ok && transcribe_run_batch(s, p, n, g, &rp) == TRANSCRIBE_OK;
            for (int j = 0; j < g; j++) {
                ok = ok && transcribe_batch_status(s, j) == TRANSCRIBE_OK;
                join_text(g_expect, sizeof g_expect, transcribe_batch_full_text(s, j));
            }
        }
    }
    return ok;
}

/* Rows on the file's clock: monotonic, inside [0, end_ms]. */
static void check_rows(const struct transcribe_session *s, int64_t end_ms) {
    int64_t p0 = 0, p1 = 0;
    for (int i = 0; i < transcribe_n_segments(s); i++) {
        struct transcribe_segment g;
        transcribe_segment_init(&g);
        CHECK(transcribe_get_segment(s, i, &g) == TRANSCRIBE_OK);
        CHECK_MSG(g.t0_ms >= p0 && g.t1_ms >= p1 && g.t0_ms <= g.t1_ms && g.t1_ms <= end_ms,
                  "segment %d: %lld-%lld after %lld-%lld (end %lld)", i, (long long)g.t0_ms,
                  (long long)g.t1_ms, (long long)p0, (long long)p1, (long long)end_ms);
        p0 = g.t0_ms, p1 = g.t1_ms;
    }
}

static void check_model(const char *path, const float *pcm, int n, const float *jfk, int nj) {
    if (!tr_test_file_exists(path)) {
        printf("skip: %s not found\n", path);
        return;
    }
    struct transcribe_model *m = NULL;
    CHECK(transcribe_model_load_file(path, NULL, &m) == TRANSCRIBE_OK);
    struct transcribe_session *s = NULL;
    if (m) CHECK(transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    if (!s) {
        transcribe_model_free(m);
        return;
    }
    int64_t end_ms = ((int64_t)n * 1000 + RATE / 2) / RATE;
    /* The pieces the library should cut: at most 30 s, aiming at 20 s. */
    struct transcribe_pause_split_params spp;
    transcribe_pause_split_params_init(&spp);
    spp.target_ms = 20000;
    spp.max_ms = 30000;
    struct transcribe_audio_span *sp = NULL;
    int ns = 0;
    CHECK(transcribe_pause_split(pcm, n, RATE, &spp, &sp, &ns) == TRANSCRIBE_OK && ns > 4);
    CHECK(transcribe_run_would_chunk(s, n, NULL));
    CHECK(!transcribe_run_would_chunk(s, nj, NULL));

    /* Default parameters: split, pieces batched in fours. */
    progress_log pl = {0};
    transcribe_set_progress_callback(s, on_progress, &pl);
    transcribe_status st = transcribe_run(s, pcm, n, NULL);
    transcribe_set_progress_callback(s, NULL, NULL);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: %s", path, transcribe_status_string(st));
    CHECK(transcribe_was_chunked(s) && transcribe_n_pieces(s) == ns);
    for (int i = 0; i < transcribe_n_pieces(s) && i < ns; i++) {
        struct transcribe_piece pc;
        transcribe_piece_init(&pc);
        CHECK(transcribe_get_piece(s, i, &pc) == TRANSCRIBE_OK);
        CHECK(pc.status == TRANSCRIBE_OK && pc.end_kind == sp[i].end_kind &&
              pc.t0_ms == (sp[i].start * 1000 + RATE / 2) / RATE &&
              pc.t1_ms == sp[i].end * 1000 / RATE);
    }
    CHECK_MSG(pl.calls > 0 && pl.calls <= ns && !pl.backwards && pl.last == 1.0f,
              "progress: %d calls, last %g%s", pl.calls, (double)pl.last,
              pl.backwards ? ", went backwards" : "");
    struct transcribe_timings tm;
    transcribe_timings_init(&tm);
    CHECK(transcribe_get_timings(s, &tm) == TRANSCRIBE_OK && tm.encode_ms > 0);
    check_rows(s, end_ms);
    char *got = strdup(transcribe_full_text(s));
    CHECK(by_hand(s, pcm, sp, ns, 4));
    CHECK_MSG(got && strcmp(got, g_expect) == 0, "%s:\nlibrary: %s\nby hand: %s", path,
              got ? got : "", g_expect);
    CHECK(got && strlen(got) > 100);
    free(got);

    /* One piece a call. */
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.chunk_batch = 1;
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_OK && transcribe_n_pieces(s) == ns);
    got = strdup(transcribe_full_text(s));
    CHECK(by_hand(s, pcm, sp, ns, 1));
    CHECK_MSG(got && strcmp(got, g_expect) == 0, "%s, one by one:\nlibrary: %s\nby hand: %s", path,
              got ? got : "", g_expect);

    /* A batch of a short and the long recording: only the long one split,
     * each row as its own run gives. */
    const float *bp[2] = {jfk, pcm};
    int bn[2] = {nj, n};
    CHECK(transcribe_run_batch(s, bp, bn, 2, &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_OK &&
          transcribe_batch_status(s, 1) == TRANSCRIBE_OK);
    CHECK(!transcribe_batch_was_chunked(s, 0) && transcribe_batch_was_chunked(s, 1) &&
          transcribe_batch_n_pieces(s, 1) == ns);
    CHECK(got && strcmp(transcribe_batch_full_text(s, 1), got) == 0);
    char *short_text = strdup(transcribe_batch_full_text(s, 0));
    CHECK(transcribe_run(s, jfk, nj, NULL) == TRANSCRIBE_OK && !transcribe_was_chunked(s));
    CHECK(short_text && strcmp(short_text, transcribe_full_text(s)) == 0);
    free(short_text);
    free(got);

    /* Chunking off: the family sees the whole input (and does what it
     * can); on: even the short one is cut at its pauses. */
    rp.chunking = TRANSCRIBE_CHUNKING_OFF;
    st = transcribe_run(s, pcm, n, &rp);
    CHECK(!transcribe_was_chunked(s) && transcribe_n_pieces(s) == 0);
    rp.chunking = TRANSCRIBE_CHUNKING_ON;
    CHECK(transcribe_run(s, jfk, nj, &rp) == TRANSCRIBE_OK && transcribe_was_chunked(s));
    /* Bad parameters fail before anything changes. */
    int pieces = transcribe_n_pieces(s);
    rp.chunk_max_ms = 1999;
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    rp.chunk_max_ms = 0;
    rp.chunking = (enum transcribe_chunking)7;
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    rp.chunking = TRANSCRIBE_CHUNKING_AUTO;
    rp.chunk_batch = -1;
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_was_chunked(s) && transcribe_n_pieces(s) == pieces);
    /* A caller built before the chunking fields: its struct ends at
     * n_vocabulary and the defaults apply. */
    transcribe_run_params_init(&rp);
    rp.chunking = (enum transcribe_chunking)7; /* past the old struct: never read */
    rp.struct_size = offsetof(struct transcribe_run_params, n_vocabulary) + sizeof(int32_t);
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_OK && transcribe_was_chunked(s));

    transcribe_pause_split_free(sp);
    transcribe_session_free(s);
    transcribe_model_free(m);
}

int main(void) {
    float *jfk = NULL;
    int nj = 0;
    CHECK(transcribe_audio_load_file(TR_SOURCE_DIR "/samples/jfk.wav", RATE, &jfk, &nj) ==
          TRANSCRIBE_OK);
    if (!jfk) return TEST_DONE();
    /* jfk.wav, then a pause of 1.0-1.6 s of hiss at about -60 dBFS, ROUNDS
     * times: about 3.3 minutes. */
    int gap_max = RATE * 16 / 10;
    int64_t cap = (int64_t)ROUNDS * (nj + gap_max);
    float *pcm = calloc((size_t)cap, sizeof *pcm);
    int n = 0;
    uint32_t rng = 7u;
    for (int r = 0; pcm && r < ROUNDS; r++) {
        memcpy(pcm + n, jfk, (size_t)nj * sizeof *pcm);
        n += nj;
        int gap = RATE + (r * 7919) % (RATE * 6 / 10);
        for (int i = 0; i < gap; i++) {
            rng = rng * 1664525u + 1013904223u;
            pcm[n++] = ((float)(rng >> 8) / 16777216.0f - 0.5f) * 0.002f;
        }
    }
    CHECK(pcm != NULL);
    if (pcm) {
        const char *models[] = {
            TR_SOURCE_DIR "/tests/data/qwen3_asr/tiny/qwen3-asr-tiny-ref-F32.gguf",
            TR_SOURCE_DIR "/tests/data/granite/tiny-1b/granite-tiny-1b-ref-F32.gguf",
            TR_SOURCE_DIR "/tests/data/moss/tiny/moss-tiny-ref-F32.gguf",
        };
        for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
            check_model(models[i], pcm, n, jfk, nj);
        }
    }
    free(pcm);
    transcribe_audio_free(jfk);
    return TEST_DONE();
}
