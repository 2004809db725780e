/* Element-wise kernels, avx512 build (see act_kern.h). */
#define TR_VEC_AVX512
#include <math.h>

#include "tensor/act_kern.h"
