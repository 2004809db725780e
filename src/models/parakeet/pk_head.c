/* Head loader: stt.parakeet.head_kind / predictor / joint / tdt keys (docs/formats/parakeet.md
 * §3.4) and the head tensors (§4.3). Predictor, joint and CTC weights are dequantized to owned F32
 * at load, as the reference runtime does, so the per-step decoder never touches quantized data. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/parakeet/pk_keys.h"
#include "tensor/dtype.h"
#include "util/log.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define DIM_MAX  (1 << 20)

/* ---- tensors ---- */

/* Dequantizes a whole (contiguous) tensor into an owned [rows][cols]. */
static transcribe_status dequant(const tr_tensor *t, int rows, int cols, pk_mat *m) {
    if (!tr_pk_mat_alloc(m, rows, cols, t->name)) {
        TR_ERROR("parakeet: out of memory for '%s'", t->name);
        return TRANSCRIBE_ERR_OOM;
    }
    int64_t n = (int64_t)rows * cols;
    if (tr_type_block(t->type) == 1) {
        /* F32 / F16 / BF16 tensors are contiguous: one flat pass (also
         * covers head.ctc.weight, whose ne0 is 1) */
        tr_dequantize_row(t->type, t->data, m->data, n);
    } else if (t->ne[0] == cols) {
        for (int r = 0; r < rows; r++)
            tr_dequantize_row(t->type, (const char *)t->data + (size_t)r * t->nb1,
                              m->data + (size_t)r * cols, cols);
    } else {
        TR_ERROR("parakeet: cannot dequantize '%s' (%s)", t->name, tr_type_name(t->type));
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status load_mat(const gguf_file *g, const char *name, int rows, int cols,
                                  pk_mat *m) {
    const int64_t ne[2] = {cols, rows};
    const tr_tensor *t = tr_gguf_require_tensor(g, name, TR_TYPES_LINEAR, 2, ne);
    if (!t) return ERR_GGUF;
    return dequant(t, rows, cols, m);
}

static transcribe_status load_vec(const gguf_file *g, const char *name, int n, float **out) {
    const int64_t ne[1] = {n};
    const tr_tensor *t = tr_gguf_require_tensor(g, name, TR_TYPES_F32, 1, ne);
    if (!t) return ERR_GGUF;
    *out = malloc((size_t)n * sizeof(float));
    if (!*out) return TRANSCRIBE_ERR_OOM;
    memcpy(*out, t->data, (size_t)n * sizeof(float));
    return TRANSCRIBE_OK;
}

static transcribe_status load_ctc(const gguf_file *g, int d, pk_head *h) {
    const tr_tensor *t = tr_gguf_find_tensor(g, "head.ctc.weight");
    if (!t) {
        TR_ERROR("parakeet: required tensor 'head.ctc.weight' is missing");
        return ERR_GGUF;
    }
    /* the class count comes from the tensor (no key carries it) */
    int64_t nc = t->ne[2];
    if (nc <= 1 || nc > DIM_MAX) {
        TR_ERROR("parakeet: 'head.ctc.weight' has %" PRId64 " classes (need 2..%d)", nc, DIM_MAX);
        return ERR_GGUF;
    }
    const int64_t ne[3] = {1, d, nc};
    if (!tr_gguf_tensor_check(t, TR_TYPES_LINEAR, 3, ne)) return ERR_GGUF;
    h->n_vocab = (int)nc;
    transcribe_status st = dequant(t, (int)nc, d, &h->ctc);
    if (st == TRANSCRIBE_OK) st = load_vec(g, "head.ctc.bias", (int)nc, &h->ctc_b);
    return st;
}

static transcribe_status read_tdt_durations(const gguf_file *g, pk_head *h) {
    const int32_t *dur = NULL;
    int64_t n = 0;
    transcribe_status st =
        tr_gguf_req_arr_i32(g, "stt.parakeet.tdt.durations", 1, INT32_MAX, &dur, &n);
    if (st) return st;
    if (n != h->n_dur) {
        TR_ERROR("parakeet: %" PRId64 " TDT durations but num_extra_outputs = %d", n, h->n_dur);
        return ERR_GGUF;
    }
    h->durations = malloc((size_t)n * sizeof(int));
    if (!h->durations) return TRANSCRIBE_ERR_OOM;
    for (int64_t i = 0; i < n; i++) {
        if (dur[i] < 0 || dur[i] > 4096) {
            TR_ERROR("parakeet: TDT duration %" PRId32 " is out of range", dur[i]);
            return ERR_GGUF;
        }
        h->durations[i] = dur[i];
    }
    return tr_gguf_opt_u32(g, "stt.parakeet.tdt.max_symbols", 10, 0, DIM_MAX, &h->max_symbols);
}

static transcribe_status read_transducer_keys(const gguf_file *g, pk_head *h) {
    transcribe_status st;
    const char *act = NULL;
    if ((st = tr_gguf_req_u32(g, "stt.parakeet.predictor.hidden", 1, DIM_MAX, &h->hp)) ||
        (st = tr_gguf_req_u32(g, "stt.parakeet.predictor.n_layers", 1, 64, &h->n_layers)) ||
        (st = tr_gguf_req_u32(g, "stt.parakeet.predictor.vocab", 2, DIM_MAX, &h->n_vocab)) ||
        (st = tr_gguf_req_u32(g, "stt.parakeet.joint.hidden", 1, DIM_MAX, &h->joint)) ||
        (st = tr_gguf_req_u32(g, "stt.parakeet.joint.num_extra_outputs", 0, 4096, &h->n_dur)) ||
        (st = tr_gguf_req_str(g, "stt.parakeet.joint.activation", &act)))
        return st;
    if (!strcmp(act, "relu"))
        h->act = PK_ACT_RELU;
    else if (!strcmp(act, "sigmoid"))
        h->act = PK_ACT_SIGMOID;
    else if (!strcmp(act, "tanh"))
        h->act = PK_ACT_TANH;
    else {
        TR_ERROR("parakeet: joint activation '%s' is not relu, sigmoid or tanh", act);
        return ERR_GGUF;
    }
    if (h->kind == PK_HEAD_RNNT) {
        if (h->n_dur != 0) {
            TR_ERROR("parakeet: RNN-T head with num_extra_outputs = %d (must be 0)", h->n_dur);
            return ERR_GGUF;
        }
        h->max_symbols = 10; /* fixed for RNN-T; any durations key is ignored */
    } else {
        if (h->n_dur == 0) {
            TR_ERROR("parakeet: TDT head with num_extra_outputs = 0");
            return ERR_GGUF;
        }
        if ((st = read_tdt_durations(g, h))) return st;
    }
    h->n_out = h->n_vocab + h->n_dur;
    return TRANSCRIBE_OK;
}

static transcribe_status load_transducer(const gguf_file *g, int d, pk_head *h) {
    transcribe_status st = read_transducer_keys(g, h);
    if (st) return st;
    int Hp = h->hp, L = h->n_layers;
    h->wx = calloc((size_t)L, sizeof *h->wx);
    h->wh = calloc((size_t)L, sizeof *h->wh);
    h->lstm_b = calloc((size_t)L, sizeof *h->lstm_b);
    if (!h->wx || !h->wh || !h->lstm_b) return TRANSCRIBE_ERR_OOM;
    if ((st = load_mat(g, "pred.embed.weight", h->n_vocab, Hp, &h->embed))) return st;
    for (int l = 0; l < L; l++) {
        char nx[64], nh[64], nb[64];
        snprintf(nx, sizeof nx, "pred.lstm.%d.Wx", l);
        snprintf(nh, sizeof nh, "pred.lstm.%d.Wh", l);
        snprintf(nb, sizeof nb, "pred.lstm.%d.bias", l);
        if ((st = load_mat(g, nx, 4 * Hp, Hp, &h->wx[l])) ||
            (st = load_mat(g, nh, 4 * Hp, Hp, &h->wh[l])) ||
            (st = load_vec(g, nb, 4 * Hp, &h->lstm_b[l])))
            return st;
    }
    if ((st = load_mat(g, "joint.enc.weight", h->joint, d, &h->jenc)) ||
        (st = load_vec(g, "joint.enc.bias", h->joint, &h->jenc_b)) ||
        (st = load_mat(g, "joint.pred.weight", h->joint, Hp, &h->jpred)) ||
        (st = load_vec(g, "joint.pred.bias", h->joint, &h->jpred_b)) ||
        (st = load_mat(g, "joint.out.weight", h->n_out, h->joint, &h->jout)) ||
        (st = load_vec(g, "joint.out.bias", h->n_out, &h->jout_b)))
        return st;
    return TRANSCRIBE_OK;
}

transcribe_status tr_pk_head_load(const gguf_file *g, int d_model, pk_head *h) {
    memset(h, 0, sizeof *h);
    h->d_enc = d_model;
    const char *kind = NULL;
    transcribe_status st = tr_gguf_opt_str(g, "stt.parakeet.head_kind", NULL, &kind);
    if (st) return st;
    if (!kind || !strcmp(kind, "tdt")) /* older v2/v3 files: TDT */
        h->kind = PK_HEAD_TDT;
    else if (!strcmp(kind, "rnnt"))
        h->kind = PK_HEAD_RNNT;
    else if (!strcmp(kind, "ctc"))
        h->kind = PK_HEAD_CTC;
    else {
        TR_ERROR("parakeet: head_kind '%s' is not tdt, rnnt or ctc", kind);
        return ERR_GGUF;
    }
    st = h->kind == PK_HEAD_CTC ? load_ctc(g, d_model, h) : load_transducer(g, d_model, h);
    if (st == TRANSCRIBE_ERR_OOM) TR_ERROR("parakeet: out of memory loading the head");
    return st;
}
