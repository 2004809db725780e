/* Opens GGUF or legacy .bin files by their magic, like the library does. */
#include <stdio.h>
#include <string.h>

#include "inspect_model.h"

static const char *why(transcribe_status st) {
    switch (st) {
    case TRANSCRIBE_ERR_FILE_NOT_FOUND:
        return "file not found";
    case TRANSCRIBE_ERR_UNSUPPORTED_ARCH:
        return "not a supported model";
    case TRANSCRIBE_ERR_OOM:
        return "out of memory";
    default:
        return "malformed or unreadable";
    }
}

int inspect_model_open(const char *path, inspect_model *m) {
    memset(m, 0, sizeof *m);
    unsigned char *head = m->head;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "transcribe-inspect: cannot open '%s'\n", path);
        return 1;
    }
    size_t got = fread(head, 1, sizeof m->head, f);
    m->n_head = got;
    fclose(f);
    transcribe_status st;
    if (tr_ggml_bin_sniff(head, got))
        st = tr_ggml_bin_open(path, &m->bin);
    else
        st = tr_gguf_open(path, &m->gguf);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "transcribe-inspect: '%s' is not a valid model file (%s)\n", path, why(st));
        return 1;
    }
    return 0;
}

void inspect_model_close(inspect_model *m) {
    tr_gguf_close(m->gguf);
    tr_ggml_bin_close(m->bin);
    memset(m, 0, sizeof *m);
}

int64_t inspect_model_n_tensors(const inspect_model *m) {
    return m->gguf ? tr_gguf_n_tensors(m->gguf) : tr_ggml_bin_n_tensors(m->bin);
}

const tr_tensor *inspect_model_tensor_at(const inspect_model *m, int64_t i) {
    return m->gguf ? tr_gguf_tensor_at(m->gguf, i) : tr_ggml_bin_tensor_at(m->bin, i);
}

const tr_tensor *inspect_model_find(const inspect_model *m, const char *name) {
    return m->gguf ? tr_gguf_find_tensor(m->gguf, name) : tr_ggml_bin_find_tensor(m->bin, name);
}
