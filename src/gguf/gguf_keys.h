/* Typed GGUF key readers for model loaders: required / optional / with a
 * default, for integers, floats, bools, strings, token ids and arrays, each
 * with its range check. One place decides what a loader accepts:
 *
 * - types are strict (docs/formats/gguf.md §3.1): a present key of another type is
 *   an error, never a silent default; the one exception is token ids
 *   (tokenizer `*_token_id`, §3.2), which may be UINT32 or INT32;
 * - every failure logs one line in one format and returns
 *   TRANSCRIBE_ERR_GGUF:
 *       gguf: key '<key>' (<expected type>): <what is wrong>
 *   (a wrong type is reported by the gguf_get_* getter underneath as
 *   "gguf: key '<key>' has type X, expected Y");
 * - outputs are written only on TRANSCRIBE_OK (arrays and strings point into
 *   storage owned by the file).
 *
 * Integer ranges are inclusive and given as int64_t so every bound an int can
 * hold is expressible; `hi` must not exceed INT32_MAX. */
#ifndef TR_GGUF_GGUF_KEYS_H
#define TR_GGUF_GGUF_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "transcribe.h"
#include "util/log.h"

/* ---- integers ---- */

/* Required UINT32 in [lo, hi]. */
transcribe_status tr_gguf_req_u32(const gguf_file *g, const char *key, int64_t lo, int64_t hi,
                                  int *out);
/* Optional UINT32: absent → def; present must lie in [lo, hi]. */
transcribe_status tr_gguf_opt_u32(const gguf_file *g, const char *key, int def, int64_t lo,
                                  int64_t hi, int *out);
/* Lenient optional UINT32: absent or outside [lo, hi] → def (for keys whose
 * spec says an unusable value falls back); a wrong type is still an error. */
transcribe_status tr_gguf_opt_u32_or(const gguf_file *g, const char *key, int def, int64_t lo,
                                     int64_t hi, int *out);
/* One row of a table of required UINT32 keys: prefix + name in [lo, hi]
 * into *out. */
typedef struct tr_gguf_u32_key {
    const char *name;
    int64_t lo, hi;
    int *out;
} tr_gguf_u32_key;
/* The n keys of a table in order (a loader's run of size keys under one
 * prefix); the first failure is returned. prefix + name must fit 256 bytes. */
transcribe_status tr_gguf_req_u32_keys(const gguf_file *g, const char *prefix,
                                       const tr_gguf_u32_key *keys, size_t n);
/* Required / optional INT32 in [lo, hi]. */
transcribe_status tr_gguf_req_i32(const gguf_file *g, const char *key, int64_t lo, int64_t hi,
                                  int *out);
transcribe_status tr_gguf_opt_i32(const gguf_file *g, const char *key, int def, int64_t lo,
                                  int64_t hi, int *out);

/* ---- token ids (UINT32 or INT32, docs/formats/gguf.md §3.2) ---- */

/* Optional id: absent → -1; present must lie in [0, n_vocab) (a negative
 * INT32 or an id past INT32_MAX is out of range). */
transcribe_status tr_gguf_opt_token_id(const gguf_file *g, const char *key, int n_vocab, int *out);
/* Lenient optional id: absent, negative or outside [0, n_vocab) → def. */
transcribe_status tr_gguf_opt_token_id_or(const gguf_file *g, const char *key, int n_vocab, int def,
                                          int *out);

/* ---- floats, bools, strings ---- */

transcribe_status tr_gguf_req_f32(const gguf_file *g, const char *key, float *out);
transcribe_status tr_gguf_opt_f32(const gguf_file *g, const char *key, float def, float *out);
transcribe_status tr_gguf_req_bool(const gguf_file *g, const char *key, bool *out);
transcribe_status tr_gguf_opt_bool(const gguf_file *g, const char *key, bool def, bool *out);
/* Strings point into the file; def may be NULL. */
transcribe_status tr_gguf_req_str(const gguf_file *g, const char *key, const char **out);
transcribe_status tr_gguf_opt_str(const gguf_file *g, const char *key, const char *def,
                                  const char **out);
/* Optional string copied into a malloc'ed *out the caller owns (def when
 * absent; def must not be NULL): TRANSCRIBE_ERR_OOM when the copy fails. */
transcribe_status tr_gguf_opt_str_copy(const gguf_file *g, const char *key, const char *def,
                                       char **out);
/* Required FLOAT32 that is finite (and > 0 when positive). */
transcribe_status tr_gguf_req_f32_finite(const gguf_file *g, const char *key, bool positive,
                                         float *out);
/* Required string equal to a, or to b when b is not NULL. */
transcribe_status tr_gguf_req_str_is(const gguf_file *g, const char *key, const char *a,
                                     const char *b);
/* Required string equal to one of the NULL-terminated `allowed` list. */
transcribe_status tr_gguf_req_str_in(const gguf_file *g, const char *key,
                                     const char *const *allowed);
/* Optional string: absent is fine, present must be one of `allowed`. */
transcribe_status tr_gguf_opt_str_in(const gguf_file *g, const char *key,
                                     const char *const *allowed);

/* ---- presence ---- */

bool tr_gguf_has(const gguf_file *g, const char *key);
/* Required key of exactly type t, any value. */
transcribe_status tr_gguf_req_type(const gguf_file *g, const char *key, gguf_vtype t);

/* ---- arrays: element type exact; count checked against [min_n, max_n] ----
 * Optional readers set *out = NULL and *n = 0 when the key is absent (an
 * absent key is not checked against min_n). */
transcribe_status tr_gguf_req_arr_i32(const gguf_file *g, const char *key, int64_t min_n,
                                      int64_t max_n, const int32_t **out, int64_t *n);
transcribe_status tr_gguf_opt_arr_i32(const gguf_file *g, const char *key, int64_t min_n,
                                      int64_t max_n, const int32_t **out, int64_t *n);
transcribe_status tr_gguf_req_arr_f32(const gguf_file *g, const char *key, int64_t min_n,
                                      int64_t max_n, const float **out, int64_t *n);
transcribe_status tr_gguf_opt_arr_f32(const gguf_file *g, const char *key, int64_t min_n,
                                      int64_t max_n, const float **out, int64_t *n);
transcribe_status tr_gguf_req_arr_str(const gguf_file *g, const char *key, int64_t min_n,
                                      int64_t max_n, const char *const **out, int64_t *n);
transcribe_status tr_gguf_opt_arr_str(const gguf_file *g, const char *key, int64_t min_n,
                                      int64_t max_n, const char *const **out, int64_t *n);

/* Optional string array copied into an owned list: *out gets a malloc'ed,
 * NULL-terminated array of *n strdup'ed strings (a NULL entry becomes ""),
 * the n_def strings of def when the key is absent (def may be NULL with
 * n_def 0: an empty list). The caller frees it with util's tr_strv_free;
 * on failure nothing is left allocated (*out NULL, *n 0). */
transcribe_status tr_gguf_opt_strv_copy(const gguf_file *g, const char *key, int64_t max_n,
                                        const char *const *def, int n_def, char ***out, int *n);

/* The one message format above, for checks a loader makes on a value it
 * read (e.g. a cross-key constraint); always returns TRANSCRIBE_ERR_GGUF. */
transcribe_status tr_gguf_key_error(const char *key, const char *type, const char *fmt, ...)
    TR_PRINTF(3, 4);

#endif
