/* Element-wise kernels, portable build (see act_kern.h). */
#include <math.h>

#include "tensor/act_kern.h"
