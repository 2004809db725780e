/* Attention kernels, avx512 build (see attention_kern.h). */
#define TR_VEC_AVX512
#include "tensor/attention_kern.h"
