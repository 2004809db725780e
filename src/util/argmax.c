/* Greedy argmax shared by the decoders (argmax.h). */
#include "util/argmax.h"

int tr_argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i; /* strict: ties keep the lowest index */
    return best;
}
