/* Attention kernels, avx2 build (see attention_kern.h). */
#define TR_VEC_AVX2
#include "tensor/attention_kern.h"
