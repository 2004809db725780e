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

/* The batch as the hooks of tr_run_batch_groups (core/family.h) and
 * tr_fced_group_mels (nn/fc_encdec.h) see it. */
typedef struct job {
    cn_session *s;
    cn_prompt pr;
    const tr_run_group *grp; /* the group being run */
} job;

/* An utterance's front end (timed as its mel stage). */
static transcribe_status group_mel(void *user, int i, float **mel, int *T_mel) {
    const job *b = user;
    const double t0 = tr_time_ms();
    float *clean = NULL;
    const float *in = tr_pcm_sanitized(b->grp->pcm[i], b->grp->n_samples[i], "canary", &clean);
    const transcribe_status st =
        in ? tr_cn_log_mel(b->s->m, b->s->pool, in, b->grp->n_samples[i], mel, T_mel)
           : TRANSCRIBE_ERR_OOM;
    free(clean);
    b->grp->ctxs[i].result->mel_ms = (float)(tr_time_ms() - t0);
    return st;
}

/* One group: mels, one encoder pass, the lockstep decode (nn/fc_encdec.h:
 * the loop of src/nn/greedy.c per utterance, budget min(n_ctx - prompt,
 * 512), window n_ctx), results. */
static transcribe_status run_group(void *user, tr_fced_group *g) {
    job *b = user;
    cn_session *s = b->s;
    const cn_model *m = s->m;
    const cn_prompt *pr = &b->pr;
    tr_run_ctx *ctxs = b->grp->ctxs;
    transcribe_status st =
        tr_fced_group_mels(g, &m->fced, group_mel, b, tr_run_group_finish, (void *)b->grp);
    if (st != TRANSCRIBE_OK || g->n == 0) return st;
    if (!tr_fced_group_alloc(g, &m->fced, s->n_ctx, CN_MAX_GEN, s->kv_f16))
        return TRANSCRIBE_ERR_OOM;
    tr_run_ctx *actx = &ctxs[g->it[0].idx];
    double t0 = tr_time_ms();
    st = tr_fced_group_encode(g, &m->fced, s->pool, s->fc_work, tr_run_abort_poll, actx);
    double t1 = tr_time_ms();
    const bool encoded = st == TRANSCRIBE_OK;
    if (encoded) {
        int max_new = s->n_ctx - pr->n;
        if (max_new > CN_MAX_GEN) max_new = CN_MAX_GEN;
        const tr_ed_greedy_cfg cfg = {.prompt = pr->ids,
                                      .n_prompt = pr->n,
                                      .eos = m->hp.eos,
                                      .max_new = max_new,
                                      .max_n_kv = s->n_ctx,
                                      .should_abort = tr_run_abort_poll,
                                      .abort_user = actx};
        st = tr_fced_group_decode(g, &m->fced, s->pool, &cfg);
    }
    double t2 = tr_time_ms();
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_ABORTED) return st;
    for (int j = 0; j < g->n; j++) {
        tr_fced_utt *it = &g->it[j];
        tr_run_ctx *ctx = &ctxs[it->idx];
        /* docs/c-api.md §17: the shared encode divided across the utterances; the
         * lockstep decode likewise */
        ctx->result->encode_ms = (float)((t1 - t0) / g->n);
        ctx->result->decode_ms = (float)((t2 - t1) / g->n);
        /* aborted: only utterances that already stopped are complete */
        if (st == TRANSCRIBE_ERR_ABORTED && (!encoded || it->live)) continue;
        transcribe_status u =
            it->last == m->hp.eos ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        if (u == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            TR_WARN("canary: utterance %d stopped after %d tokens without end-of-text (context "
                    "%d, prompt %d); the text is truncated",
                    it->idx, it->n_out, s->n_ctx, pr->n);
        transcribe_status f = tr_cn_fill_result(m, pr, it->out, it->n_out,
                                                ctx->params->keep_special_tags, ctx->result);
        if (f != TRANSCRIBE_OK) return f;
        tr_run_batch_finish(ctxs, b->grp->done, it->idx, u);
    }
    return st;
}

static transcribe_status batch_gate(void *user, int i, const float *pcm, int n_samples) {
    if (!pcm || n_samples <= 0) {
        TR_ERROR("canary: batch utterance %d has %s", i, pcm ? "n_samples <= 0" : "NULL pcm");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const job *b = user;
    return gate(b->s, &b->pr, pcm, n_samples);
}

static int batch_frames(void *user, int n_samples) {
    return (int)tr_cn_predict_enc_frames(((const job *)user)->s->m, n_samples);
}

static transcribe_status batch_group(void *user, const tr_run_group *grp) {
    job *b = user;
    b->grp = grp;
    return tr_fced_group_run(grp->idx, grp->k, run_group, b);
}

transcribe_status tr_cn_run_batch(cn_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    s->n_last = 0;
    s->pool = ctxs[0].pool ? ctxs[0].pool : s->pool;
    job b = {.s = s};
    transcribe_status st = tr_cn_build_prompt(s->m, ctxs[0].params, &b.pr);
    if (st != TRANSCRIBE_OK) return st;
    static const tr_run_groups groups = {.max_n = GROUP_MAX,
                                         .max_frames = GROUP_FRAMES,
                                         .gate = batch_gate,
                                         .frames = batch_frames,
                                         .run = batch_group};
    return tr_run_batch_groups(&groups, &b, pcm, n_samples, n, ctxs);
}
