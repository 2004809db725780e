/* Rotary position embedding. Angles are computed in double once per token
 * and shared by all heads, so large positions keep full float accuracy. */
#include "tensor/ops.h"

#include <math.h>
#include <stdlib.h>

#include "util/log.h"

void tr_rope_head(float *p, const float *cosv, const float *sinv, int half, bool neox) {
    if (neox) {
        for (int i = 0; i < half; i++) {
            float a = p[i], b = p[i + half];
            p[i] = a * cosv[i] - b * sinv[i];
            p[i + half] = a * sinv[i] + b * cosv[i];
        }
    } else {
        for (int i = 0; i < half; i++) {
            float a = p[2 * i], b = p[2 * i + 1];
            p[2 * i] = a * cosv[i] - b * sinv[i];
            p[2 * i + 1] = a * sinv[i] + b * cosv[i];
        }
    }
}

void tr_rope(float *x, int n_tok, int n_head, int head_dim, int stride, const int32_t *pos,
             int n_rot, float theta_base, bool neox) {
    if (n_tok <= 0 || n_head <= 0) return;
    if (n_rot > head_dim) n_rot = head_dim;
    const int half = n_rot / 2;
    if (half <= 0) return;
    float *cs = malloc(sizeof(float) * 2 * (size_t)half);
    double *freq = malloc(sizeof(double) * (size_t)half);
    if (!cs || !freq) {
        TR_ERROR("rope: out of memory (%d dims)", n_rot);
        free(cs);
        free(freq);
        return;
    }
    for (int i = 0; i < half; i++) freq[i] = pow((double)theta_base, -2.0 * i / n_rot);
    float *cosv = cs, *sinv = cs + half;
    for (int t = 0; t < n_tok; t++) {
        for (int i = 0; i < half; i++) {
            double ang = (double)pos[t] * freq[i];
            cosv[i] = (float)cos(ang);
            sinv[i] = (float)sin(ang);
        }
        float *row = x + (long)t * stride;
        for (int h = 0; h < n_head; h++)
            tr_rope_head(row + (long)h * head_dim, cosv, sinv, half, neox);
    }
    free(cs);
    free(freq);
}
