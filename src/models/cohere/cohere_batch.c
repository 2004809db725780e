/* The batch run (docs/c-api.md §11, docs/formats/cohere.md §8): the gates
 * of docs/formats/cohere.md §5.1 / docs/formats/cohere.md §9 per utterance (an over-long one gets
 * INPUT_TOO_LONG, a short one INVALID_ARG; the rest decode), then per group one packed encoder pass
 * (tr_fc_forward_batch: every projection reads its weights once for the group), enc_dec_proj and
 * the cross K/V over all frames at once, and greedy decoding in lockstep (nn/encdec_greedy.h: one
 * prefill for every utterance, then each step one tr_ed_step feeding one token per unfinished
 * utterance, each decoder weight read once per pass). Each utterance stops at its own EOS or budget
 * exactly as the single run's loop, so its tokens are the single run's. Packed rows carry no
 * padding, so no cross-attention mask is needed. */
#include <stdlib.h>
#include <string.h>

#include "models/cohere/cohere.h"
#include "audio/audio.h"
#include "nn/encdec_greedy.h"
#include "util/log.h"
#include "util/timer.h"

/* Encoder frames one group may hold (~4 min of audio), and utterances. */
#define GROUP_FRAMES 3000
#define GROUP_MAX    64

typedef struct item {
    int idx; /* batch index */
    float *mel;
    int T_mel, T, off; /* encoder frames and their first packed row */
    tr_nn_kv kv;
    int32_t out[CH_MAX_GEN]; /* generated ids (EOS excluded) */
    int n_out;
    int32_t last; /* the last token (EOS when it stopped there) */
    bool live;    /* cut short by an abort */
} item;

typedef struct group {
    item *it;
    int n, rows;
    float *enc_out, *enc_dec, *cross_k, *cross_v; /* packed [rows][.], cross [L][rows][D] */
} group;

static bool abort_cb(void *user) {
    return tr_run_should_abort((const tr_run_ctx *)user);
}

static void group_free(group *g) {
    for (int j = 0; j < g->n; j++) {
        free(g->it[j].mel);
        tr_nn_kv_free(&g->it[j].kv);
    }
    free(g->enc_out);
    free(g->enc_dec);
    free(g->cross_k);
    free(g->cross_v);
    g->n = g->rows = 0;
    g->enc_out = g->enc_dec = g->cross_k = g->cross_v = NULL;
}

/* Mels of the group; an utterance whose front end fails finishes with its
 * status and leaves the group. */
static transcribe_status group_mels(ch_session *s, const float *const *pcm, const int *n_samples,
                                    group *g, tr_run_ctx *ctxs, bool *done) {
    int live = 0;
    for (int j = 0; j < g->n; j++) {
        item *it = &g->it[j];
        const int i = it->idx;
        const double t0 = tr_time_ms();
        float *clean = NULL;
        const float *in = tr_pcm_sanitized(pcm[i], n_samples[i], "cohere", &clean);
        transcribe_status st =
            in ? tr_ch_log_mel(s->m, s->pool, in, n_samples[i], &it->mel, &it->T_mel)
               : TRANSCRIBE_ERR_OOM;
        free(clean);
        ctxs[i].result->mel_ms = (float)(tr_time_ms() - t0);
        if (st == TRANSCRIBE_ERR_OOM) return st;
        it->T = st == TRANSCRIBE_OK ? tr_fc_out_frames(s->m->enc, it->T_mel) : 0;
        if (it->T < 1) {
            free(it->mel);
            it->mel = NULL;
            tr_run_batch_finish(ctxs, done, i,
                                st == TRANSCRIBE_OK ? TRANSCRIBE_ERR_INVALID_ARG : st);
            continue;
        }
        if (live != j) {
            g->it[live] = *it;
            it->mel = NULL;
        }
        it = &g->it[live++];
        it->off = g->rows;
        g->rows += it->T;
    }
    g->n = live;
    return TRANSCRIBE_OK;
}

static bool group_alloc(const ch_session *s, group *g) {
    const ch_hparams *hp = &s->m->hp;
    const size_t R = (size_t)g->rows, De = (size_t)hp->d_enc, Dd = (size_t)hp->d_dec,
                 L = (size_t)hp->n_dec_layers;
    g->enc_out = malloc(R * De * sizeof(float));
    g->enc_dec = malloc(R * Dd * sizeof(float));
    g->cross_k = malloc(L * R * Dd * sizeof(float));
    g->cross_v = malloc(L * R * Dd * sizeof(float));
    if (!g->enc_out || !g->enc_dec || !g->cross_k || !g->cross_v) return false;
    for (int j = 0; j < g->n; j++)
        if (!tr_nn_kv_init(&g->it[j].kv, hp->n_dec_layers, s->n_ctx, hp->d_dec, s->kv_f16))
            return false;
    return true;
}

static transcribe_status group_encode(ch_session *s, group *g, tr_run_ctx *actx) {
    const ch_model *m = s->m;
    const float **mels = malloc((size_t)g->n * sizeof *mels);
    int *T_mel = malloc((size_t)g->n * sizeof *T_mel);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (mels && T_mel) {
        for (int j = 0; j < g->n; j++) {
            mels[j] = g->it[j].mel;
            T_mel[j] = g->it[j].T_mel;
        }
        st = tr_fc_forward_batch(m->enc, s->pool, s->fc_work, g->n, mels, T_mel, g->enc_out,
                                 abort_cb, actx);
    }
    free(mels);
    free(T_mel);
    if (st != TRANSCRIBE_OK) return st;
    tr_nn_linear_fwd(s->pool, &m->proj, g->enc_out, g->rows, g->enc_dec);
    tr_ed_cross_kv(s->pool, &m->decoder, g->enc_dec, g->rows, g->cross_k, g->cross_v,
                   (size_t)g->rows * (size_t)m->hp.d_dec);
    return TRANSCRIBE_OK;
}

static transcribe_status group_decode(ch_session *s, const ch_prompt *pr, group *g,
                                      tr_run_ctx *actx) {
    const ch_model *m = s->m;
    const size_t D = (size_t)m->hp.d_dec;
    tr_ed_greedy_row *rows = calloc((size_t)g->n, sizeof *rows);
    if (!rows) return TRANSCRIBE_ERR_OOM;
    for (int j = 0; j < g->n; j++) {
        item *it = &g->it[j];
        rows[j] = (tr_ed_greedy_row){.kv = &it->kv,
                                     .ck = g->cross_k + (size_t)it->off * D,
                                     .cv = g->cross_v + (size_t)it->off * D,
                                     .cross_stride = (size_t)g->rows * D,
                                     .n_src = it->T,
                                     .out = it->out};
    }
    const tr_ed_greedy_cfg cfg = {.prompt = pr->ids,
                                  .n_prompt = CH_PROMPT,
                                  .eos = m->hp.eos,
                                  .max_new = tr_ch_max_new(s),
                                  .max_n_kv = s->n_ctx,
                                  .should_abort = abort_cb,
                                  .abort_user = actx};
    transcribe_status st = tr_ed_greedy_batch(s->pool, &m->decoder, &cfg, rows, g->n);
    for (int j = 0; j < g->n; j++) {
        g->it[j].n_out = rows[j].n_out;
        g->it[j].last = rows[j].last;
        g->it[j].live = rows[j].live;
    }
    free(rows);
    return st;
}

static transcribe_status run_group(ch_session *s, const ch_prompt *pr, const float *const *pcm,
                                   const int *n_samples, group *g, tr_run_ctx *ctxs, bool *done) {
    const ch_model *m = s->m;
    transcribe_status st = group_mels(s, pcm, n_samples, g, ctxs, done);
    if (st != TRANSCRIBE_OK || g->n == 0) return st;
    if (!group_alloc(s, g)) {
        TR_ERROR("cohere: out of memory for a batch of %d utterances (%d encoder frames)", g->n,
                 g->rows);
        return TRANSCRIBE_ERR_OOM;
    }
    tr_run_ctx *actx = &ctxs[g->it[0].idx];
    const double t0 = tr_time_ms();
    st = group_encode(s, g, actx);
    const double t1 = tr_time_ms();
    const bool encoded = st == TRANSCRIBE_OK;
    if (encoded) st = group_decode(s, pr, g, actx);
    const double t2 = tr_time_ms();
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_ABORTED) return st;
    for (int j = 0; j < g->n; j++) {
        item *it = &g->it[j];
        tr_run_ctx *ctx = &ctxs[it->idx];
        /* docs/c-api.md §17: the group's times divided across it */
        ctx->result->encode_ms = (float)((t1 - t0) / g->n);
        ctx->result->decode_ms = (float)((t2 - t1) / g->n);
        if (st == TRANSCRIBE_ERR_ABORTED && (!encoded || it->live)) continue;
        const transcribe_status u =
            it->last == m->hp.eos ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        if (u != TRANSCRIBE_OK)
            TR_WARN("cohere: utterance %d stopped after %d tokens without end-of-text (context "
                    "%d); the text is truncated",
                    it->idx, it->n_out, s->n_ctx);
        transcribe_status f =
            tr_ch_fill_result(m, pr, it->out, it->n_out, n_samples[it->idx], ctx->result);
        if (f != TRANSCRIBE_OK) return f;
        /* settled, not tr_run_batch_finish: a truncated utterance keeps its
         * text, as its single run does */
        tr_run_settle(ctx, u);
        done[it->idx] = true;
    }
    return st;
}

/* The batch as the hooks of tr_run_batch_groups (core/family.h) see it. */
typedef struct job {
    ch_session *s;
    ch_prompt pr;
} job;

static transcribe_status batch_gate(void *user, int i, const float *pcm, int n_samples) {
    const ch_session *s = ((const job *)user)->s;
    if (!pcm || n_samples <= 0) {
        TR_ERROR("cohere: batch utterance %d has %s", i, pcm ? "n_samples <= 0" : "NULL pcm");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    transcribe_status u = tr_ch_check_length(s->m, n_samples);
    if (u == TRANSCRIBE_OK && s->n_ctx - CH_PROMPT < 1) {
        TR_ERROR("cohere: the decoder context %d cannot hold the prompt plus one token", s->n_ctx);
        u = TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    }
    return u;
}

static int batch_frames(void *user, int n_samples) {
    return (int)tr_ch_predict_enc_frames(((const job *)user)->s->m, n_samples);
}

static transcribe_status batch_group(void *user, const tr_run_group *grp) {
    job *b = user;
    group g = {.it = calloc((size_t)grp->k, sizeof(item)), .n = grp->k};
    if (!g.it) return TRANSCRIBE_ERR_OOM;
    for (int j = 0; j < grp->k; j++) g.it[j].idx = grp->idx[j];
    item *items = g.it;
    const transcribe_status st =
        run_group(b->s, &b->pr, grp->pcm, grp->n_samples, &g, grp->ctxs, grp->done);
    group_free(&g);
    free(items);
    return st;
}

transcribe_status tr_ch_run_batch(ch_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    s->n_last = s->last_T_enc = 0; /* the batch leaves the single-run state */
    s->pool = ctxs[0].pool ? ctxs[0].pool : s->pool;
    job b = {.s = s};
    transcribe_status st = tr_ch_build_prompt(s->m, ctxs[0].params, &b.pr);
    if (st != TRANSCRIBE_OK) return st;
    static const tr_run_groups groups = {GROUP_MAX, GROUP_FRAMES, batch_gate, batch_frames,
                                         batch_group};
    return tr_run_batch_groups(&groups, &b, pcm, n_samples, n, ctxs);
}
