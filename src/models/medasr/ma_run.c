/* The offline run (docs/formats/medasr.md §4–§7): input checks, front end, encoder and CTC
 * head, greedy CTC, result rows; the batch (§8.1) as one packed encoder pass; the session. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/medasr/medasr.h"
#include "util/log.h"
#include "util/timer.h"

int tr_ma_argmax(const float *row, int V) {
    int a = 0;
    for (int j = 1; j < V; j++)
        if (row[j] > row[a]) a = j; /* strict: ties go to the lowest id */
    return a;
}

/* one frame of the collapse: a is its argmax, prev the repeat memory */
static void ctc_frame(int a, int t, int blank, int *prev, int32_t *ids, int32_t *frames, int *n) {
    if (a == blank) {
        *prev = -1; /* a blank ends the run: X blank X is two X */
        return;
    }
    if (a == *prev) return;
    *prev = a;
    /* <s>, </s>, <unk>: dropped by id whatever the tokenizer keys say
     * (docs/formats/medasr.md §6.2) */
    if (a >= 1 && a <= 3) return;
    ids[*n] = a;
    frames[(*n)++] = t;
}

int tr_ma_greedy(const float *logits, int T, int V, int blank, int32_t *ids, int32_t *frames) {
    int n = 0, prev = -1;
    for (int t = 0; t < T; t++)
        ctc_frame(tr_ma_argmax(logits + (size_t)t * V, V), t, blank, &prev, ids, frames, &n);
    return n;
}

int tr_ma_greedy_best(const int32_t *best, int T, int blank, int32_t *ids, int32_t *frames) {
    int n = 0, prev = -1;
    for (int t = 0; t < T; t++) ctc_frame(best[t], t, blank, &prev, ids, frames, &n);
    return n;
}

transcribe_status tr_ma_validate_run(const ma_model *m, const struct transcribe_run_params *p) {
    (void)m;
    return tr_family_check_transcribe_only("medasr", p);
}

/* Samples the shortest input needs for one encoder frame: 13 mel frames with the shipped
 * keys, 2 320 samples (docs/formats/medasr.md §11 item 1). */
static int64_t min_samples(const ma_model *m) {
    const int k = m->hp.sub_kernel, T_mel = 3 * k - 2;
    return (int64_t)(T_mel - 1) * m->mel.hop_length + m->mel.win_length;
}

/* The checks of one input before any work: INVALID_ARG (logged) for NULL, too few samples for
 * one encoder frame; a warning past the trained positions. */
static transcribe_status check_input(const ma_model *m, const float *pcm, int n) {
    if (!pcm || n <= 0) {
        TR_ERROR("medasr: no samples");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int64_t need = min_samples(m);
    if (n < need || tr_ma_enc_frames(m, tr_ma_mel_frames(m, n)) < 1) {
        TR_ERROR("medasr: %d samples (%.0f ms) is too short: the subsampler needs at least %lld "
                 "samples (%d mel frames) for one encoder frame",
                 n, 1000.0 * n / m->mel.sample_rate, (long long)need, 3 * m->hp.sub_kernel - 2);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int T_enc = tr_ma_enc_frames(m, tr_ma_mel_frames(m, n));
    if (m->hp.max_pos > 0 && T_enc > m->hp.max_pos)
        TR_WARN("medasr: %d encoder frames (%.1f s) is past the %d positions the model was "
                "trained on; running it whole",
                T_enc, (double)n / m->mel.sample_rate, m->hp.max_pos);
    return TRANSCRIBE_OK;
}

/* Greedy decode of T_enc frames' argmax into ctx's result. */
static transcribe_status decode_into(const ma_model *m, const int32_t *best, int T_enc,
                                     tr_run_ctx *ctx) {
    double t0 = tr_time_ms();
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)T_enc * 2);
    if (!ids) return TRANSCRIBE_ERR_OOM;
    int n = tr_ma_greedy_best(best, T_enc, m->hp.blank, ids, ids + T_enc);
    transcribe_status st = tr_ma_build_result(m, ids, ids + T_enc, n, ctx->params, ctx->result);
    free(ids);
    tr_run_end_decode(ctx, st, t0);
    return st;
}

/* The encoder's poll (before the subsampler and before every block) as abort check and progress
 * report: the features are 5 %, each poll after the first one more share of the rest. */
typedef struct poll_ctx {
    tr_run_ctx *ctx;
    int calls, total;
} poll_ctx;

static bool poll_progress(void *user) {
    poll_ctx *p = user;
    if (p->calls > 0) tr_run_report_progress(p->ctx, 0.05 + 0.95 * p->calls / p->total);
    p->calls++;
    return tr_run_should_abort(p->ctx);
}

transcribe_status tr_ma_run(ma_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const ma_model *m = s->m;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    transcribe_status st = check_input(m, pcm, n_samples);
    if (st) return st;
    float *owned = NULL, *feats = NULL;
    int32_t *best = NULL;
    const float *x = tr_pcm_sanitized(pcm, n_samples, "medasr", &owned);
    if (!x) return TRANSCRIBE_ERR_OOM;
    double t0 = tr_time_ms();
    int T_mel = 0;
    st = tr_ma_features(m, s->pool, x, n_samples, &feats, &T_mel);
    double t1 = tr_time_ms();
    ctx->result->mel_ms = (float)(t1 - t0);
    if (st) goto done;
    tr_run_report_progress(ctx, 0.05);
    const int T_enc = tr_ma_enc_frames(m, T_mel);
    best = malloc(sizeof(int32_t) * (size_t)T_enc);
    if (!best) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    poll_ctx poll = {ctx, 0, m->hp.n_layers + 1};
    st = tr_ma_encode_take(m, s->pool, feats, 1, &T_mel, best, poll_progress, &poll);
    feats = NULL;
    ctx->result->encode_ms = (float)(tr_time_ms() - t1);
    if (st) goto done;
    st = decode_into(m, best, T_enc, ctx);
    if (st == TRANSCRIBE_OK) tr_run_report_progress(ctx, 1.0);
done:
    free(owned);
    free(feats);
    free(best);
    return st;
}

/* docs/formats/medasr.md §8.1: every input checked on its own (a refused one gets its status,
 * the rest still run), the features of the others packed into one encoder pass (each
 * utterance one segment: its rows equal its single run's), then each decoded on its own rows.
 * Only OOM fails the batch; an abort finishes every unfinished utterance ABORTED. */
transcribe_status tr_ma_run_batch(ma_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    const ma_model *m = s->m;
    const int M = m->hp.n_mels;
    bool *done = calloc((size_t)n, sizeof *done);
    float **mel = calloc((size_t)n, sizeof *mel);
    int *T_mel = calloc((size_t)n, sizeof *T_mel), *idx = calloc((size_t)n, sizeof *idx);
    float *feats = NULL;
    int32_t *best = NULL;
    transcribe_status st = TRANSCRIBE_OK;
    if (!done || !mel || !T_mel || !idx) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    if (tr_run_should_abort(&ctxs[0])) {
        st = TRANSCRIBE_ERR_ABORTED;
        goto done;
    }
    int live = 0;
    size_t rows_mel = 0, rows_enc = 0;
    for (int i = 0; i < n; i++) {
        if (!tr_run_batch_input_ok("medasr", pcm, n_samples, i, ctxs, done)) continue;
        transcribe_status u = check_input(m, pcm[i], n_samples[i]);
        if (u) {
            tr_run_batch_finish(ctxs, done, i, u);
            continue;
        }
        double t0 = tr_time_ms();
        float *clean = NULL;
        const float *x = tr_pcm_sanitized(pcm[i], n_samples[i], "medasr", &clean);
        u = x ? tr_ma_features(m, s->pool, x, n_samples[i], &mel[i], &T_mel[i])
              : TRANSCRIBE_ERR_OOM;
        free(clean);
        ctxs[i].result->mel_ms = (float)(tr_time_ms() - t0);
        if (u == TRANSCRIBE_ERR_OOM) {
            st = u;
            goto done;
        }
        if (u) {
            tr_run_batch_finish(ctxs, done, i, u);
            continue;
        }
        idx[live++] = i;
        rows_mel += (size_t)T_mel[i];
        rows_enc += (size_t)tr_ma_enc_frames(m, T_mel[i]);
    }
    if (live == 0) goto done;
    int *seg = malloc(sizeof(int) * (size_t)live);
    feats = malloc(sizeof(float) * rows_mel * (size_t)M);
    best = malloc(sizeof(int32_t) * rows_enc);
    if (!seg || !feats || !best) {
        free(seg);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    size_t off = 0;
    for (int j = 0; j < live; j++) {
        const int i = idx[j];
        memcpy(feats + off * M, mel[i], sizeof(float) * (size_t)T_mel[i] * M);
        free(mel[i]); /* one copy of the features, not two */
        mel[i] = NULL;
        off += (size_t)T_mel[i];
        seg[j] = T_mel[i];
    }
    double t0 = tr_time_ms();
    st = tr_ma_encode_take(m, s->pool, feats, live, seg, best, tr_run_abort_poll, &ctxs[idx[0]]);
    feats = NULL;
    const double enc_ms = tr_time_ms() - t0;
    free(seg);
    if (st) goto done;
    off = 0;
    for (int j = 0; j < live; j++) {
        const int i = idx[j], T_enc = tr_ma_enc_frames(m, T_mel[i]);
        ctxs[i].result->encode_ms = (float)(enc_ms / live); /* docs/c-api.md §17: shared */
        transcribe_status u = decode_into(m, best + off, T_enc, &ctxs[i]);
        off += (size_t)T_enc;
        if (u == TRANSCRIBE_ERR_OOM) {
            st = u;
            goto done;
        }
        tr_run_batch_finish(ctxs, done, i, u);
    }
done:
    if (st == TRANSCRIBE_ERR_ABORTED) tr_run_batch_abort_rest(ctxs, done, n);
    for (int i = 0; mel && i < n; i++) free(mel[i]);
    free(mel);
    free(T_mel);
    free(idx);
    free(done);
    free(feats);
    free(best);
    return st;
}

/* the session keeps only the pool: n_ctx and kv_type mean nothing here (docs/formats/medasr.md §8)
 */
TR_FAMILY_POOL_SESSION(ma)
