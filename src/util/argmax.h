/* Index of the largest of n floats (greedy decoding); ties go to the lowest
 * index, and NaNs are never chosen over a number before them. n >= 1. */
#ifndef TR_UTIL_ARGMAX_H
#define TR_UTIL_ARGMAX_H

int tr_argmax(const float *x, int n);

#endif
