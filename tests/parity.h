/* Test kit for the per-family parity tests (our C against the float64
 * reference's goldens): error measures, golden .npy files by folder and
 * name with their shape checked, the compare-and-print step, and the
 * "key: value" lines of text goldens. The audio-LLM tests add
 * llm_parity.h on top. Include after test_util.h. */
#ifndef TR_TESTS_PARITY_H
#define TR_TESTS_PARITY_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "test_util.h"

/* max |got - want| over n values; a NaN anywhere makes it NaN (so fails any tolerance). */
static inline double tr_max_abs_err(const float *got, const float *want, int64_t n) {
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (!(d <= e)) e = d; /* NaN propagates */
    }
    return e;
}

/* max |v| over n values. */
static inline double tr_max_abs(const float *v, int64_t n) {
    double r = 0;
    for (int64_t i = 0; i < n; i++) {
        const double x = fabs(v[i]);
        if (x > r) r = x;
    }
    return r;
}

/* max over rows of (max |got - want| in the row) / (max |want| in the row);
 * a NaN propagates. */
static inline double tr_max_row_rel(const float *got, const float *want, int rows, int cols) {
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        double e = 0, s = 0;
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * cols + c;
            double d = fabs((double)got[i] - (double)want[i]);
            if (!(d <= e)) e = d;
            if (fabs(want[i]) > s) s = fabs(want[i]);
        }
        double rel = e / (s > 0 ? s : 1);
        if (!(rel <= worst)) worst = rel;
    }
    return worst;
}

/* dir/name.npy into a; a failed CHECK (naming the file) when it cannot be read. */
static inline bool tr_load_npy(const char *dir, const char *name, npy_array *a) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    if (npy_load(path, a) != 0) {
        CHECK_MSG(false, "cannot read %s", path);
        return false;
    }
    return true;
}

/* dir/name.npy as a [rows][cols] array of dtype (such as "<f4"): a failed
 * CHECK when it cannot be read, else a CHECK that shape and dtype match; a
 * was freed when it returns false. */
static inline bool tr_load_npy_2d(const char *dir, const char *name, npy_array *a, int64_t rows,
                                  int64_t cols, const char *dtype) {
    if (!tr_load_npy(dir, name, a)) return false;
    bool ok =
        a->ndim == 2 && a->shape[0] == rows && a->shape[1] == cols && !strcmp(a->dtype, dtype);
    CHECK_MSG(ok, "%s: shape [%lld, %lld], want [%lld, %lld]", name, (long long)a->shape[0],
              (long long)a->shape[1], (long long)rows, (long long)cols);
    if (!ok) npy_free(a);
    return ok;
}

/* got [rows][cols] against golden dir/name.npy (against its first rows rows
 * when prefix, else all of it): a CHECK of the shape, and when it matches,
 * the max abs error printed and a CHECK that it is within tol. */
static inline void tr_compare_npy(const char *dir, const char *name, const float *got, int rows,
                                  int cols, double tol, bool prefix) {
    npy_array a;
    if (!tr_load_npy(dir, name, &a)) return;
    const bool shape =
        a.ndim == 2 && (prefix ? a.shape[0] >= rows : a.shape[0] == rows) && a.shape[1] == cols;
    CHECK_MSG(shape, "%s: shape [%lld, %lld], want [%d, %d]", name, (long long)a.shape[0],
              (long long)(a.ndim > 1 ? a.shape[1] : 0), rows, cols);
    if (shape) {
        const double e = tr_max_abs_err(got, a.data, (int64_t)rows * cols);
        printf("%-28s [%d, %d] max abs err %.3g (tolerance %.3g)\n", name, rows, cols, e, tol);
        CHECK_MSG(e <= tol, "%s: %g > %g", name, e, tol);
    }
    npy_free(&a);
}

/* The value of the "key: value" line of text (a text golden), malloc'ed;
 * "" when there is no such line or text is NULL. */
static inline char *tr_text_field(const char *text, const char *key) {
    size_t kl = strlen(key);
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            const char *v = line + kl + 1;
            if (*v == ' ') v++;
            size_t len = nl ? (size_t)(nl - v) : strlen(v);
            char *out = malloc(len + 1);
            if (out) {
                memcpy(out, v, len);
                out[len] = 0;
            }
            return out;
        }
        line = nl ? nl + 1 : NULL;
    }
    return strdup("");
}

#endif
