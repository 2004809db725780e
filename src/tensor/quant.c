/* Row quantizers (F32 -> each supported type). */
#include "tensor/dtype.h"

bool tr_type_can_quantize(int type) {
    (void)type;
    return false;
}

bool tr_quantize_row(int type, const float *src, void *dst, int64_t n) {
    (void)type, (void)src, (void)dst, (void)n;
    return false;
}
