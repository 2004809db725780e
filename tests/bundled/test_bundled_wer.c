/* Word error rate of the bundled model on committed held-out utterances
 * (tests/data/bundled/: sentences and espeak-ng voices never used in
 * training, written by tools/train/synth.py test and picked by
 * tools/train/pick_ci_set.py), through the public API exactly as a user
 * would run it. Real transcription tested end to end: the bound below is
 * the measured WER of this set plus a margin for kernel rounding on other
 * instruction sets, and the test prints the WER per text source. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_files.h"
#include "bundled_path.h"
#include "test_util.h"
#include "word_errors.h"
#include "transcribe.h"

#define DATA_DIR  TR_SOURCE_DIR "/tests/data/bundled"
#define MAX_WER   0.10 /* the target; measured 7.41 % on this set (see heldout.tsv) */
#define MAX_WORDS TR_TEST_MAX_WORDS

typedef struct {
    char name[32];
    long errors, words, utts;
} tally;

static tally *tally_for(tally *t, int *n, int cap, const char *name) {
    for (int i = 0; i < *n; i++)
        if (strcmp(t[i].name, name) == 0) return &t[i];
    if (*n >= cap) return NULL;
    snprintf(t[*n].name, sizeof t[*n].name, "%s", name);
    return &t[(*n)++];
}

int main(void) {
    char path[1024];
    CHECK(tr_bundled_model_path(path, sizeof path));
    char *list = tr_test_read_text(DATA_DIR "/heldout.tsv", NULL);
    CHECK_MSG(list != NULL, "cannot read %s", DATA_DIR "/heldout.tsv");
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, NULL, &s) == TRANSCRIBE_OK);
    if (!s || !list) {
        free(list);
        transcribe_session_free(s);
        return TEST_DONE();
    }
    tally src[8];
    int n_src = 0;
    long errors = 0, words = 0;
    char *save = NULL;
    for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        /* file <TAB> source <TAB> reference */
        char *f1 = strchr(line, '\t'), *f2 = f1 ? strchr(f1 + 1, '\t') : NULL;
        if (!f2) continue;
        *f1 = *f2 = '\0';
        char wav[1024], ref[1024], hyp[4096];
        snprintf(wav, sizeof wav, "%s/%s", DATA_DIR, line);
        snprintf(ref, sizeof ref, "%s", f2 + 1);
        float *pcm = NULL;
        int n = 0;
        hyp[0] = '\0';
        CHECK_MSG(transcribe_audio_load_file(wav, 16000, &pcm, &n) == TRANSCRIBE_OK, "%s", wav);
        if (pcm && transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK)
            snprintf(hyp, sizeof hyp, "%s", transcribe_full_text(s));
        transcribe_audio_free(pcm);
        char *rw[MAX_WORDS], *hw[MAX_WORDS];
        int nr = tr_test_split_words(ref, " \t\r\n", rw, MAX_WORDS),
            nh = tr_test_split_words(hyp, " \t\r\n", hw, MAX_WORDS);
        int e = tr_test_word_edits(rw, nr, hw, nh);
        errors += e;
        words += nr;
        tally *t = tally_for(src, &n_src, 8, f1 + 1);
        if (t) {
            t->errors += e;
            t->words += nr;
            t->utts++;
        }
    }
    for (int i = 0; i < n_src; i++)
        printf("%-10s %3ld utterances %4ld words  WER %.2f %%\n", src[i].name, src[i].utts,
               src[i].words,
               100.0 * (double)src[i].errors / (double)(src[i].words ? src[i].words : 1));
    double wer = (double)errors / (double)(words ? words : 1);
    printf("all        %4ld words  WER %.2f %%\n", words, 100.0 * wer);
    CHECK(words > 0);
    CHECK_MSG(wer <= MAX_WER, "WER %.2f %% above %.0f %%", 100.0 * wer, 100.0 * MAX_WER);
    free(list);
    transcribe_session_free(s);
    return TEST_DONE();
}
