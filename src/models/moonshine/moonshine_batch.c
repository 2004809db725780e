/* The batch run (docs/c-api.md §11): the input gates per utterance (a too
 * short one gets INVALID_ARG, a too long one INPUT_TOO_LONG; the rest
 * decode), then per group of utterances the encoder and cross K/V of each
 * (the stem and the bidirectional blocks per utterance), the start token
 * prefilled for every utterance in one step, and greedy steps in lockstep
 * (nn/encdec_greedy.h: each step feeds one token per unfinished utterance
 * through tr_ed_step, so every decoder weight is read once per pass for
 * the whole batch; attention per utterance over its own cache and encoder
 * frames). Each utterance stops at its own EOS or the position cap exactly
 * as the single run's loop does, so its tokens are the single run's. */
#include <stdlib.h>
#include <string.h>

#include "models/moonshine/moonshine.h"
#include "audio/audio.h"
#include "nn/encdec_greedy.h"
#include "util/log.h"
#include "util/timer.h"

/* Encoder frames one group holds (~3 min of audio at 24 ms a frame), and
 * utterances. */
#define GROUP_FRAMES 8000
#define GROUP_MAX    64

typedef struct item {
    int idx; /* batch index */
    int T;   /* encoder frames */
    float *ck, *cv;
    tr_nn_kv kv;
    int32_t *out;
} item;

static void items_free(item *it, int n) {
    for (int j = 0; j < n; j++) {
        free(it[j].ck);
        free(it[j].cv);
        free(it[j].out);
        tr_nn_kv_free(&it[j].kv);
    }
    memset(it, 0, (size_t)n * sizeof *it);
}

static bool abort_cb(void *user) {
    return tr_run_should_abort((const tr_run_ctx *)user);
}

/* Encoder + cross K/V of every member; one that fails is finished with
 * its status and leaves the group. */
static transcribe_status group_encode(mn_session *s, const float *const *pcm, const int *n_samples,
                                      item *it, int *n_items, tr_run_ctx *ctxs, bool *done) {
    const mn_hparams *hp = &s->m->hp;
    const size_t D = (size_t)hp->d_model, L = (size_t)hp->n_dec_layers;
    int live = 0;
    for (int j = 0; j < *n_items; j++) {
        item *x = &it[j];
        const int i = x->idx;
        const double t0 = tr_time_ms();
        x->ck = malloc(L * (size_t)x->T * D * sizeof(float));
        x->cv = malloc(L * (size_t)x->T * D * sizeof(float));
        x->out = malloc((size_t)hp->max_pos * sizeof(int32_t));
        if (!x->ck || !x->cv || !x->out ||
            !tr_nn_kv_init(&x->kv, hp->n_dec_layers, hp->max_pos, hp->d_model, s->kv_f16)) {
            TR_ERROR("moonshine: out of memory for utterance %d of a batch", i);
            return TRANSCRIBE_ERR_OOM;
        }
        float *clean = NULL;
        const float *in = tr_pcm_sanitized(pcm[i], n_samples[i], "moonshine", &clean);
        int T = 0;
        transcribe_status st =
            in ? tr_mn_encode(s, in, n_samples[i], &T, x->ck, x->cv, abort_cb, &ctxs[i])
               : TRANSCRIBE_ERR_OOM;
        free(clean);
        ctxs[i].result->encode_ms = (float)(tr_time_ms() - t0);
        if (st == TRANSCRIBE_ERR_OOM || st == TRANSCRIBE_ERR_ABORTED) return st;
        if (st != TRANSCRIBE_OK) {
            items_free(x, 1);
            tr_run_batch_finish(ctxs, done, i, st);
            continue;
        }
        if (live != j) {
            it[live] = *x;
            memset(x, 0, sizeof *x);
        }
        live++;
    }
    *n_items = live;
    return TRANSCRIBE_OK;
}

/* One group: encoders, lockstep decode, results. */
static transcribe_status run_group(mn_session *s, const float *const *pcm, const int *n_samples,
                                   item *it, int n, tr_run_ctx *ctxs, bool *done) {
    const mn_model *m = s->m;
    const mn_hparams *hp = &m->hp;
    transcribe_status st = group_encode(s, pcm, n_samples, it, &n, ctxs, done);
    if (st != TRANSCRIBE_OK || n == 0) return st;
    tr_ed_greedy_row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows) return TRANSCRIBE_ERR_OOM;
    const size_t D = (size_t)hp->d_model;
    for (int j = 0; j < n; j++)
        rows[j] = (tr_ed_greedy_row){.kv = &it[j].kv,
                                     .ck = it[j].ck,
                                     .cv = it[j].cv,
                                     .cross_stride = (size_t)it[j].T * D,
                                     .n_src = it[j].T,
                                     .out = it[j].out};
    const int32_t start = hp->start_id;
    tr_run_ctx *actx = &ctxs[it[0].idx];
    const tr_ed_greedy_cfg cfg = {.prompt = &start,
                                  .n_prompt = 1,
                                  .eos = hp->eos,
                                  .max_new = hp->max_pos,
                                  .max_n_kv = hp->max_pos,
                                  .should_abort = abort_cb,
                                  .abort_user = actx};
    const double t0 = tr_time_ms();
    st = tr_ed_greedy_batch(s->pool, &m->msd.dec, &cfg, rows, n);
    const double t1 = tr_time_ms();
    for (int j = 0; j < n && (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED); j++) {
        const int i = it[j].idx;
        tr_run_ctx *ctx = &ctxs[i];
        /* docs/c-api.md §17: the lockstep decode divided across the group */
        ctx->result->decode_ms = (float)((t1 - t0) / n);
        if (rows[j].live) continue; /* aborted mid-utterance: no partial result */
        const transcribe_status u =
            rows[j].last == hp->eos ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        if (u == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            TR_WARN("moonshine: utterance %d: output truncated at %d tokens", i, rows[j].n_out);
        const transcribe_status f =
            tr_mn_fill_result(m, rows[j].out, rows[j].n_out, n_samples[i], ctx->result);
        if (f != TRANSCRIBE_OK) {
            st = f;
            break;
        }
        /* a truncated utterance keeps its text, as the single run does
         * (tr_run_batch_finish would clear it) */
        tr_run_batch_settle(ctxs, i, u, -1.0f);
        done[i] = true;
    }
    free(rows);
    return st;
}

/* The hooks of tr_run_batch_groups (core/family.h). */
static transcribe_status batch_gate(void *user, int i, const float *pcm, int n_samples) {
    (void)i;
    return tr_mn_gate(((mn_session *)user)->m, pcm, n_samples);
}

static int batch_frames(void *user, int n_samples) {
    const mn_session *s = user;
    return (int)tr_mn_enc_frames(&s->m->hp, n_samples, NULL, NULL);
}

static transcribe_status batch_group(void *user, const tr_run_group *g) {
    item *it = calloc((size_t)g->k, sizeof *it);
    if (!it) return TRANSCRIBE_ERR_OOM;
    for (int j = 0; j < g->k; j++)
        it[j] = (item){.idx = g->idx[j], .T = batch_frames(user, g->n_samples[g->idx[j]])};
    const transcribe_status st = run_group(user, g->pcm, g->n_samples, it, g->k, g->ctxs, g->done);
    items_free(it, g->k);
    free(it);
    return st;
}

transcribe_status tr_mn_run_batch(mn_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    s->n_last = 0;
    s->pool = ctxs[0].pool ? ctxs[0].pool : s->pool;
    static const tr_run_groups groups = {GROUP_MAX, GROUP_FRAMES, batch_gate, batch_frames,
                                         batch_group};
    return tr_run_batch_groups(&groups, s, pcm, n_samples, n, ctxs);
}
