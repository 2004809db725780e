/* Type table, half conversions, and every dequantizer against the
 * independent reference decoder in kref.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kref.h"
#include "tensor/cpu.h"
#include "tensor/dtype.h"
#include "test_util.h"

static const int k_types[] = {TR_F32,  TR_F16,  TR_BF16, TR_Q4_0, TR_Q4_1, TR_Q5_0, TR_Q5_1,
                              TR_Q8_0, TR_Q2_K, TR_Q3_K, TR_Q4_K, TR_Q5_K, TR_Q6_K};

static void test_table(void) {
    CHECK(tr_type_block(TR_Q4_K) == 256 && tr_type_block_bytes(TR_Q4_K) == 144);
    CHECK(tr_type_block(TR_Q8_0) == 32 && tr_type_block_bytes(TR_Q8_0) == 34);
    CHECK(tr_type_block_bytes(TR_Q2_K) == 84 && tr_type_block_bytes(TR_Q3_K) == 110);
    CHECK(tr_type_block_bytes(TR_Q5_K) == 176 && tr_type_block_bytes(TR_Q6_K) == 210);
    CHECK(tr_row_bytes(TR_Q4_0, 64) == 36);
    CHECK(tr_row_bytes(TR_Q4_0, 33) == 0);
    CHECK(tr_row_bytes(TR_F16, 5) == 10);
    CHECK(tr_row_bytes(4, 32) == 0); /* unknown id */
    CHECK(!tr_type_valid(TR_Q8_K) && !tr_type_valid(TR_Q8_1) && !tr_type_valid(4));
    CHECK(!tr_type_valid(-1) && !tr_type_valid(99));
    CHECK(strcmp(tr_type_name(TR_BF16), "BF16") == 0 && strcmp(tr_type_name(77), "?") == 0);
    for (size_t i = 0; i < sizeof(k_types) / sizeof(k_types[0]); i++) {
        CHECK(tr_type_valid(k_types[i]));
        CHECK(tr_type_block_bytes(k_types[i]) == kref_block_bytes(k_types[i]));
        CHECK(tr_type_block(k_types[i]) == kref_block(k_types[i]));
    }
}

static void test_half(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        uint8_t b[2] = {(uint8_t)h, (uint8_t)(h >> 8)};
        double ref = kref_half(b);
        float f = tr_f16_to_f32((uint16_t)h);
        if (isnan(ref)) {
            if (!isnan(f)) bad++;
            continue;
        }
        if ((double)f != ref) bad++;
        if (tr_f32_to_f16(f) != h) bad++; /* exact round trip */
    }
    CHECK_MSG(bad == 0, "%d half mismatches", bad);
    /* round to nearest even at the midpoint between 1 and 1+2^-10 */
    CHECK(tr_f32_to_f16(1.0f + 1.0f / 2048.0f) == 0x3c00);
    CHECK(tr_f32_to_f16(1.0f + 3.0f / 2048.0f) == 0x3c02);
    CHECK(tr_f32_to_f16(65520.0f) == 0x7c00);
    CHECK(tr_f32_to_f16(65519.0f) == 0x7bff);
    CHECK(tr_f32_to_f16(-1e-8f) == 0x8000);
    CHECK(tr_f32_to_f16(ldexpf(1.0f, -24)) == 0x0001);
    CHECK(tr_f32_to_f16(ldexpf(1.5f, -24)) == 0x0002); /* tie to even */
    CHECK(tr_f32_to_f16(ldexpf(1023.5f, -24)) == 0x0400);
    CHECK((tr_f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (tr_f32_to_f16(NAN) & 0x3ff) != 0);
    /* bf16 */
    CHECK(tr_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(tr_bf16_to_f32(0x3f80) == 1.0f);
    float mid;
    uint32_t bits = 0x3f808000u; /* exactly halfway: rounds to even 0x3f80 */
    memcpy(&mid, &bits, 4);
    CHECK(tr_f32_to_bf16(mid) == 0x3f80);
    bits = 0x3f818000u;
    memcpy(&mid, &bits, 4);
    CHECK(tr_f32_to_bf16(mid) == 0x3f82);
    CHECK(isnan(tr_bf16_to_f32(tr_f32_to_bf16(NAN))));
}

/* Every CPU level's dequantizer against the double reference decoder. */
static void test_dequant(void) {
    tr_cpu_level levels[3];
    const int n_levels = tr_cpu_levels(levels);
    for (size_t t = 0; t < sizeof(k_types) / sizeof(k_types[0]); t++) {
        int type = k_types[t];
        long n = 512 + (kref_block(type) == 1 ? 13 : 0);
        size_t bytes = tr_row_bytes(type, n);
        CHECK(bytes == (size_t)(n / kref_block(type)) * kref_block_bytes(type));
        uint8_t *buf = malloc(bytes + 1);
        float *out = malloc(sizeof(float) * n);
        int bad = 0;
        for (int rep = 0; rep < 4 * n_levels; rep++) {
            CHECK(tr_cpu_force(levels[rep % n_levels]));
            /* +1 byte offset: model data need not be aligned */
            kref_random_blocks(type, buf + 1, n);
            tr_dequantize_row(type, buf + 1, out, n);
            for (long i = 0; i < n; i++) {
                double ref = kref_row_elem(type, buf + 1, i);
                if (fabs(ref - out[i]) > 1e-6 * fabs(ref) + 1e-30) {
                    if (bad++ < 3)
                        fprintf(stderr, "%s (%s) elem %ld: %g vs %g\n", tr_type_name(type),
                                tr_cpu_level_name(levels[rep % n_levels]), i, (double)out[i], ref);
                }
            }
        }
        tr_cpu_unforce();
        CHECK_MSG(bad == 0, "%s: %d dequant mismatches", tr_type_name(type), bad);
        free(buf);
        free(out);
    }
}

int main(void) {
    test_table();
    test_half();
    test_dequant();
    return TEST_DONE();
}
