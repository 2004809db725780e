/* Fixture for the transcribe-inspect ctests.
 *   inspect_sample write PATH.gguf   writes a small model with the writer
 *   inspect_sample check OUT.npy     checks `tensor` dequantized it right */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "npy.h"
#include "tensor/dtype.h"

/* dec.w: F16 [ne 4, 3] = PyTorch [3, 4] holding r*4+c */
static int write_sample(const char *path) {
    gguf_writer *w = tr_gguf_writer_create();
    const char *langs[] = {"en", "de", "fr", "es", "it", "pt", "nl", "sv", "pl", "ru"};
    const float fb[6] = {0.5f, 1, 2, 3, 4, 5};
    uint16_t h[12];
    for (int i = 0; i < 12; i++) h[i] = tr_f32_to_f16((float)i);
    bool ok = tr_gguf_writer_set_str(w, "general.architecture", "whisper") &&
              tr_gguf_writer_set_str(w, "general.name", "Inspect \"sample\"") &&
              tr_gguf_writer_set_u32(w, "stt.whisper.n_audio_layer", 4) &&
              tr_gguf_writer_set_bool(w, "stt.capability.translate", true) &&
              tr_gguf_writer_set_arr_str(w, "general.languages", langs, 10) &&
              tr_gguf_writer_add_tensor(w, "frontend.window", TR_F32, 1, (const int64_t[]){6}, fb) &&
              tr_gguf_writer_add_tensor(w, "dec.w", TR_F16, 2, (const int64_t[]){4, 3}, h);
    transcribe_status st = ok ? tr_gguf_writer_write(w, path) : TRANSCRIBE_ERR_INVALID_ARG;
    tr_gguf_writer_free(w);
    return st == TRANSCRIBE_OK ? 0 : 1;
}

static int check_npy(const char *path) {
    npy_array a;
    if (npy_load(path, &a) != 0) return 1;
    int bad = strcmp(a.dtype, "<f4") != 0 || a.ndim != 2 || a.shape[0] != 3 || a.shape[1] != 4;
    for (int i = 0; !bad && i < 12; i++) bad = ((float *)a.data)[i] != (float)i;
    npy_free(&a);
    if (bad) fprintf(stderr, "inspect_sample: %s has the wrong contents\n", path);
    return bad;
}

int main(int argc, char **argv) {
    (void)npy_save_f32; /* tests/npy.h helpers are static; only the loader is used */
    if (argc == 3 && !strcmp(argv[1], "write")) return write_sample(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "check")) return check_npy(argv[2]);
    fprintf(stderr, "usage: inspect_sample write|check PATH\n");
    return 2;
}
