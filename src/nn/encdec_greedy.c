/* Batched greedy decoding over tr_ed_step (encdec_greedy.h). */
#include <stdlib.h>
#include <string.h>

#include "nn/encdec_greedy.h"
#include "util/argmax.h"
#include "util/log.h"

typedef struct work {
    float *x, *scratch, *logits;
    int32_t *ids;
    tr_ed_seq *seqs;
    int *idx; /* row of each live sequence */
} work;

static void work_free(work *w) {
    free(w->x);
    free(w->scratch);
    free(w->logits);
    free(w->ids);
    free(w->seqs);
    free(w->idx);
}

/* Sequence k: row j's `rows` tokens at ids, at its current position. */
static void set_seq(work *w, int k, int j, tr_ed_greedy_row *r, const int32_t *ids, int rows) {
    w->idx[k] = j;
    w->seqs[k] = (tr_ed_seq){.rows = rows,
                             .n_past = r->n_past,
                             .n_src = r->n_src,
                             .kv = r->kv,
                             .ck = r->ck,
                             .cv = r->cv,
                             .ck16 = r->ck16,
                             .cv16 = r->cv16,
                             .cross_stride = r->cross_stride,
                             .cross_rows = r->cross_rows,
                             .ids = ids};
}

/* The token each live sequence produced, into its row. */
static void take(const tr_ed_decoder *dec, const tr_ed_greedy_cfg *cfg, work *w,
                 tr_ed_greedy_row *rows, int k, int fed) {
    const int V = dec->n_vocab;
    for (int q = 0; q < k; q++) {
        tr_ed_greedy_row *r = &rows[w->idx[q]];
        r->last = tr_argmax(w->logits + (size_t)q * V, V);
        r->n_gen++;
        r->n_past += fed;
        if (r->last != cfg->eos) r->out[r->n_out++] = r->last;
    }
}

transcribe_status tr_ed_greedy_batch(tr_pool *pool, const tr_ed_decoder *dec,
                                     const tr_ed_greedy_cfg *cfg, tr_ed_greedy_row *rows, int n) {
    if (n <= 0) return TRANSCRIBE_OK;
    const size_t D = (size_t)dec->dims.d_model, P = (size_t)cfg->n_prompt, N = (size_t)n;
    work w = {
        .x = malloc(N * P * D * sizeof(float)),
        .scratch = malloc(tr_ed_step_scratch(dec, (int)(N * P), n) * sizeof(float)),
        .logits = malloc(N * (size_t)dec->n_vocab * sizeof(float)),
        .ids = malloc(N * P * sizeof(int32_t)),
        .seqs = malloc(N * sizeof(tr_ed_seq)),
        .idx = malloc(N * sizeof(int)),
    };
    if (!w.x || !w.scratch || !w.logits || !w.ids || !w.seqs || !w.idx) {
        TR_ERROR("decoder: out of memory for a batch of %d utterances", n);
        work_free(&w);
        return TRANSCRIBE_ERR_OOM;
    }
    /* prefill: the same prompt for every row */
    for (int j = 0; j < n; j++) {
        tr_ed_greedy_row *r = &rows[j];
        r->n_out = r->n_gen = r->n_past = 0;
        r->live = false;
        memcpy(w.ids + (size_t)j * P, cfg->prompt, P * sizeof(int32_t));
        set_seq(&w, j, j, r, w.ids + (size_t)j * P, cfg->n_prompt);
    }
    tr_ed_step(pool, dec, n, w.seqs, w.x, w.scratch, w.logits);
    take(dec, cfg, &w, rows, n, cfg->n_prompt);
    transcribe_status st = TRANSCRIBE_OK;
    for (;;) {
        int k = 0;
        for (int j = 0; j < n; j++) {
            tr_ed_greedy_row *r = &rows[j];
            const int max_new = r->max_new > 0 ? r->max_new : cfg->max_new;
            r->live = r->last != cfg->eos && r->n_gen < max_new && r->n_past + 1 <= cfg->max_n_kv;
            if (!r->live) continue;
            w.ids[k] = r->last;
            set_seq(&w, k, j, r, w.ids + k, 1);
            k++;
        }
        if (k == 0) break;
        if (cfg->should_abort && cfg->should_abort(cfg->abort_user)) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        tr_ed_step(pool, dec, k, w.seqs, w.x, w.scratch, w.logits);
        take(dec, cfg, &w, rows, k, 1);
    }
    work_free(&w);
    return st;
}
