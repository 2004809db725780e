/* The batch run (docs/c-api.md §11, docs/formats/canary.md §11): the gates of §9 per
 * utterance (an over-long one gets INPUT_TOO_LONG, the rest decode), then
 * per group of utterances one encoder pass (tr_fc_forward_batch: every
 * projection reads its weights once for the group), the projection and
 * cross K/V over all frames at once, the prompt prefilled for every
 * utterance in one step, and greedy steps in lockstep (nn/encdec_greedy.h:
 * each step feeds one token per unfinished utterance through tr_ed_step,
 * packed passes that read each weight once, attention per utterance over
 * its own cache and encoder frames). Each utterance stops at its own EOS
 * or budget (min(n_ctx - prompt, 512), §8.3) exactly as the single run's
 * loop does, so its tokens are the single run's. */
#include <stdlib.h>
#include <string.h>

#include "models/canary/canary.h"
#include "audio/audio.h"
#include "nn/encdec_greedy.h"
#include "util/log.h"
#include "util/timer.h"

/* Encoder frames one group may hold (~4 min of audio), and utterances. */
#define GROUP_FRAMES 3000
#define GROUP_MAX    64

/* Per utterance of a group. */
typedef struct item {
    int idx; /* batch index */
    float *mel;
    int T_mel, T, off; /* encoder frames and their first packed row */
    tr_nn_kv kv;
    int32_t *out; /* [CN_MAX_GEN] generated ids (EOS excluded) */
    int n_out;
    int32_t tok; /* the last token (EOS when it stopped there) */
    bool live;   /* cut short by an abort */
} item;

/* Batch state of one group: packed encoder rows and their cross K/V. */
typedef struct group {
    item *it;
    int n;
    int rows;
    float *enc_out, *enc_dec, *cross_k, *cross_v; /* packed [rows][.], cross [L][rows][D] */
} group;

static bool abort_cb(void *user) {
    return tr_run_should_abort((const tr_run_ctx *)user);
}

static void group_free(group *g) {
    for (int j = 0; j < g->n; j++) {
        free(g->it[j].mel);
        free(g->it[j].out);
        tr_nn_kv_free(&g->it[j].kv);
    }
    if (g->enc_dec != g->enc_out) free(g->enc_dec);
    free(g->enc_out);
    free(g->cross_k);
    free(g->cross_v);
    memset(g, 0, sizeof *g);
}

/* docs/formats/canary.md §9 gates of one utterance; OK = it joins a group. */
static transcribe_status gate(const cn_session *s, const cn_prompt *pr, const float *pcm, int n) {
    const cn_model *m = s->m;
    if (!pcm || n <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    int64_t T_enc = tr_cn_predict_enc_frames(m, n);
    if (T_enc > m->hp.pos_emb_max_len) {
        TR_ERROR("canary: %d samples (%.1f s) need %lld encoder frames; the model's limit is %d "
                 "(%lld ms); split the audio",
                 n, (double)n / m->mel.sample_rate, (long long)T_enc, m->hp.pos_emb_max_len,
                 (long long)m->max_audio_ms);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    transcribe_status len_st = tr_mel_check_reflect_len(&m->mel, "canary", n);
    if (len_st != TRANSCRIBE_OK) return len_st;
    if (s->n_ctx - pr->n < 1) {
        TR_ERROR("canary: the decoder context %d cannot hold the %d-token prompt plus one token",
                 s->n_ctx, pr->n);
        return TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    }
    return TRANSCRIBE_OK;
}

/* Mels of the group's utterances; one whose front end fails is finished
 * with its status and leaves the group. */
static transcribe_status group_mels(cn_session *s, const float *const *pcm, const int *n_samples,
                                    group *g, tr_run_ctx *ctxs, bool *done) {
    int live = 0;
    for (int j = 0; j < g->n; j++) {
        item *it = &g->it[j];
        const int i = it->idx;
        double t0 = tr_time_ms();
        float *clean = NULL;
        const float *in = tr_pcm_sanitized(pcm[i], n_samples[i], "canary", &clean);
        transcribe_status st =
            in ? tr_cn_log_mel(s->m, s->pool, in, n_samples[i], &it->mel, &it->T_mel)
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
        live++;
    }
    g->n = live;
    return TRANSCRIBE_OK;
}

/* Buffers of a group of g->n utterances whose frame counts are known. */
static bool group_alloc(const cn_session *s, group *g) {
    const cn_hparams *hp = &s->m->hp;
    const size_t R = (size_t)g->rows, De = (size_t)hp->d_enc, Dd = (size_t)hp->d_dec,
                 L = (size_t)hp->n_dec_layers;
    g->enc_out = malloc(R * De * sizeof(float));
    g->enc_dec = hp->enc_dec_proj ? malloc(R * Dd * sizeof(float)) : g->enc_out;
    g->cross_k = malloc(L * R * Dd * sizeof(float));
    g->cross_v = malloc(L * R * Dd * sizeof(float));
    if (!g->enc_out || !g->enc_dec || !g->cross_k || !g->cross_v) return false;
    for (int j = 0; j < g->n; j++) {
        item *it = &g->it[j];
        it->out = malloc(CN_MAX_GEN * sizeof *it->out);
        if (!it->out || !tr_nn_kv_init(&it->kv, hp->n_dec_layers, s->n_ctx, hp->d_dec, s->kv_f16))
            return false;
    }
    return true;
}

/* Encoder, projection and cross K/V of every decoder layer for the group. */
static transcribe_status group_encode(cn_session *s, group *g, tr_run_ctx *abort_ctx) {
    const cn_model *m = s->m;
    const float **mels = malloc((size_t)g->n * sizeof *mels);
    int *T_mel = malloc((size_t)g->n * sizeof *T_mel);
    if (!mels || !T_mel) {
        free(mels);
        free(T_mel);
        return TRANSCRIBE_ERR_OOM;
    }
    for (int j = 0; j < g->n; j++) {
        mels[j] = g->it[j].mel;
        T_mel[j] = g->it[j].T_mel;
    }
    transcribe_status st = tr_fc_forward_batch(m->enc, s->pool, s->fc_work, g->n, mels, T_mel,
                                               g->enc_out, abort_cb, abort_ctx);
    free(mels);
    free(T_mel);
    if (st != TRANSCRIBE_OK) return st;
    if (m->hp.enc_dec_proj) tr_nn_linear_fwd(s->pool, &m->proj, g->enc_out, g->rows, g->enc_dec);
    tr_ed_cross_kv(s->pool, &m->decoder, g->enc_dec, g->rows, g->cross_k, g->cross_v,
                   (size_t)g->rows * (size_t)m->hp.d_dec);
    return TRANSCRIBE_OK;
}

/* Greedy lockstep decode of the group (nn/encdec_greedy.h: the loop of
 * src/nn/greedy.c per utterance, budget min(n_ctx - prompt, 512), window
 * n_ctx): returns ABORTED when the abort callback fired. */
static transcribe_status group_decode(cn_session *s, const cn_prompt *pr, group *g,
                                      tr_run_ctx *abort_ctx) {
    const cn_model *m = s->m;
    const size_t D = (size_t)m->hp.d_dec;
    int max_new = s->n_ctx - pr->n;
    if (max_new > CN_MAX_GEN) max_new = CN_MAX_GEN;
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
                                  .n_prompt = pr->n,
                                  .eos = m->hp.eos,
                                  .max_new = max_new,
                                  .max_n_kv = s->n_ctx,
                                  .should_abort = abort_cb,
                                  .abort_user = abort_ctx};
    transcribe_status st = tr_ed_greedy_batch(s->pool, &m->decoder, &cfg, rows, g->n);
    for (int j = 0; j < g->n; j++) {
        g->it[j].n_out = rows[j].n_out;
        g->it[j].tok = rows[j].last;
        g->it[j].live = rows[j].live;
    }
    free(rows);
    return st;
}

/* One group: mels, encoder, decode, results. */
static transcribe_status run_group(cn_session *s, const cn_prompt *pr, const float *const *pcm,
                                   const int *n_samples, group *g, tr_run_ctx *ctxs, bool *done) {
    const cn_model *m = s->m;
    transcribe_status st = group_mels(s, pcm, n_samples, g, ctxs, done);
    if (st != TRANSCRIBE_OK || g->n == 0) return st;
    g->rows = 0;
    for (int j = 0; j < g->n; j++) {
        g->it[j].off = g->rows;
        g->rows += g->it[j].T;
    }
    if (!group_alloc(s, g)) {
        TR_ERROR("canary: out of memory for a batch of %d utterances (%d encoder frames)", g->n,
                 g->rows);
        return TRANSCRIBE_ERR_OOM;
    }
    tr_run_ctx *actx = &ctxs[g->it[0].idx];
    double t0 = tr_time_ms();
    st = group_encode(s, g, actx);
    double t1 = tr_time_ms();
    const bool encoded = st == TRANSCRIBE_OK;
    if (encoded) st = group_decode(s, pr, g, actx);
    double t2 = tr_time_ms();
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_ABORTED) return st;
    for (int j = 0; j < g->n; j++) {
        item *it = &g->it[j];
        tr_run_ctx *ctx = &ctxs[it->idx];
        /* docs/c-api.md §17: the shared encode divided across the utterances; the
         * lockstep decode likewise */
        ctx->result->encode_ms = (float)((t1 - t0) / g->n);
        ctx->result->decode_ms = (float)((t2 - t1) / g->n);
        /* aborted: only utterances that already stopped are complete */
        if (st == TRANSCRIBE_ERR_ABORTED && (!encoded || it->live)) continue;
        transcribe_status u =
            it->tok == m->hp.eos ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        if (u == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            TR_WARN("canary: utterance %d stopped after %d tokens without end-of-text (context "
                    "%d, prompt %d); the text is truncated",
                    it->idx, it->n_out, s->n_ctx, pr->n);
        transcribe_status f = tr_cn_fill_result(m, pr, it->out, it->n_out,
                                                ctx->params->keep_special_tags, ctx->result);
        if (f != TRANSCRIBE_OK) return f;
        tr_run_batch_finish(ctxs, done, it->idx, u);
    }
    return st;
}

/* The batch as the hooks of tr_run_batch_groups (core/family.h) see it. */
typedef struct job {
    cn_session *s;
    cn_prompt pr;
} job;

static transcribe_status batch_gate(void *user, int i, const float *pcm, int n_samples) {
    (void)i;
    const job *b = user;
    return gate(b->s, &b->pr, pcm, n_samples);
}

static int batch_frames(void *user, int n_samples) {
    return (int)tr_cn_predict_enc_frames(((const job *)user)->s->m, n_samples);
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

transcribe_status tr_cn_run_batch(cn_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    s->n_last = 0;
    s->pool = ctxs[0].pool ? ctxs[0].pool : s->pool;
    job b = {.s = s};
    transcribe_status st = tr_cn_build_prompt(s->m, ctxs[0].params, &b.pr);
    if (st != TRANSCRIBE_OK) return st;
    static const tr_run_groups groups = {GROUP_MAX, GROUP_FRAMES, batch_gate, batch_frames,
                                         batch_group};
    return tr_run_batch_groups(&groups, &b, pcm, n_samples, n, ctxs);
}
