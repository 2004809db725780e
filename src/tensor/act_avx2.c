/* Element-wise kernels, avx2 build (see act_kern.h). */
#define TR_VEC_AVX2
#include <math.h>

#include "tensor/act_kern.h"
