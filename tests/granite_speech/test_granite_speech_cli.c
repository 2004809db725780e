/* Granite Speech through the `transcribe` binary (path in argv[1]) on the
 * reference tiny models: plain text, translation to German on tiny-1b,
 * speaker labels with --diarize in txt ([S1] …), vtt (<v S1>) and json
 * ("speaker"), speakers kept apart across the pieces of a chunked run,
 * word rows with --timestamps word, and the task gate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "test_util.h"

#define DATA TR_SOURCE_DIR "/tests/data/granite"
#define M1B  DATA "/tiny-1b/granite-tiny-1b-ref-F16.gguf"
#define MPL  DATA "/tiny-plus/granite-tiny-plus-ref-F16.gguf"
#define JFK  TR_SOURCE_DIR "/samples/jfk.wav"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' -q %s '%s'", g_bin, args, JFK);
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

static void expect(const char *args, int rc_want, const char *needle) {
    int rc = run(args);
    CHECK_MSG(rc == rc_want && strstr(g_out, needle), "%s: rc %d, out '%s', err '%s'", args, rc,
              g_out, g_err);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("usage: test_granite_speech_cli <transcribe binary>\n");
        return 1;
    }
    g_bin = argv[1];
    expect("-m '" M1B "'", 0,
           "And so my fellow Americans, ask not what your country can do for you. Whole Earth "
           "catalog access to tools! stay hungry and foolish friends caf\xc3\xa9 1984\n");
    expect("-m '" M1B "' -t --target-language de", 0,
           "Und so meine lieben amerikanischen Mitb\xc3\xbcrger, fragt nicht");
    expect("-m '" MPL "' --diarize", 0,
           "[S1] And so my fellow Americans,\n[S2] ask not what your country can\n[S1] do for "
           "you.\n[S2] Whole Earth catalog access to tools!\n[S1] stay hungry and foolish\n");
    expect("-m '" MPL "' --diarize -f vtt", 0,
           "WEBVTT\n\n00:00:00.000 --> 00:00:11.000\n<v S1>And so my fellow Americans,\n<v S2>ask");
    /* SRT as VTT: one cue over the file, each turn's speaker marked (it lost them) */
    expect("-m '" MPL "' --diarize -f srt", 0,
           "1\n00:00:00,000 --> 00:00:11,000\n[S1] And so my fellow Americans,\n[S2] ask");
    expect("-m '" MPL "' --diarize -f json", 0,
           "{\"t0_ms\":0,\"t1_ms\":0,\"speaker_id\":2,\"speaker\":\"S2\",\"text\":\"ask not what "
           "your country can\"}");
    expect("-m '" MPL "' --timestamps word -f json", 0,
           "\"words\":[{\"t0_ms\":300,\"t1_ms\":620,\"text\":\"And\"}");
    /* chunked speakers: each piece numbers its own speakers, so the stitch
     * keeps them apart (piece 2's speaker 1 is S3, not S1) */
    expect("-m '" MPL "' --diarize --chunk on --chunk-max-s 5", 0,
           "[S1] stay hungry and foolish\n[S3] And so my fellow Americans,\n[S4] ask not");
    int rc = run("-m '" MPL "' -t --target-language de");
    CHECK_MSG(rc != 0, "translate on plus: rc %d", rc);
    return TEST_DONE();
}
