/* How many rows one batched decoder pass should take (tr_ed_step and
 * tr_ed_head of encdec_decoder.h, which every encoder-decoder batch goes
 * through: several sequences stepped in lockstep).
 *
 * A lockstep step has one row per live sequence. tr_matmul reads each
 * weight row once and dots it with every row of X for up to a handful of
 * rows (TR_MM_SMALL_M, 4 today); from 5 rows on it takes the blocked GEMM,
 * which converts and transposes whole weight panels per call: at 8 rows
 * that costs about twice two 4-row passes (F16 decoder shapes and heads,
 * CPU time, measured with transcribe-bench batch's profile), and the
 * blocked path only pays again from about 16 rows. So a pass of fewer
 * than 16 rows is split into near-equal passes of at most 4 rows, each
 * reading every weight once; 16 rows or more stay one pass. */
#ifndef TR_NN_DEC_PASS_H
#define TR_NN_DEC_PASS_H

#define TR_NN_DEC_PASS_SMALL 4  /* rows of the small-M matmul path */
#define TR_NN_DEC_PASS_WIDE  16 /* from here one blocked pass is cheaper */

/* Rows the next pass should take when `rows` rows remain. */
static inline int tr_nn_dec_pass_rows(int rows) {
    if (rows <= TR_NN_DEC_PASS_SMALL || rows >= TR_NN_DEC_PASS_WIDE) return rows;
    int passes = (rows + TR_NN_DEC_PASS_SMALL - 1) / TR_NN_DEC_PASS_SMALL;
    return (rows + passes - 1) / passes;
}

#endif
