/* The container's private block-geometry table must agree with the
 * kernels' dtype table (src/tensor/dtype.c) for every id. */
#include "gguf/gguf_internal.h"
#include "tensor/dtype.h"
#include "test_util.h"

int main(void) {
    for (int t = -1; t < 64; t++) {
        int block = 0;
        size_t bytes = 0;
        bool known = tr_gguf_type_geometry(t, &block, &bytes);
        CHECK_MSG(tr_gguf_type_loadable(t) == tr_type_valid(t), "type %d", t);
        if (known) {
            CHECK_MSG(block == tr_type_block(t) && bytes == tr_type_block_bytes(t), "type %d", t);
            int64_t ne[4] = {(int64_t)block * 3, 2, 1, 1};
            size_t nb1 = 0;
            CHECK(tr_gguf_tensor_bytes(t, ne, &nb1) == 2 * tr_row_bytes(t, ne[0]));
            CHECK(nb1 == tr_row_bytes(t, ne[0]));
        } else {
            CHECK_MSG(!tr_type_valid(t), "type %d", t);
        }
    }
    return TEST_DONE();
}
