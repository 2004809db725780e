/* The quantizer's per-tensor type policy (docs/formats/gguf.md §9.5, docs/cli.md §7.3):
 * each tensor name falls into a bucket, and each preset maps buckets to
 * types, with a fallback when a row is not a whole number of blocks. */
#ifndef TR_QUANTIZE_POLICY_H
#define TR_QUANTIZE_POLICY_H

#include <stdint.h>

typedef enum {
    QP_EMBED = 0,
    QP_NORM,
    QP_CONV_PW,
    QP_CONV,
    QP_LINEAR,
    QP_ATTN_OUT, /* a Linear sub-class */
} qp_bucket;

typedef struct qp_preset {
    const char *name; /* upper case, as printed */
    int linear;       /* tr_type */
    int attn_out;
    int embed;
    int fallback;
    uint32_t file_type; /* general.file_type tag */
} qp_preset;

/* NULL for an unknown name (case-insensitive). */
const qp_preset *qp_find_preset(const char *name);
/* Space-separated preset names for usage text. */
const char *qp_preset_names(void);
qp_bucket qp_classify(const char *name);
/* Output type of a tensor with row length ne0 under the preset. */
int qp_choose_type(const qp_preset *p, const char *name, int64_t ne0);
/* The type the preset names for the tensor's bucket before the block-size
 * fallback: where it differs from qp_choose_type, the rows (ne0 values)
 * are not a whole number of that type's blocks. */
int qp_wanted_type(const qp_preset *p, const char *name);

#endif
