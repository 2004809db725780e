/* Paths and load outcomes through the public API (c-api contract: every path
 * crossing the API is UTF-8). In a directory whose name is not ASCII
 * ("café-日本語", spelled in bytes so the source charset does not matter):
 * a real model loads, a file of an unknown architecture is found and
 * refused as such (not "not found"), a missing file is not found, and the
 * directory is a valid backend directory. Beside: how each kind of bad file
 * is classified, with *out_model cleared on every failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "test_util.h"
#include "transcribe.h"

#define MODEL TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf"

static const char k_dir_name[] = "transcribe-utf8-caf\xC3\xA9-\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E";

static int copy_file(const char *src, const char *dst) {
    FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
    int ok = in && out;
    char buf[1 << 16];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok ? 0 : -1;
}

/* Loads path; checks the status and that *out_model is NULL on failure. */
static void expect_load(const char *label, const char *path, transcribe_status want) {
    struct transcribe_model *m = (struct transcribe_model *)(void *)0x10; /* never read */
    transcribe_status st = transcribe_model_load_file(path, NULL, &m);
    CHECK_MSG(st == want, "%s: %s, expected %s", label, transcribe_status_string(st),
              transcribe_status_string(want));
    if (st != TRANSCRIBE_OK) CHECK_MSG(m == NULL, "%s: out_model not cleared", label);
    if (st == TRANSCRIBE_OK) transcribe_model_free(m);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    char base[512], dir[700], path[800];
    snprintf(base, sizeof base, "%s/tr-paths-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) {
        fprintf(stderr, "cannot make a temporary directory\n");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/%s", base, k_dir_name);
    CHECK(mkdir(dir, 0700) == 0);

    snprintf(path, sizeof path, "%s/model.gguf", dir);
    CHECK(copy_file(MODEL, path) == 0);
    expect_load("model in a UTF-8 directory", path, TRANSCRIBE_OK);
    unlink(path);

    snprintf(path, sizeof path, "%s/banana.gguf", dir);
    CHECK(tr_fixture_write_gguf(path, "banana") == 0);
    expect_load("unknown architecture", path, TRANSCRIBE_ERR_UNSUPPORTED_ARCH);
    unlink(path);

    snprintf(path, sizeof path, "%s/__missing__.gguf", dir);
    expect_load("missing file", path, TRANSCRIBE_ERR_FILE_NOT_FOUND);

    CHECK(transcribe_init_backends(dir) != TRANSCRIBE_ERR_FILE_NOT_FOUND);
    snprintf(path, sizeof path, "%s/__missing_dir__", dir);
    CHECK(transcribe_init_backends(path) == TRANSCRIBE_ERR_FILE_NOT_FOUND);

    /* classification of bad files */
    expect_load("a directory", dir, TRANSCRIBE_ERR_GGUF);
    snprintf(path, sizeof path, "%s/parakeet-header.gguf", dir);
    CHECK(tr_fixture_write_gguf(path, "parakeet") == 0);
    expect_load("known architecture, no payload", path, TRANSCRIBE_ERR_GGUF);
    unlink(path);
    snprintf(path, sizeof path, "%s/bad-magic.gguf", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        static const unsigned char junk[32] = {'N', 'O', 'P', 'E', 3};
        fwrite(junk, 1, sizeof junk, f);
        fclose(f);
    }
    expect_load("bad magic", path, TRANSCRIBE_ERR_GGUF);
    unlink(path);

    rmdir(dir);
    rmdir(base);
    return TEST_DONE();
}
