/* Index of the largest of n floats (greedy decoding); ties go to the lowest
 * index, and a NaN is never chosen unless it is x[0]. n >= 1. */
#ifndef TR_UTIL_ARGMAX_H
#define TR_UTIL_ARGMAX_H

int tr_argmax(const float *x, int n);

#endif
