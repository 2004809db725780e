/* `tensor`: dequantize one tensor to a float32 .npy in PyTorch order. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "inspect_model.h"
#include "same_file.h"
#include "tensor/dtype.h"

int inspect_tensor(int argc, char **argv) {
    const char *model = NULL, *name = NULL, *out = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!model)
            model = argv[i];
        else if (!name)
            name = argv[i];
        else
            model = NULL, i = argc; /* too many: force usage */
    }
    if (!model || !name || !out) {
        fprintf(stderr, "usage: transcribe-inspect tensor MODEL NAME -o OUT.npy\n");
        return 2;
    }
    if (tool_same_file(out, model)) {
        fprintf(stderr, "transcribe-inspect: -o %s is the model it reads; give another path\n",
                out);
        return 2;
    }
    inspect_model m;
    if (inspect_model_open(model, &m)) return 1;
    int rc = 1;
    const tr_tensor *t = inspect_model_find(&m, name);
    if (!t) {
        fprintf(stderr, "transcribe-inspect: no tensor '%s' in '%s'\n", name, model);
        goto done;
    }
    if (!tr_type_valid(t->type)) {
        fprintf(stderr, "transcribe-inspect: cannot dequantize type %s\n", tr_type_name(t->type));
        goto done;
    }
    int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
    float *buf = malloc((size_t)(rows * t->ne[0]) * sizeof(float));
    if (!buf) {
        fprintf(stderr, "transcribe-inspect: out of memory\n");
        goto done;
    }
    for (int64_t r = 0; r < rows; r++)
        tr_dequantize_row(t->type, (const uint8_t *)t->data + (size_t)r * t->nb1,
                          buf + r * t->ne[0], t->ne[0]);
    int64_t shape[4];
    for (int d = 0; d < t->n_dims; d++) shape[d] = t->ne[t->n_dims - 1 - d];
    if (inspect_write_npy_f32(out, buf, t->n_dims, shape) != 0)
        fprintf(stderr, "transcribe-inspect: cannot write '%s'\n", out);
    else
        rc = 0;
    free(buf);
done:
    inspect_model_close(&m);
    return rc;
}
