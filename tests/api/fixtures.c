#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "gguf/gguf_writer.h"

static gguf_writer *make(const char *arch) {
    gguf_writer *w = tr_gguf_writer_create();
    if (!w) return NULL;
    bool ok = tr_gguf_writer_set_str(w, "general.architecture", arch) &&
              tr_gguf_writer_set_str(w, "general.name", "API test fixture") &&
              tr_gguf_writer_set_str(w, "stt.variant", "fixture") &&
              tr_gguf_writer_set_u32(w, "general.file_type", 0);
    if (!ok) {
        tr_gguf_writer_free(w);
        return NULL;
    }
    return w;
}

int tr_fixture_write_gguf(const char *path, const char *arch) {
    gguf_writer *w = make(arch);
    if (!w) return -1;
    transcribe_status st = tr_gguf_writer_write(w, path);
    tr_gguf_writer_free(w);
    return st == TRANSCRIBE_OK ? 0 : -1;
}

int tr_fixture_write_truncated_gguf(const char *path, const char *arch, long n_bytes) {
    gguf_writer *w = make(arch);
    if (!w) return -1;
    void *buf = NULL;
    size_t size = 0;
    transcribe_status st = tr_gguf_writer_to_memory(w, &buf, &size);
    tr_gguf_writer_free(w);
    if (st != TRANSCRIBE_OK) return -1;
    if (n_bytes < 0 || (size_t)n_bytes > size) n_bytes = (long)size;
    FILE *f = fopen(path, "wb");
    int rc = -1;
    if (f) {
        rc = fwrite(buf, 1, (size_t)n_bytes, f) == (size_t)n_bytes ? 0 : -1;
        if (fclose(f) != 0) rc = -1;
    }
    free(buf);
    return rc;
}

float *tr_fixture_load_audio(const char *path, int *n_samples) {
    tr_audio a;
    memset(&a, 0, sizeof a);
    if (tr_audio_load_file(path, 16000, &a) != TRANSCRIBE_OK) return NULL;
    if (a.n <= 0 || a.n > 0x7fffffff) {
        tr_audio_free(&a);
        return NULL;
    }
    *n_samples = (int)a.n;
    return a.pcm; /* malloc'ed: the caller frees it */
}
