/* Tiny .npy reader/writer for test goldens: float32 / int32, little-endian,
 * C order, version 1.0/2.0 headers. Header-only so any test can include it. */
#ifndef TR_TEST_NPY_H
#define TR_TEST_NPY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct npy_array {
    char dtype[8]; /* "<f4", "<i4", ... */
    int ndim;
    int64_t shape[8];
    int64_t n;  /* element count */
    void *data; /* malloc'ed */
} npy_array;

static inline void npy_free(npy_array *a) {
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* Returns 0 on success. Only '<f4' and '<i4' with fortran_order False. */
static inline int npy_load(const char *path, npy_array *out) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char pre[10];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) goto fail;
    uint32_t hlen;
    long hstart;
    if (pre[6] == 1) {
        hlen = (uint32_t)pre[8] | ((uint32_t)pre[9] << 8);
        hstart = 10;
    } else {
        unsigned char b[2];
        if (fread(b, 1, 2, f) != 2) goto fail;
        hlen = (uint32_t)pre[8] | ((uint32_t)pre[9] << 8) | ((uint32_t)b[0] << 16) |
               ((uint32_t)b[1] << 24);
        hstart = 12;
    }
    if (hlen > 65536) goto fail;
    char *hdr = calloc(1, hlen + 1);
    if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
        free(hdr);
        goto fail;
    }
    const char *d = strstr(hdr, "'descr':");
    const char *fo = strstr(hdr, "'fortran_order':");
    const char *sh = strstr(hdr, "'shape':");
    if (!d || !fo || !sh || strstr(fo, "True") == fo + 17) {
        free(hdr);
        goto fail;
    }
    d = strchr(d + 8, '\'');
    if (!d) {
        free(hdr);
        goto fail;
    }
    snprintf(out->dtype, sizeof out->dtype, "%.3s", d + 1);
    const char *p = strchr(sh, '(');
    out->n = 1;
    if (p) {
        p++;
        while (*p && *p != ')') {
            while (*p == ' ' || *p == ',') p++;
            if (*p == ')') break;
            char *end;
            long long v = strtoll(p, &end, 10);
            if (end == p || out->ndim >= 8) break;
            out->shape[out->ndim++] = v;
            out->n *= v;
            p = end;
        }
    }
    free(hdr);
    size_t esz = (strcmp(out->dtype, "<f4") == 0 || strcmp(out->dtype, "<i4") == 0) ? 4 : 0;
    if (!esz) goto fail;
    (void)hstart;
    out->data = malloc((size_t)out->n * esz + 1);
    if (!out->data || fread(out->data, esz, (size_t)out->n, f) != (size_t)out->n) goto fail;
    fclose(f);
    return 0;
fail:
    fclose(f);
    npy_free(out);
    return -1;
}

/* Writes a float32 array of the given shape. Returns 0 on success. */
static inline int npy_save_f32(const char *path, const float *data, int ndim,
                               const int64_t *shape) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    char hdr[256];
    int len = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        len += snprintf(hdr + len, sizeof hdr - (size_t)len, "%lld,%s", (long long)shape[i],
                        i + 1 < ndim ? " " : "");
        n *= shape[i];
    }
    len += snprintf(hdr + len, sizeof hdr - (size_t)len, "), }");
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    uint16_t hl = (uint16_t)(len + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hl & 0xff, f);
    fputc(hl >> 8, f);
    fwrite(hdr, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    size_t w = fwrite(data, 4, (size_t)n, f);
    fclose(f);
    return w == (size_t)n ? 0 : -1;
}

#endif
