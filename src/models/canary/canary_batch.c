/* The batch run (docs/c-api.md §11, docs/formats/canary.md §11): the gates of §9 per
 * utterance (an over-long one gets INPUT_TOO_LONG, the rest decode), then
 * per group of utterances one encoder pass (tr_fc_forward_batch: every
 * projection reads its weights once for the group), the projection and
 * cross K/V over all frames at once, the prompt prefilled for every
 * utterance in one pass, and greedy steps in lockstep: each step feeds one
 * token per unfinished utterance through the decoder as one packed batch
 * (each weight read once per step for the whole batch), attention per
 * utterance over its own cache and encoder frames. Each utterance stops at
 * its own EOS or budget (min(n_ctx - prompt, 512), §8.3) exactly as the
 * single run's loop does, so its tokens are the single run's. */
#include <stdlib.h>
#include <string.h>

#include "models/canary/canary.h"
#include "audio/audio.h"
#include "nn/dec_pass.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/argmax.h"
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
    int n_out, n_gen, n_past;
    int32_t tok;
    bool live;
} item;

/* Batch state of one group: packed encoder rows and decoder scratch. */
typedef struct group {
    item *it;
    int n;
    int rows;
    float *enc_out, *enc_dec, *cross_k, *cross_v; /* packed [rows][.], cross [L][rows][D] */
    float *x, *scratch, *logits;                  /* [n * P][D], block scratch, [n][V] */
    tr_nn_dec_seg *segs;
    int *live_idx;
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
    free(g->x);
    free(g->scratch);
    free(g->logits);
    free(g->segs);
    free(g->live_idx);
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
static bool group_alloc(const cn_session *s, const cn_prompt *pr, group *g) {
    const cn_hparams *hp = &s->m->hp;
    const size_t R = (size_t)g->rows, De = (size_t)hp->d_enc, Dd = (size_t)hp->d_dec,
                 L = (size_t)hp->n_dec_layers, n = (size_t)g->n;
    g->enc_out = malloc(R * De * sizeof(float));
    g->enc_dec = hp->enc_dec_proj ? malloc(R * Dd * sizeof(float)) : g->enc_out;
    g->cross_k = malloc(L * R * Dd * sizeof(float));
    g->cross_v = malloc(L * R * Dd * sizeof(float));
    g->x = malloc(n * (size_t)pr->n * Dd * sizeof(float));
    g->scratch =
        malloc(tr_nn_dec_block_scratch(&s->m->dec_dims, (int)n * pr->n, s->n_ctx) * sizeof(float));
    g->logits = malloc(n * (size_t)hp->n_vocab * sizeof(float));
    g->segs = malloc(n * sizeof *g->segs);
    g->live_idx = malloc(n * sizeof *g->live_idx);
    if (!g->enc_out || !g->enc_dec || !g->cross_k || !g->cross_v || !g->x || !g->scratch ||
        !g->logits || !g->segs || !g->live_idx)
        return false;
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
    const size_t stride = (size_t)g->rows * (size_t)m->hp.d_dec;
    for (int l = 0; l < m->hp.n_dec_layers; l++)
        tr_nn_cross_kv(s->pool, &m->dec[l], g->enc_dec, g->rows, g->cross_k + l * stride,
                       g->cross_v + l * stride);
    return TRANSCRIBE_OK;
}

/* The decoder over segments [first, first + n_seg) of g->segs (their rows'
 * ids at ids); logits of each segment's last row into g->logits[first..]. */
static void decode_pass(cn_session *s, group *g, int first, int n_seg, const int32_t *ids) {
    const cn_model *m = s->m;
    const int D = m->hp.d_dec;
    tr_nn_dec_seg *segs = g->segs + first;
    int rows = 0;
    for (int k = 0; k < n_seg; k++) {
        /* x = LN(E_tok[y] + PE[p]) with the stored table, as tr_cn_decode */
        const tr_nn_dec_seg *sg = &segs[k];
        float *x = g->x + (size_t)rows * D;
        tr_get_rows(m->tok_emb, ids + rows, sg->rows, x);
        tr_add_scaled(x, x, m->pos_enc + (size_t)sg->n_past * D, 1.0f, (long)sg->rows * D);
        rows += sg->rows;
    }
    tr_layer_norm(s->pool, g->x, g->x, rows, D, m->emb_ln.w, m->emb_ln.b, 1e-5f);
    const size_t stride = (size_t)g->rows * (size_t)D;
    for (int l = 0; l < m->hp.n_dec_layers; l++) {
        for (int k = 0; k < n_seg; k++) {
            const item *it = &g->it[g->live_idx[first + k]];
            segs[k].ck = g->cross_k + l * stride + (size_t)it->off * D;
            segs[k].cv = g->cross_v + l * stride + (size_t)it->off * D;
        }
        tr_nn_dec_block_fwd_segs(s->pool, &m->dec[l], &m->dec_dims, g->x, n_seg, segs, l,
                                 g->scratch);
    }
    /* each segment's last row, gathered for one head product */
    for (int k = 0, r = 0; k < n_seg; k++) {
        r += segs[k].rows;
        if (r - 1 != k)
            memmove(g->x + (size_t)k * D, g->x + (size_t)(r - 1) * D, (size_t)D * sizeof(float));
    }
    tr_layer_norm(s->pool, g->x, g->x, n_seg, D, m->dec_ln.w, m->dec_ln.b, 1e-5f);
    tr_linear(s->pool, m->head.w, m->head.b, g->x, n_seg,
              g->logits + (size_t)first * m->hp.n_vocab);
}

/* The decoder over the segments already in g->segs (rows packed in ids),
 * in passes sized by tr_nn_dec_pass_rows: a lockstep step of a few rows
 * reads every weight once per pass of up to 4 rows instead of packing
 * whole weight panels for 5..15 rows. */
static void decode_segs(cn_session *s, group *g, int n_seg, const int32_t *ids) {
    int left = 0;
    for (int k = 0; k < n_seg; k++) left += g->segs[k].rows;
    for (int first = 0; first < n_seg;) {
        const int limit = tr_nn_dec_pass_rows(left);
        int k = 0, rows = 0;
        while (first + k < n_seg && (k == 0 || rows + g->segs[first + k].rows <= limit))
            rows += g->segs[first + k++].rows;
        decode_pass(s, g, first, k, ids);
        ids += rows;
        left -= rows;
        first += k;
    }
}

/* Sets segment k for live item j: `rows` rows at its current position. */
static void set_seg(group *g, int k, int j, int rows) {
    item *it = &g->it[j];
    g->live_idx[k] = j;
    g->segs[k] = (tr_nn_dec_seg){rows, it->n_past, it->T, &it->kv, NULL, NULL};
}

/* Greedy lockstep decode of the group (the loop of src/nn/greedy.c per
 * utterance): returns ABORTED when the abort callback fired. */
static transcribe_status group_decode(cn_session *s, const cn_prompt *pr, group *g,
                                      tr_run_ctx *abort_ctx) {
    const cn_model *m = s->m;
    const int V = m->hp.n_vocab, eos = m->hp.eos;
    int max_new = s->n_ctx - pr->n;
    if (max_new > CN_MAX_GEN) max_new = CN_MAX_GEN;
    int32_t *ids = malloc((size_t)g->n * (size_t)pr->n * sizeof *ids);
    if (!ids) return TRANSCRIBE_ERR_OOM;
    /* prefill: the same prompt for every utterance */
    for (int j = 0; j < g->n; j++) {
        memcpy(ids + (size_t)j * pr->n, pr->ids, (size_t)pr->n * sizeof *ids);
        set_seg(g, j, j, pr->n);
    }
    decode_segs(s, g, g->n, ids);
    for (int j = 0; j < g->n; j++) {
        item *it = &g->it[j];
        it->tok = tr_argmax(g->logits + (size_t)j * V, V);
        it->n_gen = 1;
        it->n_past = pr->n;
        it->n_out = 0;
        if (it->tok != eos) it->out[it->n_out++] = it->tok;
    }
    transcribe_status st = TRANSCRIBE_OK;
    for (;;) {
        int k = 0;
        for (int j = 0; j < g->n; j++) {
            item *it = &g->it[j];
            it->live = it->tok != eos && it->n_gen < max_new && it->n_past + 1 <= s->n_ctx;
            if (!it->live) continue;
            ids[k] = it->tok;
            set_seg(g, k++, j, 1);
        }
        if (k == 0) break;
        if (tr_run_should_abort(abort_ctx)) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        decode_segs(s, g, k, ids);
        for (int q = 0; q < k; q++) {
            item *it = &g->it[g->live_idx[q]];
            it->tok = tr_argmax(g->logits + (size_t)q * V, V);
            it->n_gen++;
            it->n_past++;
            if (it->tok != eos) it->out[it->n_out++] = it->tok;
        }
    }
    free(ids);
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
    if (!group_alloc(s, pr, g)) {
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

transcribe_status tr_cn_run_batch(cn_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    s->n_last = 0;
    s->pool = ctxs[0].pool ? ctxs[0].pool : s->pool;
    cn_prompt pr;
    transcribe_status st = tr_cn_build_prompt(s->m, ctxs[0].params, &pr);
    if (st != TRANSCRIBE_OK) return st;
    bool *done = calloc((size_t)n, sizeof *done);
    item *items = calloc((size_t)(n < GROUP_MAX ? n : GROUP_MAX), sizeof *items);
    if (!done || !items) {
        free(done);
        free(items);
        return TRANSCRIBE_ERR_OOM;
    }
    for (int i = 0; i < n; i++) {
        transcribe_status u = gate(s, &pr, pcm[i], n_samples[i]);
        if (u != TRANSCRIBE_OK) tr_run_batch_finish(ctxs, done, i, u);
    }
    int i = 0;
    while (st == TRANSCRIBE_OK && i < n) {
        group g = {.it = items};
        int frames = 0;
        for (; i < n && g.n < GROUP_MAX; i++) {
            if (done[i]) continue;
            int f = (int)tr_cn_predict_enc_frames(s->m, n_samples[i]);
            if (g.n > 0 && frames + f > GROUP_FRAMES) break;
            g.it[g.n++] = (item){.idx = i};
            frames += f;
        }
        if (g.n == 0) break;
        if (tr_run_should_abort(&ctxs[g.it[0].idx])) {
            st = TRANSCRIBE_ERR_ABORTED;
        } else {
            st = run_group(s, &pr, pcm, n_samples, &g, ctxs, done);
        }
        group_free(&g);
    }
    if (st == TRANSCRIBE_ERR_ABORTED) tr_run_batch_abort_rest(ctxs, done, n);
    free(done);
    free(items);
    return st;
}
