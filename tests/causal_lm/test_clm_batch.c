/* transcribe_run_batch of the three audio-LLM families (Qwen3-ASR, Granite
 * Speech, MOSS) on their tiny reference models: batches of 1..4 utterances
 * of mixed lengths give every row its single run's status, text and rows
 * (segment / word / speaker times and ids), and an over-long row gets its
 * own INPUT_TOO_LONG without failing the rest of the batch (whole inputs:
 * chunking off; by default the library would split that row at its
 * pauses, tests/api/test_long_run.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "transcribe.h"

#define DATA     TR_SOURCE_DIR "/tests/data"
#define N_CLIP   4
#define MAX_ROWS 64

/* What one run left behind, single or batch row. */
typedef struct snap {
    transcribe_status status;
    char *raw, *full;
    int n_seg, n_word, n_spk;
    int64_t seg_t[MAX_ROWS][2], word_t[MAX_ROWS][2], spk_t[MAX_ROWS][2];
    int seg_spk[MAX_ROWS], spk_id[MAX_ROWS];
    char *seg_text[MAX_ROWS];
} snap;

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

static int capped(int n) {
    return n < MAX_ROWS ? n : MAX_ROWS;
}

/* row < 0: the latest single run; else batch row `row`. */
static void take(const struct transcribe_session *s, int row, transcribe_status st, snap *o) {
    memset(o, 0, sizeof *o);
    o->status = st;
    const bool b = row >= 0;
    o->raw = dup_or_null(b ? transcribe_batch_raw_text(s, row) : transcribe_raw_text(s));
    o->full = dup_or_null(b ? transcribe_batch_full_text(s, row) : transcribe_full_text(s));
    o->n_seg = b ? transcribe_batch_n_segments(s, row) : transcribe_n_segments(s);
    o->n_word = b ? transcribe_batch_n_words(s, row) : transcribe_n_words(s);
    o->n_spk = b ? transcribe_batch_n_speaker_segments(s, row) : transcribe_n_speaker_segments(s);
    for (int j = 0; j < capped(o->n_seg); j++) {
        struct transcribe_segment g;
        transcribe_segment_init(&g);
        CHECK((b ? transcribe_batch_get_segment(s, row, j, &g)
                 : transcribe_get_segment(s, j, &g)) == TRANSCRIBE_OK);
        o->seg_t[j][0] = g.t0_ms;
        o->seg_t[j][1] = g.t1_ms;
        o->seg_spk[j] = g.speaker_id;
        o->seg_text[j] = dup_or_null(g.text);
    }
    for (int j = 0; j < capped(o->n_word); j++) {
        struct transcribe_word w;
        transcribe_word_init(&w);
        CHECK((b ? transcribe_batch_get_word(s, row, j, &w) : transcribe_get_word(s, j, &w)) ==
              TRANSCRIBE_OK);
        o->word_t[j][0] = w.t0_ms;
        o->word_t[j][1] = w.t1_ms;
    }
    for (int j = 0; j < capped(o->n_spk); j++) {
        struct transcribe_speaker_segment r;
        transcribe_speaker_segment_init(&r);
        CHECK((b ? transcribe_batch_get_speaker_segment(s, row, j, &r)
                 : transcribe_get_speaker_segment(s, j, &r)) == TRANSCRIBE_OK);
        o->spk_t[j][0] = r.t0_ms;
        o->spk_t[j][1] = r.t1_ms;
        o->spk_id[j] = r.speaker_id;
    }
}

static void drop(snap *o) {
    free(o->raw);
    free(o->full);
    for (int j = 0; j < capped(o->n_seg); j++) free(o->seg_text[j]);
}

static bool same_str(const char *a, const char *b) {
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_same(const char *who, int B, int row, const snap *a, const snap *b) {
    CHECK_MSG(a->status == b->status, "%s B=%d row %d: status %d vs single %d", who, B, row,
              b->status, a->status);
    if (a->status != TRANSCRIBE_OK && a->status != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) return;
    CHECK_MSG(same_str(a->raw, b->raw), "%s B=%d row %d: raw text '%s' vs single '%s'", who, B, row,
              b->raw ? b->raw : "(null)", a->raw ? a->raw : "(null)");
    CHECK_MSG(same_str(a->full, b->full), "%s B=%d row %d: full text differs", who, B, row);
    CHECK_MSG(a->n_seg == b->n_seg && a->n_word == b->n_word && a->n_spk == b->n_spk,
              "%s B=%d row %d: rows %d/%d/%d vs single %d/%d/%d", who, B, row, b->n_seg, b->n_word,
              b->n_spk, a->n_seg, a->n_word, a->n_spk);
    for (int j = 0; j < capped(a->n_seg) && j < b->n_seg; j++)
        CHECK_MSG(a->seg_t[j][0] == b->seg_t[j][0] && a->seg_t[j][1] == b->seg_t[j][1] &&
                      a->seg_spk[j] == b->seg_spk[j] && same_str(a->seg_text[j], b->seg_text[j]),
                  "%s B=%d row %d: segment %d differs", who, B, row, j);
    for (int j = 0; j < capped(a->n_word) && j < b->n_word; j++)
        CHECK_MSG(a->word_t[j][0] == b->word_t[j][0] && a->word_t[j][1] == b->word_t[j][1],
                  "%s B=%d row %d: word %d times differ", who, B, row, j);
    for (int j = 0; j < capped(a->n_spk) && j < b->n_spk; j++)
        CHECK_MSG(a->spk_t[j][0] == b->spk_t[j][0] && a->spk_t[j][1] == b->spk_t[j][1] &&
                      a->spk_id[j] == b->spk_id[j],
                  "%s B=%d row %d: speaker row %d differs", who, B, row, j);
}

typedef struct family_case {
    const char *who, *model, *wav;
    enum transcribe_diarize_mode diarize;
    transcribe_timestamp_kind timestamps;
    bool want_rows; /* the full clip yields segment / word / speaker rows to compare */
} family_case;

static int g_polls, g_abort_at;
static bool abort_at(void *user) {
    (void)user;
    return ++g_polls >= g_abort_at;
}

static void run_case(const family_case *fc) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    sp.n_ctx = 1024;
    struct transcribe_session *s = NULL;
    if (transcribe_open(fc->model, NULL, &sp, &s) != TRANSCRIBE_OK) {
        CHECK_MSG(false, "%s: cannot open %s", fc->who, fc->model);
        return;
    }
    float *wav = NULL;
    int n_wav = 0;
    CHECK(transcribe_audio_load_file(fc->wav, 16000, &wav, &n_wav) == TRANSCRIBE_OK);
    struct transcribe_session_limits lim;
    transcribe_session_limits_init(&lim);
    CHECK(transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_max_audio_ms > 0);
    /* clips: the whole file, two slices of other lengths, and one over the
     * limit (the file repeated) */
    /* (the limit is a conservative estimate: go well past it) */
    const int n_long = (int)((lim.effective_max_audio_ms * 3 / 2 + 2000) * 16);
    float *clip[N_CLIP];
    int len[N_CLIP] = {n_wav, n_wav * 2 / 5, n_wav * 3 / 4, n_long};
    const int off[N_CLIP] = {0, n_wav / 5, n_wav / 8, 0};
    for (int c = 0; c < N_CLIP; c++) {
        clip[c] = malloc((size_t)len[c] * sizeof(float));
        for (int i = 0; i < len[c]; i++) clip[c][i] = wav[(off[c] + i) % n_wav];
    }
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.diarize = fc->diarize;
    rp.timestamps = fc->timestamps;
    rp.chunking = TRANSCRIBE_CHUNKING_OFF;
    snap single[N_CLIP];
    for (int c = 0; c < N_CLIP; c++)
        take(s, -1, transcribe_run(s, clip[c], len[c], &rp), &single[c]);
    CHECK_MSG(single[0].status == TRANSCRIBE_OK && single[0].raw && single[0].raw[0],
              "%s: the full clip decodes (status %d)", fc->who, single[0].status);
    CHECK_MSG(single[3].status == TRANSCRIBE_ERR_INPUT_TOO_LONG, "%s: over-long single: %d",
              fc->who, single[3].status);
    if (fc->want_rows)
        CHECK_MSG(single[0].n_seg + single[0].n_word + single[0].n_spk > 1,
                  "%s: the full clip has rows to compare", fc->who);
    /* batches of 1..4 rows in mixed orders; the 4-row one holds the long row */
    static const int order[4][4] = {{1}, {2, 0}, {0, 2, 1}, {2, 3, 0, 1}};
    for (int B = 1; B <= 4; B++) {
        const float *pcm[4];
        int n[4];
        for (int i = 0; i < B; i++) {
            pcm[i] = clip[order[B - 1][i]];
            n[i] = len[order[B - 1][i]];
        }
        CHECK_MSG(transcribe_run_batch(s, pcm, n, B, &rp) == TRANSCRIBE_OK, "%s: batch of %d",
                  fc->who, B);
        CHECK(transcribe_batch_n_results(s) == B);
        for (int i = 0; i < B && i < transcribe_batch_n_results(s); i++) {
            snap got;
            take(s, i, transcribe_batch_status(s, i), &got);
            check_same(fc->who, B, i, &single[order[B - 1][i]], &got);
            drop(&got);
        }
    }
    /* an abort while the rows are being prepared: no row claims OK */
    for (g_abort_at = 1; g_abort_at <= 3; g_abort_at++) {
        const float *pcm[3] = {clip[0], clip[1], clip[2]};
        int n[3] = {len[0], len[1], len[2]};
        g_polls = 0;
        transcribe_set_abort_callback(s, abort_at, NULL);
        transcribe_status st = transcribe_run_batch(s, pcm, n, 3, &rp);
        transcribe_set_abort_callback(s, NULL, NULL);
        CHECK_MSG(st == TRANSCRIBE_ERR_ABORTED, "%s: abort at poll %d: %d", fc->who, g_abort_at,
                  st);
        for (int i = 0; i < transcribe_batch_n_results(s); i++)
            CHECK_MSG(transcribe_batch_status(s, i) != TRANSCRIBE_OK,
                      "%s: abort at poll %d: row %d says OK", fc->who, g_abort_at, i);
    }
    for (int c = 0; c < N_CLIP; c++) {
        drop(&single[c]);
        free(clip[c]);
    }
    transcribe_audio_free(wav);
    transcribe_session_free(s);
}

int main(void) {
    static const family_case cases[] = {
        {"qwen3_asr", DATA "/qwen3_asr/tiny/qwen3-asr-tiny-ref-F16.gguf",
         TR_SOURCE_DIR "/samples/jfk.wav", TRANSCRIBE_DIARIZE_MODE_DEFAULT,
         TRANSCRIBE_TIMESTAMPS_AUTO, false},
        {"granite 1b", DATA "/granite/tiny-1b/granite-tiny-1b-ref-F16.gguf",
         TR_SOURCE_DIR "/samples/jfk.wav", TRANSCRIBE_DIARIZE_MODE_DEFAULT,
         TRANSCRIBE_TIMESTAMPS_AUTO, false},
        {"granite plus words", DATA "/granite/tiny-plus/granite-tiny-plus-ref-F16.gguf",
         TR_SOURCE_DIR "/samples/jfk.wav", TRANSCRIBE_DIARIZE_MODE_DEFAULT,
         TRANSCRIBE_TIMESTAMPS_WORD, true},
        {"granite plus speakers", DATA "/granite/tiny-plus/granite-tiny-plus-ref-F16.gguf",
         TR_SOURCE_DIR "/samples/jfk.wav", TRANSCRIBE_DIARIZE_MODE_ON, TRANSCRIBE_TIMESTAMPS_AUTO,
         true},
        {"moss", DATA "/moss/tiny/moss-tiny-ref-F16.gguf", DATA "/moss/mix.wav",
         TRANSCRIBE_DIARIZE_MODE_ON, TRANSCRIBE_TIMESTAMPS_AUTO, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    return TEST_DONE();
}
