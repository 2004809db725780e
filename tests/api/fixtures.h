/* Test fixtures for the API tests, kept out of the compatibility program so
 * that program uses nothing but the public header. Implemented in C11 with
 * internal modules (GGUF writer, audio decoder). */
#ifndef TR_TESTS_API_FIXTURES_H
#define TR_TESTS_API_FIXTURES_H

#ifdef __cplusplus
extern "C" {
#endif

/* Writes a minimal GGUF whose general.architecture is `arch` (plus a name
 * and a variant string). Returns 0 on success. */
int tr_fixture_write_gguf(const char *path, const char *arch);
/* Writes the first `n_bytes` of such a file (a truncated model). */
int tr_fixture_write_truncated_gguf(const char *path, const char *arch, long n_bytes);
/* Decodes a WAV to 16 kHz mono float; NULL on failure. Free with free(). */
float *tr_fixture_load_audio(const char *path, int *n_samples);

#ifdef __cplusplus
}
#endif

#endif
