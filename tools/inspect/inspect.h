/* transcribe-inspect: shared declarations of the subcommands. Each returns
 * the process exit status (0 ok, 1 error, 2 usage) and prints its own error
 * message to stderr. */
#ifndef TR_INSPECT_H
#define TR_INSPECT_H

#include <stdint.h>

int inspect_info(int argc, char **argv);
int inspect_tensor(int argc, char **argv);
int inspect_mel(int argc, char **argv);
int inspect_tokenize(int argc, char **argv);
int inspect_detokenize(int argc, char **argv);

/* Writes a little-endian float32 C-order .npy; returns 0 on success. */
int inspect_write_npy_f32(const char *path, const float *data, int ndim, const int64_t *shape);

#endif
