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
#include "nn/moonshine_decoder.h"
#include "util/log.h"
#include "util/timer.h"

/* Encoder frames one group holds (~3 min of audio at 24 ms a frame), and
 * utterances. */
#define GROUP_FRAMES 8000
#define GROUP_MAX    64

/* The group being run, as the hooks of tr_msd_group_encode see it. */
typedef struct job {
    mn_session *s;
    const tr_run_group *g;
} job;

/* Utterance u->idx's encoder and cross K/V, written into u's buffers. */
static transcribe_status utt_encode(void *user, tr_msd_utt *u) {
    const job *b = user;
    mn_session *s = b->s;
    const int i = u->idx;
    const double t0 = tr_time_ms();
    u->T = (int)tr_mn_enc_frames(&s->m->hp, b->g->n_samples[i], NULL, NULL);
    if (!tr_msd_utt_alloc(u, &s->m->msd, s->m->hp.max_pos, s->kv_f16, s->kv_f16)) {
        TR_ERROR("moonshine: out of memory for utterance %d of a batch", i);
        return TRANSCRIBE_ERR_OOM;
    }
    float *clean = NULL;
    const float *in = tr_pcm_sanitized(b->g->pcm[i], b->g->n_samples[i], "moonshine", &clean);
    int T = 0;
    const mn_cross dst = {u->ck, u->cv, u->ck16, u->cv16};
    const transcribe_status st =
        in ? tr_mn_encode(s, in, b->g->n_samples[i], &T, &dst, tr_run_abort_poll, &b->g->ctxs[i])
           : TRANSCRIBE_ERR_OOM;
    free(clean);
    b->g->ctxs[i].result->encode_ms = (float)(tr_time_ms() - t0);
    return st;
}

/* One group: encoders, lockstep decode, results. */
static transcribe_status run_group(void *user, tr_msd_utt *u, int n) {
    job *b = user;
    mn_session *s = b->s;
    const tr_run_group *g = b->g;
    const mn_model *m = s->m;
    const mn_hparams *hp = &m->hp;
    tr_run_ctx *ctxs = g->ctxs;
    transcribe_status st =
        tr_msd_group_encode(u, &n, utt_encode, b, tr_run_group_finish, (void *)g);
    if (st != TRANSCRIBE_OK || n == 0) return st;
    const double t0 = tr_time_ms();
    st = tr_msd_greedy_group(s->pool, &m->msd, hp->start_id, hp->eos, hp->max_pos,
                             tr_run_abort_poll, &ctxs[u[0].idx], u, n);
    const double t1 = tr_time_ms();
    for (int j = 0; j < n && (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED); j++) {
        const int i = u[j].idx;
        tr_run_ctx *ctx = &ctxs[i];
        /* docs/c-api.md §17: the lockstep decode divided across the group */
        ctx->result->decode_ms = (float)((t1 - t0) / n);
        if (u[j].live) continue; /* aborted mid-utterance: no partial result */
        const transcribe_status r = u[j].eos ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        if (r == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            TR_WARN("moonshine: utterance %d: output truncated at %d tokens", i, u[j].n_out);
        const transcribe_status f =
            tr_mn_fill_result(m, u[j].out, u[j].n_out, g->n_samples[i], ctx->result);
        if (f != TRANSCRIBE_OK) {
            st = f;
            break;
        }
        /* a truncated utterance keeps its text, as the single run does
         * (tr_run_batch_finish would clear it) */
        tr_run_batch_settle(ctxs, i, r, -1.0f);
        g->done[i] = true;
    }
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
    job b = {user, g};
    return tr_msd_group_run(g->idx, g->k, run_group, &b);
}

transcribe_status tr_mn_run_batch(mn_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    s->n_last = 0;
    s->pool = ctxs[0].pool ? ctxs[0].pool : s->pool;
    static const tr_run_groups groups = {.max_n = GROUP_MAX,
                                         .max_frames = GROUP_FRAMES,
                                         .gate = batch_gate,
                                         .frames = batch_frames,
                                         .run = batch_group};
    return tr_run_batch_groups(&groups, s, pcm, n_samples, n, ctxs);
}
