/* Diarization for every family (transcribe_run_params.diarizer): the
 * bundled Parakeet-CTC demo model transcribes the two-speaker clip
 * (multitalker-2spk-mix.wav) and a tiny synthetic Sortformer (sf_synth.h)
 * labels it. Every word and segment carries a speaker id, each word's id is
 * the one core/speaker_label.h gives for its span over the diarizer's own
 * speaker rows (which the result lists), the transcript is the one without
 * a diarizer, long audio split into pieces is labelled over the whole input,
 * a batch labels each utterance, VAD keeps the labels on the input's clock,
 * a model without diarization is refused before anything changes, and an
 * abort during the diarization ends the run ABORTED. Whisper (the committed
 * random-weight reference model of tests/data/whisper/tiny) with estimated
 * word times (docs/formats/whisper.md §13): every word carries a speaker id
 * and its own times on the file's clock, inside its segment. Then the
 * `transcribe` binary (argv[1]) with --diarizer: JSON words carry speaker
 * ids (Parakeet and Whisper). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "core/result.h"
#include "core/speaker_label.h"
#include "sf_synth.h"
#include "test_util.h"
#include "transcribe.h"

#define CLIP    TR_CORPUS_DIR "/samples/multitalker-2spk-mix.wav"
#define ASR     TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf"
#define WHISPER TR_SOURCE_DIR "/tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf"

static char g_diar[512];
static float *g_pcm;
static int g_n;

/* Every word labelled, and as speaker_label.h labels it over the result's speaker rows. */
static void check_labels(struct transcribe_session *s, bool batch, int u, const char *what) {
    const int nw = batch ? transcribe_batch_n_words(s, u) : transcribe_n_words(s);
    const int ns =
        batch ? transcribe_batch_n_speaker_segments(s, u) : transcribe_n_speaker_segments(s);
    const int ng = batch ? transcribe_batch_n_segments(s, u) : transcribe_n_segments(s);
    CHECK_MSG(nw > 0 && ns > 0 && ng > 0, "%s: %d words, %d speaker rows", what, nw, ns);
    tr_result_speaker *rows = calloc((size_t)(ns > 0 ? ns : 1), sizeof *rows);
    for (int i = 0; i < ns; i++) {
        struct transcribe_speaker_segment r;
        transcribe_speaker_segment_init(&r);
        CHECK((batch ? transcribe_batch_get_speaker_segment(s, u, i, &r)
                     : transcribe_get_speaker_segment(s, i, &r)) == TRANSCRIBE_OK);
        rows[i] = (tr_result_speaker){r.t0_ms, r.t1_ms, r.speaker_id, r.p};
    }
    float *act = NULL;
    int nf = 0, nsp = 0;
    CHECK(tr_speaker_activity_from_rows(rows, ns, 10.0, &act, &nf, &nsp));
    const tr_speaker_activity a = {act, nf, nsp, 10.0};
    int bad = 0, per[5] = {0};
    for (int i = 0; i < nw; i++) {
        struct transcribe_word w;
        transcribe_word_init(&w);
        CHECK((batch ? transcribe_batch_get_word(s, u, i, &w) : transcribe_get_word(s, i, &w)) ==
              TRANSCRIBE_OK);
        if (w.speaker_id < 1 || w.speaker_id > 4 ||
            w.speaker_id != tr_speaker_for_span(&a, w.t0_ms, w.t1_ms))
            bad++;
        else
            per[w.speaker_id]++;
    }
    CHECK_MSG(bad == 0, "%s: %d of %d words unlabelled or mislabelled", what, bad, nw);
    for (int i = 0; i < ng; i++) {
        struct transcribe_segment g;
        transcribe_segment_init(&g);
        CHECK((batch ? transcribe_batch_get_segment(s, u, i, &g)
                     : transcribe_get_segment(s, i, &g)) == TRANSCRIBE_OK);
        CHECK(g.speaker_id >= 1 && g.speaker_id <= 4);
    }
    printf("%s: %d words (speakers 1-4: %d %d %d %d), %d speaker rows\n", what, nw, per[1], per[2],
           per[3], per[4], ns);
    free(act);
    free(rows);
}

/* Counts the polls; aborts at poll number *limit (0 = never). */
typedef struct polls {
    int calls, limit;
} polls;

static bool abort_at(void *user) {
    polls *p = user;
    return ++p->calls == p->limit;
}

/* The progress a diarized run reports: never backwards, 1 only as the
 * last call (after the diarizer's pass, which fills the part above
 * TR_DIAR_PROGRESS_AT's 0.9), some of it from that pass. */
typedef struct {
    float v[4096];
    int n;
} fractions;

static void on_progress(float f, void *user) {
    fractions *fr = user;
    if (fr->n < 4096) fr->v[fr->n++] = f;
}

static void check_progress(const fractions *fr, const char *what) {
    int back = 0, ones = 0, diar = 0;
    for (int i = 0; i < fr->n; i++) {
        back += i > 0 && fr->v[i] < fr->v[i - 1];
        ones += fr->v[i] >= 1.0f;
        diar += fr->v[i] > 0.9f + 1e-6f && fr->v[i] < 1.0f;
    }
    CHECK_MSG(fr->n > 2 && back == 0 && ones == 1 && fr->v[fr->n - 1] == 1.0f && diar > 0,
              "%s: %d progress calls, %d backwards, %d at 1 (last %.3f), %d from the diarizer",
              what, fr->n, back, ones, fr->n ? fr->v[fr->n - 1] : 0.0f, diar);
}

static void library(void) {
    struct transcribe_model *diar = NULL, *asr = NULL;
    CHECK(transcribe_model_load_file(g_diar, NULL, &diar) == TRANSCRIBE_OK);
    CHECK(transcribe_model_load_file(ASR, NULL, &asr) == TRANSCRIBE_OK);
    struct transcribe_session *s = NULL;
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    CHECK(asr && transcribe_session_init(asr, &sp, &s) == TRANSCRIBE_OK);
    if (!s || !diar) goto done;
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, g_pcm, g_n, &p) == TRANSCRIBE_OK);
    char *plain = strdup(transcribe_full_text(s));
    struct transcribe_word w0;
    transcribe_word_init(&w0);
    CHECK(transcribe_get_word(s, 0, &w0) == TRANSCRIBE_OK && w0.speaker_id == 0);
    CHECK(transcribe_n_speaker_segments(s) == 0);

    p.diarizer = diar;
    static fractions fr;
    fr.n = 0;
    transcribe_set_progress_callback(s, on_progress, &fr);
    CHECK(transcribe_run(s, g_pcm, g_n, &p) == TRANSCRIBE_OK);
    check_progress(&fr, "run");
    CHECK(plain && !strcmp(transcribe_full_text(s), plain));
    check_labels(s, false, 0, "run");

    /* long audio: pieces of at most 4 s, labelled over the whole input */
    struct transcribe_run_params pc = p;
    pc.chunking = TRANSCRIBE_CHUNKING_ON;
    pc.chunk_max_ms = 4000;
    fr.n = 0;
    CHECK(transcribe_run(s, g_pcm, g_n, &pc) == TRANSCRIBE_OK);
    check_progress(&fr, "pieces");
    transcribe_set_progress_callback(s, NULL, NULL);
    CHECK(transcribe_n_pieces(s) >= 2);
    check_labels(s, false, 0, "pieces");

    /* a batch: each utterance its labels */
    const float *bp[2] = {g_pcm, g_pcm + g_n / 2};
    const int bn[2] = {g_n, g_n - g_n / 2};
    CHECK(transcribe_run_batch(s, bp, bn, 2, &p) == TRANSCRIBE_OK);
    check_labels(s, true, 0, "batch 0");
    check_labels(s, true, 1, "batch 1");

    /* a diarizer freed as soon as its call returns (the contract: it must
     * outlive the call, no more), then another one loaded, maybe at the
     * same address: the session kept nothing of the first (it freed the
     * first's family session through the freed model; ASan saw it) */
    for (int k = 0; k < 2; k++) {
        struct transcribe_model *once = NULL;
        CHECK(transcribe_model_load_file(g_diar, NULL, &once) == TRANSCRIBE_OK);
        struct transcribe_run_params po = p;
        po.diarizer = once;
        if (k == 0) {
            CHECK(transcribe_run(s, g_pcm, g_n, &po) == TRANSCRIBE_OK);
            check_labels(s, false, 0, "a diarizer freed after its run");
        } else {
            CHECK(transcribe_run_batch(s, bp, bn, 2, &po) == TRANSCRIBE_OK);
            check_labels(s, true, 1, "a diarizer freed after its batch");
        }
        transcribe_model_free(once);
    }

    /* a model without diarization: refused before anything changes */
    const int words = transcribe_batch_n_words(s, 1);
    struct transcribe_run_params pb = p;
    pb.diarizer = asr;
    CHECK(transcribe_run(s, g_pcm, g_n, &pb) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_n_words(s, 1) == words);

    /* abort inside the diarizer */
    polls asr_only = {0, 0}, all = {0, 0};
    transcribe_set_abort_callback(s, abort_at, &asr_only);
    struct transcribe_run_params pn = p;
    pn.diarizer = NULL;
    CHECK(transcribe_run(s, g_pcm, g_n, &pn) == TRANSCRIBE_OK);
    transcribe_set_abort_callback(s, abort_at, &all);
    CHECK(transcribe_run(s, g_pcm, g_n, &p) == TRANSCRIBE_OK);
    CHECK_MSG(all.calls > asr_only.calls, "%d polls with the diarizer, %d without", all.calls,
              asr_only.calls);
    polls in_diar = {0, asr_only.calls + 1};
    transcribe_set_abort_callback(s, abort_at, &in_diar);
    transcribe_status st = transcribe_run(s, g_pcm, g_n, &p);
    CHECK_MSG(st == TRANSCRIBE_ERR_ABORTED, "%s", transcribe_status_string(st));
    CHECK(transcribe_was_aborted(s));
    transcribe_set_abort_callback(s, NULL, NULL);
    free(plain);

    /* the diarization model itself with a diarizer: refused (its turns would only be
     * relabelled, "[S1] speaker_2"), the previous result kept, the reason in last_error */
    struct transcribe_session *ds = NULL;
    CHECK(transcribe_session_init(diar, &sp, &ds) == TRANSCRIBE_OK);
    if (ds) {
        struct transcribe_run_params pd;
        transcribe_run_params_init(&pd);
        CHECK(transcribe_run(ds, g_pcm, g_n, &pd) == TRANSCRIBE_OK);
        const int turns = transcribe_n_speaker_segments(ds);
        const int segs = transcribe_n_segments(ds);
        CHECK(turns > 0 && segs == turns);
        for (int k = 0; k < 2; k++) { /* the same model, then another diarizer */
            struct transcribe_model *other = NULL;
            if (k == 1) CHECK(transcribe_model_load_file(g_diar, NULL, &other) == TRANSCRIBE_OK);
            pd.diarizer = k == 0 ? diar : other;
            CHECK(transcribe_run(ds, g_pcm, g_n, &pd) == TRANSCRIBE_ERR_INVALID_ARG);
            CHECK_MSG(strstr(transcribe_session_last_error(ds), "diarization model itself") != NULL,
                      "%s", transcribe_session_last_error(ds));
            CHECK(transcribe_n_speaker_segments(ds) == turns && transcribe_n_segments(ds) == segs);
            const float *one[1] = {g_pcm};
            CHECK(transcribe_run_batch(ds, one, &g_n, 1, &pd) == TRANSCRIBE_ERR_INVALID_ARG);
            transcribe_model_free(other);
        }
        /* each turn segment keeps its own speaker */
        for (int i = 0; i < segs; i++) {
            struct transcribe_segment g;
            transcribe_segment_init(&g);
            CHECK(transcribe_get_segment(ds, i, &g) == TRANSCRIBE_OK);
            char want[32];
            snprintf(want, sizeof want, "speaker_%d", g.speaker_id);
            CHECK_MSG(g.text && strstr(g.text, want), "segment %d: '%s' speaker %d", i,
                      g.text ? g.text : "", g.speaker_id);
        }
    }
    transcribe_session_free(ds);
done:
    transcribe_session_free(s);
    transcribe_model_free(asr);
    transcribe_model_free(diar);
}

/* Whisper's words: each with a speaker (as speaker_label.h gives it) and its own times,
 * monotonic inside its segment, not just the segment's span. */
static void whisper(void) {
    struct transcribe_model *diar = NULL, *asr = NULL;
    CHECK(transcribe_model_load_file(g_diar, NULL, &diar) == TRANSCRIBE_OK);
    CHECK(transcribe_model_load_file(WHISPER, NULL, &asr) == TRANSCRIBE_OK);
    struct transcribe_session *s = NULL;
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    CHECK(asr && transcribe_session_init(asr, &sp, &s) == TRANSCRIBE_OK);
    if (s && diar) {
        struct transcribe_run_params p;
        transcribe_run_params_init(&p);
        p.language = "en";
        p.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
        p.diarizer = diar;
        CHECK(transcribe_run(s, g_pcm, g_n, &p) == TRANSCRIBE_OK);
        CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_WORD);
        check_labels(s, false, 0, "whisper");
        const int64_t end_ms = (int64_t)g_n * 1000 / 16000;
        /* (random weights: the decoded segments may run past the audio's end, as
         * upstream keeps them; outputs clamp them) */
        int bad = 0, inner = 0, speakers = 0, last_spk = 0, in_audio = 0;
        int64_t prev = 0;
        for (int i = 0; i < transcribe_n_words(s); i++) {
            struct transcribe_word w;
            transcribe_word_init(&w);
            struct transcribe_segment g;
            transcribe_segment_init(&g);
            CHECK(transcribe_get_word(s, i, &w) == TRANSCRIBE_OK);
            CHECK(transcribe_get_segment(s, w.seg_index, &g) == TRANSCRIBE_OK);
            if (w.t0_ms < prev || w.t1_ms < w.t0_ms || w.t0_ms < g.t0_ms || w.t1_ms > g.t1_ms)
                bad++;
            if (w.t0_ms < end_ms) in_audio++;
            if (w.t0_ms > g.t0_ms && w.t1_ms < g.t1_ms) inner++;
            if (w.speaker_id != last_spk) speakers++;
            last_spk = w.speaker_id;
            prev = w.t0_ms;
        }
        CHECK_MSG(bad == 0, "whisper: %d words out of order or outside their segment", bad);
        CHECK_MSG(inner > 0, "whisper: every word carries its segment's span");
        CHECK(in_audio > 1);
        printf("whisper: %d words strictly inside their segment, %d start inside the audio, %d "
               "speaker changes\n",
               inner, in_audio, speakers - 1);
    }
    transcribe_session_free(s);
    transcribe_model_free(asr);
    transcribe_model_free(diar);
}

/* Every word object of the JSON names its speaker (and has times); the count of words. */
static int json_words_with_speakers(const char *out) {
    const char *words = strstr(out, "\"words\":[");
    CHECK_MSG(words != NULL, "json: %.200s", out);
    int n_words = 0, n_spk = 0;
    for (const char *p = words ? strstr(words, "{\"t0_ms\"") : NULL; p;
         p = strstr(p + 1, "{\"t0_ms\"")) {
        const char *end = strchr(p, '}');
        if (!end) break;
        n_words++;
        const char *k = strstr(p, "\"speaker_id\":"), *t1 = strstr(p, "\"t1_ms\":");
        if (k && k < end && t1 && t1 < end) n_spk++;
        if (end[1] == ']') break;
    }
    CHECK_MSG(n_words > 0 && n_spk == n_words, "%d of %d words with a speaker", n_spk, n_words);
    return n_words;
}

static void cli(const char *bin) {
    static char out[1 << 17], err[1 << 16];
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' --diarizer '%s' -f json --timestamps word '%s'", bin,
             ASR, g_diar, CLIP);
    CHECK(tr_cli_run(cmd, out, sizeof out, err, sizeof err) == 0);
    json_words_with_speakers(out);
    /* one word a cue: each cue has its own word's speaker (they had the
     * segment's main speaker), and text lines change at word turns */
    /* (the reference tiny model: its speakers alternate on this clip) */
    const char *ref = TR_SOURCE_DIR "/tests/data/sortformer/sortformer-tiny-ref-F32.gguf";
    snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' --diarizer '%s' -f json --max-line-chars 1 '%s'",
             bin, ASR, ref, CLIP);
    CHECK(tr_cli_run(cmd, out, sizeof out, err, sizeof err) == 0);
    {
        char *cues = strstr(out, "\"cues\":["), *words = strstr(out, "\"words\":[");
        char *segs = strstr(out, "\"segments\":[");
        int nc = 0, nw = 0, cue_spk[512], word_spk[512];
        for (char *q = cues; q && segs && nc < 512;) {
            q = strstr(q, "\"speaker_id\":");
            if (!q || q > segs) break;
            cue_spk[nc++] = atoi(q += 13);
        }
        for (char *q = words; q && nw < 512;) {
            q = strstr(q, "\"speaker_id\":");
            if (!q) break;
            word_spk[nw++] = atoi(q += 13);
        }
        int turns = 0;
        for (int i = 1; i < nw; i++) turns += word_spk[i] != word_spk[i - 1];
        CHECK_MSG(cues && words && nc == nw && nw > 4 && turns > 0, "%d cues, %d words, %d turns",
                  nc, nw, turns);
        for (int i = 0; i < nc && i < nw; i++)
            CHECK_MSG(cue_spk[i] == word_spk[i], "cue %d: S%d, its word S%d", i + 1, cue_spk[i],
                      word_spk[i]);
        snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' --diarizer '%s' '%s'", bin, ASR, ref, CLIP);
        CHECK(tr_cli_run(cmd, out, sizeof out, err, sizeof err) == 0);
        int lines = 0;
        for (char *q = out; (q = strchr(q, '\n')); q++) lines++;
        CHECK_MSG(lines == turns + 1, "%d txt lines for %d word turns: %s", lines, turns, out);
    }
    /* the diarizer run as the model: overlapping turns of two speakers keep
     * their times in the cues (none squashed to zero length) */
    snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' -f srt '%s'", bin, ref, CLIP);
    CHECK(tr_cli_run(cmd, out, sizeof out, err, sizeof err) == 0);
    {
        int zero = 0, n = 0;
        for (char *q = strstr(out, " --> "); q; q = strstr(q + 5, " --> ")) {
            n++;
            zero += strncmp(q - 12, q + 5, 12) == 0;
        }
        CHECK_MSG(n > 0 && zero == 0, "%d of %d cues of zero length", zero, n);
    }
    /* whisper's estimated word times, diarized */
    snprintf(cmd, sizeof cmd,
             "'%s' -q -m '%s' -l en --diarizer '%s' -f json --timestamps word '%s'", bin, WHISPER,
             g_diar, CLIP);
    CHECK(tr_cli_run(cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK_MSG(strstr(out, "\"timestamps\":\"word\""), "%.300s", out);
    json_words_with_speakers(out);
    /* a non-diarizer is refused */
    snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' --diarizer '%s' '%s'", bin, ASR, ASR, CLIP);
    CHECK(tr_cli_run(cmd, out, sizeof out, err, sizeof err) != 0);
    CHECK(strstr(err, "not a diarization model") != NULL);
    /* a diarization model given a diarizer is refused, with the reason */
    snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' --diarizer '%s' '%s'", bin, g_diar, g_diar, CLIP);
    CHECK(tr_cli_run(cmd, out, sizeof out, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, "diarization model itself") != NULL, "%s", err);
    CHECK_MSG(out[0] == '\0', "stdout: %.200s", out);
}

int main(int argc, char **argv) {
    snprintf(g_diar, sizeof g_diar, "%s/sf_diar_%d.gguf", TR_BINARY_DIR, (int)getpid());
    sf_synth_cfg c = sf_synth_default();
    c.head_bias = -0.4f;
    CHECK(sf_synth_write(&c, g_diar));
    CHECK(transcribe_audio_load_file(CLIP, 16000, &g_pcm, &g_n) == TRANSCRIBE_OK);
    if (g_pcm) library();
    if (g_pcm) whisper();
    if (argc > 1 && g_pcm) cli(argv[1]);
    transcribe_audio_free(g_pcm);
    remove(g_diar);
    return TEST_DONE();
}
