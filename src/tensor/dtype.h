/* Element types of model tensors (ggml type ids, docs/formats/gguf.md §9.1),
 * block sizes, half-precision conversion, and row (de)quantization. */
#ifndef TR_TENSOR_DTYPE_H
#define TR_TENSOR_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    TR_F32 = 0,
    TR_F16 = 1,
    TR_Q4_0 = 2,
    TR_Q4_1 = 3,
    TR_Q5_0 = 6,
    TR_Q5_1 = 7,
    TR_Q8_0 = 8,
    TR_Q8_1 = 9,
    TR_Q2_K = 10,
    TR_Q3_K = 11,
    TR_Q4_K = 12,
    TR_Q5_K = 13,
    TR_Q6_K = 14,
    TR_Q8_K = 15,
    TR_BF16 = 30,
    TR_TYPE_COUNT = 31,
} tr_type;

/* true for the ids above that this library can dequantize (all but Q8_1/Q8_K). */
bool tr_type_valid(int type);
/* Every valid type as a mask of type ids (bit t; ids below 32), for tensor
 * checks that take any type the library dequantizes (a token embedding). */
uint32_t tr_type_mask_all(void);
const char *tr_type_name(int type); /* "F32", "Q4_K", …; "?" when unknown */
int tr_type_block(int type);        /* elements per block (1 for F32/F16/BF16); 0 unknown */
size_t tr_type_block_bytes(int type);
/* Bytes of a row of n elements; 0 when n is not a multiple of the block size. */
size_t tr_row_bytes(int type, int64_t n);

float tr_f16_to_f32(uint16_t h);
uint16_t tr_f32_to_f16(float f); /* round to nearest even */
/* n floats to half floats, each as tr_f32_to_f16 rounds it (vectorised
 * where the CPU converts). */
void tr_f32_to_f16_row(const float *src, uint16_t *dst, int64_t n);
float tr_bf16_to_f32(uint16_t h);
uint16_t tr_f32_to_bf16(float f); /* round to nearest even, NaN kept */

/* Dequantize n elements (n a multiple of the block size) of one row. */
void tr_dequantize_row(int type, const void *src, float *dst, int64_t n);
/* Quantize n elements into dst (tr_row_bytes(type, n) bytes). Returns false
 * for types without a quantizer (see tr_type_can_quantize). */
bool tr_quantize_row(int type, const float *src, void *dst, int64_t n);
bool tr_type_can_quantize(int type);

#endif
