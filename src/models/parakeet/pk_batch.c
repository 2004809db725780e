/* The batch run (docs/c-api.md §11, docs/formats/parakeet.md §10.3): utterances that
 * fit one encoder window go through one encoder pass per group
 * (tr_fc_forward_batch: every projection reads its weights once for the
 * whole group; attention and convolutions stay per utterance, so each
 * utterance's frames equal its single run's), then each is decoded on its
 * own frames exactly as tr_pk_run does. Inputs too short for statistics or
 * long enough to need windows run through tr_pk_run on their own. Statuses
 * are per utterance; only OOM / BACKEND fail the batch. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "models/parakeet/parakeet.h"
#include "audio/audio.h"
#include "util/log.h"
#include "util/timer.h"
#include "util/vec.h"

/* Encoder frames one group may hold: twice the single-pass window, so the
 * group's work area stays within about twice a single long run's. */
static int group_frames(const pk_session *s) {
    return 2 * s->win.max_frames;
}

static int frames_of(const pk_model *m, int n_samples) {
    return tr_fc_out_frames(m->enc, n_samples / m->mel.hop_length + 1);
}

static bool grow(float **p, size_t *cap, size_t n) {
    float *q = tr_grow(*p, cap, n, sizeof(float), 0);
    if (!q) return false;
    *p = q;
    return true;
}

/* What the batch keeps per utterance of a group. */
typedef struct item {
    int idx;
    float *mel;
    int T_mel, T;
} item;

/* Decodes utterance it (its encoder rows at enc) into its result. */
static transcribe_status decode_one(pk_session *s, const item *it, float *enc, int prompt_id,
                                    tr_run_ctx *ctx) {
    const pk_model *m = s->m;
    pk_toks toks = {0};
    transcribe_status st = TRANSCRIBE_OK;
    double t0 = tr_time_ms();
    if (prompt_id >= 0) {
        size_t h = (size_t)m->prompt.hidden;
        if (!grow(&s->prompt_hid, &s->prompt_cap, ((size_t)it->T + 1) * h))
            st = TRANSCRIBE_ERR_OOM;
        else
            tr_pk_prompt_apply(&m->prompt, s->pool, prompt_id, enc, it->T, s->prompt_hid,
                               s->prompt_hid + (size_t)it->T * h);
    }
    if (st == TRANSCRIBE_OK)
        st = tr_pk_decode(&m->head, s->pool, &s->dec, enc, it->T, &toks, tr_run_abort_poll, ctx);
    ctx->result->decode_ms = (float)(tr_time_ms() - t0);
    if (st == TRANSCRIBE_OK) st = tr_pk_build_result(m, toks.v, toks.n, ctx->params, ctx->result);
    tr_pk_toks_free(&toks);
    return st;
}

/* One group: mels, one encoder pass, then each utterance's decode. */
static transcribe_status run_group(pk_session *s, const float *const *pcm, const int *n_samples,
                                   item *g, int n, int prompt_id, tr_run_ctx *ctxs, bool *done) {
    const pk_model *m = s->m;
    const int d = m->hp.d_model;
    transcribe_status st = TRANSCRIBE_OK;
    int rows = 0, live = 0;
    for (int j = 0; j < n; j++) {
        item *it = &g[j];
        tr_run_ctx *ctx = &ctxs[it->idx];
        double t0 = tr_time_ms();
        float *clean = NULL;
        const float *x = tr_pcm_sanitized(pcm[it->idx], n_samples[it->idx], "parakeet", &clean);
        transcribe_status ms =
            x ? tr_mel_compute(&m->mel, x, n_samples[it->idx], s->pool, &it->mel, &it->T_mel)
              : TRANSCRIBE_ERR_OOM;
        free(clean);
        ctx->result->mel_ms = (float)(tr_time_ms() - t0);
        if (ms == TRANSCRIBE_ERR_OOM) return ms;
        it->T = ms == TRANSCRIBE_OK ? tr_fc_out_frames(m->enc, it->T_mel) : 0;
        if (it->T < 1) {
            free(it->mel);
            it->mel = NULL;
            tr_run_batch_finish(ctxs, done, it->idx,
                                ms == TRANSCRIBE_OK ? TRANSCRIBE_ERR_INVALID_ARG : ms);
            continue;
        }
        if (live != j) { /* the group keeps the utterances with frames */
            g[live] = *it;
            it->mel = NULL;
        }
        live++;
        rows += it->T;
    }
    if (live == 0) return TRANSCRIBE_OK;
    const float **mels = malloc((size_t)live * sizeof *mels);
    int *T_mel = malloc((size_t)live * sizeof *T_mel);
    if (!mels || !T_mel || !grow(&s->enc_out, &s->enc_cap, (size_t)rows * d)) {
        free(mels);
        free(T_mel);
        TR_ERROR("parakeet: out of memory for a batch of %d encoder frames", rows);
        return TRANSCRIBE_ERR_OOM;
    }
    for (int j = 0; j < live; j++) {
        mels[j] = g[j].mel;
        T_mel[j] = g[j].T_mel;
    }
    double t0 = tr_time_ms();
    st = tr_fc_forward_batch(m->enc, s->pool, s->fc, live, mels, T_mel, s->enc_out,
                             tr_run_abort_poll, &ctxs[g[0].idx]);
    double enc_ms = tr_time_ms() - t0;
    free(mels);
    free(T_mel);
    if (st != TRANSCRIBE_OK) return st;
    size_t off = 0;
    for (int j = 0; j < live; j++) {
        tr_run_ctx *ctx = &ctxs[g[j].idx];
        /* docs/c-api.md §17: the shared encode divided across the group's utterances */
        ctx->result->encode_ms = (float)(enc_ms / live);
        transcribe_status u = decode_one(s, &g[j], s->enc_out + off * d, prompt_id, ctx);
        off += (size_t)g[j].T;
        if (u == TRANSCRIBE_ERR_OOM || u == TRANSCRIBE_ERR_BACKEND) return u;
        tr_run_batch_finish(ctxs, done, g[j].idx, u);
        if (u == TRANSCRIBE_ERR_ABORTED) return u;
    }
    return TRANSCRIBE_OK;
}

static void free_group(item *g, int n) {
    for (int j = 0; j < n; j++) {
        free(g[j].mel);
        g[j].mel = NULL;
    }
}

/* The batch as the hooks of tr_run_batch_groups (core/family.h) see it. */
typedef struct job {
    pk_session *s;
    int prompt_id;
} job;

static transcribe_status batch_gate(void *user, int i, const float *pcm, int n_samples) {
    (void)user;
    if (pcm && n_samples > 0) return TRANSCRIBE_OK;
    TR_ERROR("parakeet: batch utterance %d has %s", i, pcm ? "n_samples <= 0" : "NULL pcm");
    return TRANSCRIBE_ERR_INVALID_ARG;
}

static int batch_frames(void *user, int n_samples) {
    return frames_of(((const job *)user)->s->m, n_samples);
}

/* Outside the batched path, one by one: under two hops, or past the
 * single-pass window. */
static bool batch_alone(void *user, int n_samples) {
    const pk_session *s = ((const job *)user)->s;
    return n_samples < 2 * s->m->mel.hop_length || frames_of(s->m, n_samples) > s->win.max_frames;
}

static transcribe_status batch_run_alone(void *user, const float *pcm, int n_samples,
                                         tr_run_ctx *ctx) {
    return tr_pk_run(((job *)user)->s, pcm, n_samples, ctx);
}

static transcribe_status batch_group(void *user, const tr_run_group *grp) {
    const job *b = user;
    item *g = calloc((size_t)grp->k, sizeof *g);
    if (!g) return TRANSCRIBE_ERR_OOM;
    for (int j = 0; j < grp->k; j++) g[j].idx = grp->idx[j];
    const transcribe_status st =
        run_group(b->s, grp->pcm, grp->n_samples, g, grp->k, b->prompt_id, grp->ctxs, grp->done);
    free_group(g, grp->k);
    free(g);
    return st;
}

/* Utterances outside the batched path first, one by one; the rest in
 * groups of at most group_frames() encoder frames, in order;
 * docs/formats/parakeet.md §11: every utterance that did not complete
 * reports ABORTED. */
transcribe_status tr_pk_run_batch(pk_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    const pk_model *m = s->m;
    int prompt_id = -1;
    if (m->prompt.n_prompts > 0) {
        prompt_id = tr_pk_prompt_id(&m->prompt, ctxs[0].params->language);
        if (prompt_id < 0) return tr_pk_validate_run(m, ctxs[0].params);
    }
    job b = {s, prompt_id};
    const tr_run_groups groups = {.max_n = INT_MAX,
                                  .max_frames = group_frames(s),
                                  .gate = batch_gate,
                                  .frames = batch_frames,
                                  .run = batch_group,
                                  .alone = batch_alone,
                                  .run_alone = batch_run_alone};
    return tr_run_batch_groups(&groups, &b, pcm, n_samples, n, ctxs);
}
