/* The batch run (docs/c-api.md §11, docs/formats/gigaam.md §8): utterances within the
 * 25 s window go through one encoder pass per group, packed one after
 * another (nn/conformer.h: every projection reads its weights once for the
 * group; attention and the depthwise conv stay per utterance, so there is
 * no padding to mask and each utterance's frames equal its single run's),
 * then each is decoded on its own frames as tr_ga_run does. Shorter than
 * one frame: INVALID_ARG for that utterance; longer than the window: its
 * own tr_ga_run. Only OOM fails the whole batch. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/gigaam/gigaam.h"
#include "util/log.h"
#include "util/timer.h"

/* Encoder frames one group may hold: two full windows. */
#define GA_GROUP_FRAMES (2 * GA_MAX_AUDIO_MS / GA_FRAME_MS)

typedef struct item {
    int idx;
    float *mel;
    int T_mel, T;
} item;

static int frames_of(const ga_model *m, int n) {
    return tr_ga_enc_frames(tr_ga_mel_frames(m, n));
}

static transcribe_status decode_one(const ga_model *m, tr_pool *pool, const item *it,
                                    const float *enc, tr_run_ctx *ctx) {
    double t0 = tr_time_ms();
    ga_tok *toks = NULL;
    int n = 0;
    transcribe_status st;
    if (m->head == GA_HEAD_RNNT) {
        st = tr_ga_rnnt_greedy(m, pool, enc, it->T, &toks, &n, NULL, tr_run_abort_poll, ctx);
    } else {
        const size_t C = (size_t)m->hp.n_classes;
        float *logp = malloc(sizeof(float) * (size_t)it->T * C);
        toks = malloc(sizeof(ga_tok) * (size_t)it->T);
        st =
            logp && toks ? tr_ga_ctc_logprobs(m, pool, enc, it->T, NULL, logp) : TRANSCRIBE_ERR_OOM;
        if (st == TRANSCRIBE_OK) n = tr_ga_ctc_greedy(m, logp, it->T, toks);
        free(logp);
    }
    if (st == TRANSCRIBE_OK) st = tr_ga_build_result(m, toks, n, ctx->params, ctx->result);
    ctx->result->decode_ms = (float)(tr_time_ms() - t0);
    free(toks);
    return st;
}

static transcribe_status run_group(ga_session *s, const float *const *pcm, const int *n_samples,
                                   item *g, int k, tr_run_ctx *ctxs, bool *done) {
    const ga_model *m = s->m;
    size_t rows = 0;
    for (int j = 0; j < k; j++) {
        tr_run_ctx *ctx = &ctxs[g[j].idx];
        double t0 = tr_time_ms();
        float *clean = NULL;
        const float *x = tr_pcm_sanitized(pcm[g[j].idx], n_samples[g[j].idx], "gigaam", &clean);
        transcribe_status st =
            x ? tr_ga_mel(m, s->pool, x, n_samples[g[j].idx], &g[j].mel, &g[j].T_mel)
              : TRANSCRIBE_ERR_OOM;
        free(clean);
        ctx->result->mel_ms = (float)(tr_time_ms() - t0);
        if (st) return st;
        g[j].T = tr_ga_enc_frames(g[j].T_mel);
        rows += (size_t)g[j].T;
    }
    float **mels = malloc(sizeof *mels * (size_t)k);
    int *T_mel = malloc(sizeof *T_mel * (size_t)k);
    float *enc = malloc(sizeof(float) * rows * (size_t)m->hp.d_model);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (mels && T_mel && enc) {
        for (int j = 0; j < k; j++) {
            mels[j] = g[j].mel;
            T_mel[j] = g[j].T_mel;
        }
        double t0 = tr_time_ms();
        for (int j = 0; j < k; j++) g[j].mel = NULL; /* the encoder frees them */
        st = tr_ga_encode_take(m, s->pool, k, mels, T_mel, enc, tr_run_abort_poll, &ctxs[g[0].idx]);
        const double enc_ms = tr_time_ms() - t0;
        size_t off = 0;
        for (int j = 0; st == TRANSCRIBE_OK && j < k; j++) {
            tr_run_ctx *ctx = &ctxs[g[j].idx];
            /* docs/c-api.md §17: the shared encode divided across the group */
            ctx->result->encode_ms = (float)(enc_ms / k);
            transcribe_status u =
                decode_one(m, s->pool, &g[j], enc + off * (size_t)m->hp.d_model, ctx);
            off += (size_t)g[j].T;
            if (u == TRANSCRIBE_ERR_OOM) {
                st = u;
                break;
            }
            tr_run_batch_finish(ctxs, done, g[j].idx, u);
            if (u == TRANSCRIBE_ERR_ABORTED) st = u;
        }
    }
    free(mels);
    free(T_mel);
    free(enc);
    return st;
}

/* The hooks of tr_run_batch_groups (core/family.h). */
static transcribe_status batch_gate(void *user, int i, const float *pcm, int n_samples) {
    (void)user;
    if (pcm && n_samples > 0) return TRANSCRIBE_OK;
    TR_ERROR("gigaam: batch utterance %d has %s", i, pcm ? "n_samples <= 0" : "NULL pcm");
    return TRANSCRIBE_ERR_INVALID_ARG;
}

static int batch_frames(void *user, int n_samples) {
    return frames_of(((const ga_session *)user)->m, n_samples);
}

/* Outside the batched path, one by one: shorter than a frame, or longer
 * than the model's window. */
static bool batch_alone(void *user, int n_samples) {
    const ga_model *m = ((const ga_session *)user)->m;
    const int max_frames =
        frames_of(m, (int)((int64_t)GA_MAX_AUDIO_MS * m->mel.sample_rate / 1000));
    return n_samples < m->mel.win_length || frames_of(m, n_samples) > max_frames;
}

static transcribe_status batch_run_alone(void *user, const float *pcm, int n_samples,
                                         tr_run_ctx *ctx) {
    return tr_ga_run(user, pcm, n_samples, ctx);
}

static transcribe_status batch_group(void *user, const tr_run_group *grp) {
    item *g = calloc((size_t)grp->k, sizeof *g);
    if (!g) return TRANSCRIBE_ERR_OOM;
    for (int j = 0; j < grp->k; j++) g[j].idx = grp->idx[j];
    const transcribe_status st =
        run_group(user, grp->pcm, grp->n_samples, g, grp->k, grp->ctxs, grp->done);
    for (int j = 0; j < grp->k; j++) free(g[j].mel);
    free(g);
    return st;
}

/* Utterances outside the batched path first, one by one; the rest in
 * groups of at most GA_GROUP_FRAMES encoder frames, in order; every
 * utterance an abort left unfinished reports ABORTED. */
transcribe_status tr_ga_run_batch(ga_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    static const tr_run_groups groups = {.max_n = INT_MAX,
                                         .max_frames = GA_GROUP_FRAMES,
                                         .gate = batch_gate,
                                         .frames = batch_frames,
                                         .run = batch_group,
                                         .alone = batch_alone,
                                         .run_alone = batch_run_alone};
    return tr_run_batch_groups(&groups, s, pcm, n_samples, n, ctxs);
}
