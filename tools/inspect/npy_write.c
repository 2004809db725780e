/* Minimal .npy (format 1.0) writer for float32 arrays. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"

int inspect_write_npy_f32(const char *path, const float *data, int ndim, const int64_t *shape) {
    char dict[256];
    int o = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        o += snprintf(dict + o, sizeof dict - (size_t)o, "%" PRId64 "%s", shape[d],
                      ndim == 1      ? ","
                      : d + 1 < ndim ? ", "
                                     : "");
        n *= shape[d];
    }
    o += snprintf(dict + o, sizeof dict - (size_t)o, "), }");
    /* magic(6) + version(2) + header length(2) + dict, padded with spaces
     * and a final newline to a multiple of 64 bytes */
    size_t total = 10 + (size_t)o + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t hlen = padded - 10;
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    fwrite(pre, 1, 10, f);
    fwrite(dict, 1, (size_t)o, f);
    for (size_t i = 10 + (size_t)o; i + 1 < padded; i++) fputc(' ', f);
    fputc('\n', f);
    size_t w = n ? fwrite(data, sizeof(float), (size_t)n, f) : 0;
    int bad = fclose(f) != 0 || w != (size_t)n;
    return bad ? -1 : 0;
}
