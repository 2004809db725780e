/* Prompt conditioning of nemotron-3.5 (docs/formats/parakeet.md §3.6, §7.8): the
 * decoder consumes enc'[t] = W2 · ReLU(W0 · [enc[t]; onehot(pid)] + b0) + b2.
 * The one-hot half of W0 · z is one column of W0, so it is folded into the
 * bias per run and W0's first d columns multiply the encoder output in one
 * GEMM (a strided view of the dequantized W0). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "models/parakeet/parakeet.h"
#include "models/parakeet/pk_keys.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF

static transcribe_status read_keys(const gguf_file *g, pk_prompt *p) {
    transcribe_status st;
    const char *s = NULL;
    if ((st = tr_gguf_req_u32(g, "stt.parakeet.prompt.hidden", 1, 1 << 20, &p->hidden)) ||
        (st = tr_gguf_req_str(g, "stt.parakeet.prompt.field", &s)) ||
        (st = tr_gguf_req_str(g, "stt.parakeet.prompt.activation", &s)))
        return st;
    if (strcmp(s, "relu") != 0) {
        TR_ERROR("parakeet: stt.parakeet.prompt.activation '%s' is not 'relu'", s);
        return ERR_GGUF;
    }
    const char *const *loc = NULL;
    const int32_t *idx = NULL;
    int64_t nl = 0, ni = 0;
    if ((st = tr_gguf_req_arr_str(g, "stt.parakeet.prompt.dictionary.locales", 1, 65536, &loc,
                                  &nl)) ||
        (st =
             tr_gguf_req_arr_i32(g, "stt.parakeet.prompt.dictionary.indices", 1, 65536, &idx, &ni)))
        return st;
    if (nl != ni) {
        TR_ERROR("parakeet: prompt dictionary inconsistent (%" PRId64 " locales, %" PRId64
                 " indices)",
                 nl, ni);
        return ERR_GGUF;
    }
    p->locales = calloc((size_t)nl, sizeof *p->locales);
    p->indices = calloc((size_t)nl, sizeof *p->indices);
    if (!p->locales || !p->indices) return TRANSCRIBE_ERR_OOM;
    for (int64_t i = 0; i < nl; i++) {
        if (idx[i] < 0 || idx[i] >= p->n_prompts) {
            TR_ERROR("parakeet: prompt index %" PRId32 " outside [0, %d)", idx[i], p->n_prompts);
            return ERR_GGUF;
        }
        const char *l = loc[i] ? loc[i] : "";
        size_t n = strlen(l) + 1;
        if (!(p->locales[i] = malloc(n))) return TRANSCRIBE_ERR_OOM;
        memcpy(p->locales[i], l, n);
        p->indices[i] = idx[i];
        p->n_locales++;
    }
    int auto_id = -1;
    if ((st = tr_gguf_opt_u32(g, "stt.parakeet.prompt.auto_id", -1, 0, p->n_prompts - 1, &auto_id)))
        return st;
    p->default_id = auto_id >= 0 ? auto_id : p->indices[0];
    return TRANSCRIBE_OK;
}

transcribe_status tr_pk_prompt_load(const gguf_file *g, int d, int n_prompts, pk_prompt *p) {
    memset(p, 0, sizeof *p);
    p->n_prompts = n_prompts;
    p->d = d;
    transcribe_status st = read_keys(g, p);
    if (st) return st;
    int K = d + n_prompts, H = p->hidden;
    const int64_t ne0[2] = {K, H}, ne2[2] = {H, d}, nb0[1] = {H}, nb2[1] = {d};
    const tr_tensor *w0 = tr_gguf_require_tensor(g, "prompt.mlp.0.weight", TR_TYPES_LINEAR, 2, ne0);
    const tr_tensor *b0 = tr_gguf_require_tensor(g, "prompt.mlp.0.bias", TR_TYPES_F32, 1, nb0);
    p->w2 = tr_gguf_require_tensor(g, "prompt.mlp.2.weight", TR_TYPES_LINEAR, 2, ne2);
    const tr_tensor *b2 = tr_gguf_require_tensor(g, "prompt.mlp.2.bias", TR_TYPES_F32, 1, nb2);
    if (!w0 || !b0 || !p->w2 || !b2) return ERR_GGUF;
    p->b0 = b0->data;
    p->b2 = b2->data;
    if (!tr_pk_mat_alloc(&p->w0, H, K, w0->name)) return TRANSCRIBE_ERR_OOM;
    for (int r = 0; r < H; r++)
        tr_dequantize_row(w0->type, (const char *)w0->data + (size_t)r * w0->nb1,
                          p->w0.data + (size_t)r * K, K);
    /* the encoder half: first d columns of each row (row stride stays K) */
    p->w0_enc = p->w0.t;
    p->w0_enc.ne[0] = d;
    return TRANSCRIBE_OK;
}

void tr_pk_prompt_free(pk_prompt *p) {
    for (int i = 0; i < p->n_locales; i++) free(p->locales[i]);
    free(p->locales);
    free(p->indices);
    tr_pk_mat_free(&p->w0);
    memset(p, 0, sizeof *p);
}

int tr_pk_prompt_id(const pk_prompt *p, const char *lang) {
    if (!lang) return p->default_id;
    for (int i = 0; i < p->n_locales; i++)
        if (!strcmp(p->locales[i], lang)) return p->indices[i];
    return -1;
}

transcribe_status tr_pk_prompt_apply(const pk_prompt *p, tr_pool *pool, int pid, float *enc, int T,
                                     float *hid, float *bias) {
    const int K = p->d + p->n_prompts, H = p->hidden;
    for (int j = 0; j < H; j++) bias[j] = p->b0[j] + p->w0.data[(size_t)j * K + p->d + pid];
    tr_matmul(pool, &p->w0_enc, bias, enc, T, p->d, hid, H);
    tr_relu(hid, (long)T * H);
    tr_matmul(pool, p->w2, p->b2, hid, T, H, enc, p->d);
    return TRANSCRIBE_OK;
}
