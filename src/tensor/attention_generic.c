/* Attention kernels, generic build (see attention_kern.h). */
#include "tensor/attention_kern.h"
