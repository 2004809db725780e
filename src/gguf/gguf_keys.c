/* Typed key readers over the tri-state gguf_get_* getters (gguf_keys.h).
 * The getters return -1 for a present key of the wrong type and have logged
 * it already; everything else is reported here in the one format. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_keys.h"
#include "util/vec.h"

transcribe_status tr_gguf_key_error(const char *key, const char *type, const char *fmt, ...) {
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    TR_ERROR("gguf: key '%s' (%s): %s", key, type, why);
    return TRANSCRIBE_ERR_GGUF;
}

static transcribe_status missing(const char *key, const char *type) {
    return tr_gguf_key_error(key, type, "required but missing");
}

static transcribe_status out_of_range(const char *key, const char *type, int64_t v, int64_t lo,
                                      int64_t hi) {
    return tr_gguf_key_error(key, type, "value %lld is outside [%lld, %lld]", (long long)v,
                             (long long)lo, (long long)hi);
}

/* ---- integers ---- */

/* r: tri-state result; v: the value when r == 1. Shared by the u32/i32
 * readers: absent → def (or missing when required), range-checked. */
static transcribe_status int_result(const char *key, const char *type, int r, int64_t v,
                                    bool required, int def, int64_t lo, int64_t hi, int *out) {
    if (r < 0) return TRANSCRIBE_ERR_GGUF;
    if (r == 0) {
        if (required) return missing(key, type);
        *out = def;
        return TRANSCRIBE_OK;
    }
    if (v < lo || v > hi) return out_of_range(key, type, v, lo, hi);
    *out = (int)v;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_req_u32(const gguf_file *g, const char *key, int64_t lo, int64_t hi,
                                  int *out) {
    uint32_t v = 0;
    int r = tr_gguf_get_u32(g, key, &v);
    return int_result(key, "UINT32", r, v, true, 0, lo, hi, out);
}

transcribe_status tr_gguf_req_u32_keys(const gguf_file *g, const char *prefix,
                                       const tr_gguf_u32_key *keys, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char key[256];
        int len = snprintf(key, sizeof key, "%s%s", prefix, keys[i].name);
        if (len < 0 || (size_t)len >= sizeof key) {
            TR_ERROR("gguf: key '%s%s' is too long", prefix, keys[i].name);
            return TRANSCRIBE_ERR_GGUF;
        }
        transcribe_status st = tr_gguf_req_u32(g, key, keys[i].lo, keys[i].hi, keys[i].out);
        if (st != TRANSCRIBE_OK) return st;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_opt_u32(const gguf_file *g, const char *key, int def, int64_t lo,
                                  int64_t hi, int *out) {
    uint32_t v = 0;
    int r = tr_gguf_get_u32(g, key, &v);
    return int_result(key, "UINT32", r, v, false, def, lo, hi, out);
}

transcribe_status tr_gguf_opt_u32_or(const gguf_file *g, const char *key, int def, int64_t lo,
                                     int64_t hi, int *out) {
    uint32_t v = 0;
    int r = tr_gguf_get_u32(g, key, &v);
    if (r < 0) return TRANSCRIBE_ERR_GGUF;
    *out = (r == 0 || (int64_t)v < lo || (int64_t)v > hi) ? def : (int)v;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_req_i32(const gguf_file *g, const char *key, int64_t lo, int64_t hi,
                                  int *out) {
    int32_t v = 0;
    int r = tr_gguf_get_i32(g, key, &v);
    return int_result(key, "INT32", r, v, true, 0, lo, hi, out);
}

transcribe_status tr_gguf_opt_i32(const gguf_file *g, const char *key, int def, int64_t lo,
                                  int64_t hi, int *out) {
    int32_t v = 0;
    int r = tr_gguf_get_i32(g, key, &v);
    return int_result(key, "INT32", r, v, false, def, lo, hi, out);
}

/* ---- token ids ---- */

transcribe_status tr_gguf_opt_token_id(const gguf_file *g, const char *key, int n_vocab, int *out) {
    int32_t v = -1;
    int r = tr_gguf_get_token_id(g, key, &v);
    if (r < 0) return TRANSCRIBE_ERR_GGUF;
    if (r == 0) {
        *out = -1;
        return TRANSCRIBE_OK;
    }
    /* tr_gguf_get_token_id maps negative and oversized ids to -1 */
    if (v < 0 || v >= n_vocab)
        return tr_gguf_key_error(key, "token id", "id %d is outside the vocabulary [0, %d)", (int)v,
                                 n_vocab);
    *out = v;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_opt_token_id_or(const gguf_file *g, const char *key, int n_vocab, int def,
                                          int *out) {
    int32_t v = -1;
    int r = tr_gguf_get_token_id(g, key, &v);
    if (r < 0) return TRANSCRIBE_ERR_GGUF;
    *out = (r == 1 && v >= 0 && v < n_vocab) ? v : def;
    return TRANSCRIBE_OK;
}

/* ---- floats, bools, strings ---- */

transcribe_status tr_gguf_req_f32(const gguf_file *g, const char *key, float *out) {
    float v = 0.0f;
    int r = tr_gguf_get_f32(g, key, &v);
    if (r < 0) return TRANSCRIBE_ERR_GGUF;
    if (r == 0) return missing(key, "FLOAT32");
    *out = v;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_opt_f32(const gguf_file *g, const char *key, float def, float *out) {
    float v = def;
    if (tr_gguf_get_f32(g, key, &v) < 0) return TRANSCRIBE_ERR_GGUF;
    *out = v;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_req_bool(const gguf_file *g, const char *key, bool *out) {
    bool v = false;
    int r = tr_gguf_get_bool(g, key, &v);
    if (r < 0) return TRANSCRIBE_ERR_GGUF;
    if (r == 0) return missing(key, "BOOL");
    *out = v;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_opt_bool(const gguf_file *g, const char *key, bool def, bool *out) {
    bool v = def;
    if (tr_gguf_get_bool(g, key, &v) < 0) return TRANSCRIBE_ERR_GGUF;
    *out = v;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_req_str(const gguf_file *g, const char *key, const char **out) {
    const char *s = NULL;
    int r = tr_gguf_get_str(g, key, &s);
    if (r < 0) return TRANSCRIBE_ERR_GGUF;
    if (r == 0 || !s) return missing(key, "STRING");
    *out = s;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_opt_str(const gguf_file *g, const char *key, const char *def,
                                  const char **out) {
    const char *s = def;
    if (tr_gguf_get_str(g, key, &s) < 0) return TRANSCRIBE_ERR_GGUF;
    *out = s;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_opt_str_copy(const gguf_file *g, const char *key, const char *def,
                                       char **out) {
    const char *s = def;
    transcribe_status st = tr_gguf_opt_str(g, key, def, &s);
    if (st) return st;
    if (!s) s = def ? def : "";
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d) return TRANSCRIBE_ERR_OOM;
    memcpy(d, s, n);
    *out = d;
    return TRANSCRIBE_OK;
}

static bool one_of(const char *s, const char *const *allowed) {
    for (; *allowed; allowed++)
        if (strcmp(s, *allowed) == 0) return true;
    return false;
}

static transcribe_status not_allowed(const char *key, const char *s, const char *const *allowed) {
    char list[160] = "";
    size_t used = 0;
    for (; *allowed && used + 1 < sizeof list; allowed++) {
        int w = snprintf(list + used, sizeof list - used, "%s'%s'", used ? " or " : "", *allowed);
        if (w < 0) break;
        used += (size_t)w;
    }
    return tr_gguf_key_error(key, "STRING", "value '%s' is not supported (expected %s)", s, list);
}

transcribe_status tr_gguf_req_str_in(const gguf_file *g, const char *key,
                                     const char *const *allowed) {
    const char *s = NULL;
    transcribe_status st = tr_gguf_req_str(g, key, &s);
    if (st) return st;
    return one_of(s, allowed) ? TRANSCRIBE_OK : not_allowed(key, s, allowed);
}

transcribe_status tr_gguf_opt_str_in(const gguf_file *g, const char *key,
                                     const char *const *allowed) {
    const char *s = NULL;
    int r = tr_gguf_get_str(g, key, &s);
    if (r < 0) return TRANSCRIBE_ERR_GGUF;
    if (r == 0 || one_of(s, allowed)) return TRANSCRIBE_OK;
    return not_allowed(key, s, allowed);
}

/* ---- presence ---- */

bool tr_gguf_has(const gguf_file *g, const char *key) {
    return tr_gguf_find_key(g, key) >= 0;
}

transcribe_status tr_gguf_req_type(const gguf_file *g, const char *key, gguf_vtype t) {
    int64_t i = tr_gguf_find_key(g, key);
    if (i < 0) return missing(key, tr_gguf_vtype_name(t));
    gguf_vtype have = tr_gguf_kv_type(g, i);
    if (have != t)
        return tr_gguf_key_error(key, tr_gguf_vtype_name(t), "present with type %s",
                                 tr_gguf_vtype_name(have));
    return TRANSCRIBE_OK;
}

/* ---- arrays ---- */

static transcribe_status arr_result(const char *key, const char *type, int r, uint64_t n,
                                    bool required, int64_t min_n, int64_t max_n, int64_t *n_out) {
    if (r < 0) return TRANSCRIBE_ERR_GGUF;
    if (r == 0) {
        if (required) return missing(key, type);
        *n_out = 0;
        return TRANSCRIBE_OK;
    }
    if (n < (uint64_t)(min_n < 0 ? 0 : min_n) || n > (uint64_t)(max_n < 0 ? 0 : max_n))
        return tr_gguf_key_error(key, type, "%llu entries, expected %lld..%lld",
                                 (unsigned long long)n, (long long)min_n, (long long)max_n);
    *n_out = (int64_t)n;
    return TRANSCRIBE_OK;
}

#define ARRAY_READERS(suffix, ctype, getter, tname)                                                \
    static transcribe_status arr_##suffix(const gguf_file *g, const char *key, bool required,      \
                                          int64_t min_n, int64_t max_n, ctype **out, int64_t *n) { \
        ctype *v = NULL;                                                                           \
        uint64_t cnt = 0;                                                                          \
        int r = getter(g, key, &v, &cnt);                                                          \
        transcribe_status st = arr_result(key, tname, r, cnt, required, min_n, max_n, n);          \
        if (st == TRANSCRIBE_OK) *out = r == 1 ? v : NULL;                                         \
        return st;                                                                                 \
    }                                                                                              \
    transcribe_status tr_gguf_req_arr_##suffix(const gguf_file *g, const char *key, int64_t min_n, \
                                               int64_t max_n, ctype **out, int64_t *n) {           \
        return arr_##suffix(g, key, true, min_n, max_n, out, n);                                   \
    }                                                                                              \
    transcribe_status tr_gguf_opt_arr_##suffix(const gguf_file *g, const char *key, int64_t min_n, \
                                               int64_t max_n, ctype **out, int64_t *n) {           \
        return arr_##suffix(g, key, false, min_n, max_n, out, n);                                  \
    }

ARRAY_READERS(i32, const int32_t, tr_gguf_get_arr_i32, "ARRAY of INT32")
ARRAY_READERS(f32, const float, tr_gguf_get_arr_f32, "ARRAY of FLOAT32")
ARRAY_READERS(str, const char *const, tr_gguf_get_arr_str, "ARRAY of STRING")

transcribe_status tr_gguf_req_f32_finite(const gguf_file *g, const char *key, bool positive,
                                         float *out) {
    float v = 0;
    transcribe_status st = tr_gguf_req_f32(g, key, &v);
    if (st != TRANSCRIBE_OK) return st;
    if (!isfinite(v) || (positive && !(v > 0)))
        return tr_gguf_key_error(key, "FLOAT32", "value %g is not %s", (double)v,
                                 positive ? "a positive number" : "finite");
    *out = v;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_req_str_is(const gguf_file *g, const char *key, const char *a,
                                     const char *b) {
    const char *const allowed[] = {a, b, NULL};
    return tr_gguf_req_str_in(g, key, allowed);
}

transcribe_status tr_gguf_opt_strv_copy(const gguf_file *g, const char *key, int64_t max_n,
                                        const char *const *def, int n_def, char ***out, int *n) {
    *out = NULL;
    *n = 0;
    const char *const *a = NULL;
    int64_t cnt = 0;
    transcribe_status st = tr_gguf_opt_arr_str(g, key, 0, max_n, &a, &cnt);
    if (st != TRANSCRIBE_OK) return st;
    if (!a) {
        a = def;
        cnt = def ? n_def : 0;
    }
    char **v = calloc((size_t)cnt + 1, sizeof *v);
    if (!v) return TRANSCRIBE_ERR_OOM;
    for (int64_t i = 0; i < cnt; i++) {
        v[i] = strdup(a[i] ? a[i] : "");
        if (!v[i]) {
            tr_strv_free(v, (int)i);
            return TRANSCRIBE_ERR_OOM;
        }
    }
    *out = v;
    *n = (int)cnt;
    return TRANSCRIBE_OK;
}
