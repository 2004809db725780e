/* A model file of either container, for the read-only subcommands. */
#ifndef TR_INSPECT_MODEL_H
#define TR_INSPECT_MODEL_H

#include "gguf/ggml_bin.h"
#include "gguf/gguf.h"

typedef struct inspect_model {
    gguf_file *gguf; /* exactly one of these is set */
    tr_ggml_bin *bin;
    unsigned char head[4]; /* the file's first bytes (which family claims it) */
    size_t n_head;
} inspect_model;

/* Returns 0 on success; prints the failure otherwise. */
int inspect_model_open(const char *path, inspect_model *m);
void inspect_model_close(inspect_model *m);
int64_t inspect_model_n_tensors(const inspect_model *m);
const tr_tensor *inspect_model_tensor_at(const inspect_model *m, int64_t i);
const tr_tensor *inspect_model_find(const inspect_model *m, const char *name);

#endif
