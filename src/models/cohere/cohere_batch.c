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

/* The batch as the hooks of tr_run_batch_groups (core/family.h) and
 * tr_fced_group_mels (nn/fc_encdec.h) see it. */
typedef struct job {
    ch_session *s;
    ch_prompt pr;
    const tr_run_group *grp; /* the group being run */
} job;

/* An utterance's front end (timed as its mel stage). */
static transcribe_status group_mel(void *user, int i, float **mel, int *T_mel) {
    const job *b = user;
    const double t0 = tr_time_ms();
    float *clean = NULL;
    const float *in = tr_pcm_sanitized(b->grp->pcm[i], b->grp->n_samples[i], "cohere", &clean);
    const transcribe_status st =
        in ? tr_ch_log_mel(b->s->m, b->s->pool, in, b->grp->n_samples[i], mel, T_mel)
           : TRANSCRIBE_ERR_OOM;
    free(clean);
    b->grp->ctxs[i].result->mel_ms = (float)(tr_time_ms() - t0);
    return st;
}

/* One group: mels, one encoder pass, the lockstep decode, results. */
static transcribe_status run_group(void *user, tr_fced_group *g) {
    job *b = user;
    ch_session *s = b->s;
    const ch_model *m = s->m;
    const ch_prompt *pr = &b->pr;
    tr_run_ctx *ctxs = b->grp->ctxs;
    transcribe_status st =
        tr_fced_group_mels(g, &m->fced, group_mel, b, tr_run_group_finish, (void *)b->grp);
    if (st != TRANSCRIBE_OK || g->n == 0) return st;
    if (!tr_fced_group_alloc(g, &m->fced, s->n_ctx, CH_MAX_GEN, s->kv_f16))
        return TRANSCRIBE_ERR_OOM;
    tr_run_ctx *actx = &ctxs[g->it[0].idx];
    const double t0 = tr_time_ms();
    st = tr_fced_group_encode(g, &m->fced, s->pool, s->fc_work, tr_run_abort_poll, actx);
    const double t1 = tr_time_ms();
    const bool encoded = st == TRANSCRIBE_OK;
    if (encoded) {
        const tr_ed_greedy_cfg cfg = {.prompt = pr->ids,
                                      .n_prompt = CH_PROMPT,
                                      .eos = m->hp.eos,
                                      .max_new = tr_ch_max_new(s),
                                      .max_n_kv = s->n_ctx,
                                      .should_abort = tr_run_abort_poll,
                                      .abort_user = actx};
        st = tr_fced_group_decode(g, &m->fced, s->pool, &cfg);
    }
    const double t2 = tr_time_ms();
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_ABORTED) return st;
    for (int j = 0; j < g->n; j++) {
        tr_fced_utt *it = &g->it[j];
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
            tr_ch_fill_result(m, pr, it->out, it->n_out, b->grp->n_samples[it->idx], ctx->result);
        if (f != TRANSCRIBE_OK) return f;
        /* settled, not tr_run_batch_finish: a truncated utterance keeps its
         * text, as its single run does */
        tr_run_settle(ctx, u);
        b->grp->done[it->idx] = true;
    }
    return st;
}

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
    b->grp = grp;
    return tr_fced_group_run(grp->idx, grp->k, run_group, b);
}

transcribe_status tr_ch_run_batch(ch_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    s->n_last = s->last_T_enc = 0; /* the batch leaves the single-run state */
    s->pool = ctxs[0].pool ? ctxs[0].pool : s->pool;
    job b = {.s = s};
    transcribe_status st = tr_ch_build_prompt(s->m, ctxs[0].params, &b.pr);
    if (st != TRANSCRIBE_OK) return st;
    static const tr_run_groups groups = {.max_n = GROUP_MAX,
                                         .max_frames = GROUP_FRAMES,
                                         .gate = batch_gate,
                                         .frames = batch_frames,
                                         .run = batch_group};
    return tr_run_batch_groups(&groups, &b, pcm, n_samples, n, ctxs);
}
