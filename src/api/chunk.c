/* Long audio (transcribe_run_params.chunking): when a run splits its input
 * at pauses, the pieces it runs and how their results are joined into one
 * result on the input's clock.
 *
 * When (tr_chunk_rule): a family that decodes a bounded number of output
 * tokens and has no long-form mode (tr_model_desc.bounded_output: about a
 * minute of speech) is split above one piece's length; a family with its
 * own long-form path (Whisper's 30 s windows, Parakeet's overlapping
 * windows) or a stated input limit (Canary) only above that limit; a
 * family that states neither is split above one piece's length. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "util/log.h"

#define BATCH_PIECES 4 /* pieces per run_batch call where the family batches */
#define MAX_RESPLIT  3 /* a truncated piece is halved at most this often */

tr_chunk_plan tr_chunk_rule(enum transcribe_chunking mode, int64_t chunk_max_ms, const char *arch,
                            bool bounded_output, bool long_form, int64_t limit_ms,
                            int64_t duration_ms) {
    tr_chunk_plan p;
    memset(&p, 0, sizeof p);
    int64_t limit = limit_ms > 0 ? limit_ms : 0;
    p.max_ms = chunk_max_ms > 0 ? chunk_max_ms : TR_CHUNK_DEFAULT_MS;
    if (limit > 0 && p.max_ms > limit * 9 / 10) p.max_ms = limit * 9 / 10; /* margin under it */
    if (p.max_ms < TR_CHUNK_MIN_MS) p.max_ms = TR_CHUNK_MIN_MS;
    p.target_ms = p.max_ms * 2 / 3;
    p.batch = 1;
    switch (mode) {
    case TRANSCRIBE_CHUNKING_OFF:
        return p;
    case TRANSCRIBE_CHUNKING_ON:
        p.split = true;
        snprintf(p.why, sizeof p.why, "chunking on");
        return p;
    case TRANSCRIBE_CHUNKING_AUTO:
        break;
    }
    if (limit > 0 && duration_ms > limit) {
        p.split = true;
        snprintf(p.why, sizeof p.why, "longer than the model's %.0f s input limit",
                 (double)limit / 1000.0);
    } else if (!long_form && bounded_output && duration_ms > p.max_ms) {
        p.split = true;
        snprintf(p.why, sizeof p.why, "%s has a fixed output budget and no long-form mode",
                 arch ? arch : "the model");
    } else if (!long_form && limit == 0 && duration_ms > p.max_ms) {
        p.split = true;
        snprintf(p.why, sizeof p.why, "%s states no long-form mode and no input limit",
                 arch ? arch : "the model");
    }
    return p;
}

tr_chunk_plan tr_chunk_plan_for(const struct transcribe_session *s,
                                const struct transcribe_run_params *p, int64_t n_samples) {
    const struct transcribe_model *m = s->model;
    int64_t limit = m->desc.caps.max_audio_ms > 0 ? m->desc.caps.max_audio_ms : 0;
    struct transcribe_session_limits lim;
    tr_session_limits(s, &lim);
    if (lim.effective_max_audio_ms > 0) limit = lim.effective_max_audio_ms; /* n_ctx can lower it */
    int rate = m->desc.caps.native_sample_rate > 0 ? m->desc.caps.native_sample_rate : 16000;
    tr_chunk_plan plan = tr_chunk_rule(
        p->chunking, p->chunk_max_ms, m->arch, m->desc.bounded_output,
        m->desc.features[TRANSCRIBE_FEATURE_LONG_FORM], limit, n_samples * 1000 / rate);
    plan.batch = p->chunk_batch > 0                               ? p->chunk_batch
                 : m->desc.bounded_output && m->family->run_batch ? BATCH_PIECES
                                                                  : 1;
    return plan;
}

transcribe_status tr_chunk_cut(const struct transcribe_session *s, const float *pcm, int n,
                               const struct transcribe_run_params *p, const tr_chunk_plan *plan,
                               struct transcribe_audio_span **spans, int *n_spans) {
    struct transcribe_pause_split_params sp;
    transcribe_pause_split_params_init(&sp);
    sp.target_ms = plan->target_ms;
    sp.max_ms = plan->max_ms;
    sp.vad_model = p->vad_model; /* cut at the VAD's pauses */
    sp.vad_params = p->vad_params;
    int rate =
        s->model->desc.caps.native_sample_rate > 0 ? s->model->desc.caps.native_sample_rate : 16000;
    return transcribe_pause_split(pcm, n, rate, &sp, spans, n_spans);
}

typedef struct piece {
    int64_t a, b; /* samples */
    int end_kind;
    int depth; /* times split after a truncation */
} piece;

typedef struct piece_list {
    piece *v;
    int n, cap;
} piece_list;

/* Replaces v[at] by the k pieces sub[0..k). */
static bool replace_piece(piece_list *l, int at, const piece *sub, int k) {
    if (l->n + k - 1 > l->cap) {
        int nc = l->cap * 2 > l->n + k ? l->cap * 2 : l->n + k;
        piece *p = realloc(l->v, (size_t)nc * sizeof *p);
        if (!p) return false;
        l->v = p;
        l->cap = nc;
    }
    memmove(l->v + at + k, l->v + at + 1, (size_t)(l->n - at - 1) * sizeof *l->v);
    memcpy(l->v + at, sub, (size_t)k * sizeof *sub);
    l->n += k - 1;
    return true;
}

/* Splits piece at (truncated output) in about two, at its pauses. */
static bool resplit(piece_list *l, int at, const float *pcm, int rate,
                    const struct transcribe_run_params *rp) {
    piece it = l->v[at];
    int64_t len_ms = (it.b - it.a) * 1000 / rate;
    if (it.depth >= MAX_RESPLIT || len_ms < 4000) return false;
    struct transcribe_pause_split_params sp;
    transcribe_pause_split_params_init(&sp);
    sp.max_ms = len_ms * 55 / 100;
    sp.vad_model = rp->vad_model;
    sp.vad_params = rp->vad_params;
    sp.target_ms = sp.max_ms * 2 / 3 < 1000 ? 1000 : sp.max_ms * 2 / 3;
    struct transcribe_audio_span *spans = NULL;
    int ns = 0;
    if (transcribe_pause_split(pcm + it.a, it.b - it.a, rate, &sp, &spans, &ns) != TRANSCRIBE_OK ||
        ns < 2) {
        transcribe_pause_split_free(spans);
        return false;
    }
    piece *sub = malloc((size_t)ns * sizeof *sub);
    bool ok = sub != NULL;
    for (int k = 0; ok && k < ns; k++) {
        sub[k] = (piece){it.a + spans[k].start, it.a + spans[k].end,
                         k + 1 < ns ? spans[k].end_kind : it.end_kind, it.depth + 1};
    }
    ok = ok && replace_piece(l, at, sub, ns);
    free(sub);
    transcribe_pause_split_free(spans);
    return ok;
}

static double ms_of(int64_t samples, int rate) {
    return (double)samples * 1000.0 / rate;
}

/* One piece alone into r (emptied first), over the VAD's speech regions
 * when the run has a VAD model, as transcribe_run would run it. */
static transcribe_status run_one(struct transcribe_session *s, const float *pcm, int n,
                                 const struct transcribe_run_params *p, tr_result *r) {
    tr_result_clear(r);
    transcribe_status st;
    if (p->vad_model) {
        tr_vad_join vj = {0};
        st = tr_vad_join_plan(p->vad_model, p->vad_params, s->model->desc.caps.native_sample_rate,
                              pcm, n, &vj);
        if (st == TRANSCRIBE_OK) st = tr_run_family_joined(s, &vj, p, r, NULL, "transcribe_run");
        tr_vad_join_free(&vj);
    } else {
        st = tr_run_family(s, pcm, n, p, r, NULL, "transcribe_run");
    }
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED &&
        st != TRANSCRIBE_ERR_ABORTED) {
        tr_result_clear(r);
    }
    r->status = st;
    return st;
}

/* k pieces together into rs[0..k) (emptied first), as transcribe_run_batch
 * would run them: the whole-call status; each row's in rs[i].status. */
static transcribe_status run_group(struct transcribe_session *s, const float *const *pcm,
                                   const int *n, int k, const struct transcribe_run_params *p,
                                   tr_result *rs) {
    for (int i = 0; i < k; i++) tr_result_clear(&rs[i]);
    tr_vad_batch vb = {0};
    if (p->vad_model) {
        transcribe_status st = tr_vad_batch_plan(
            p->vad_model, p->vad_params, s->model->desc.caps.native_sample_rate, pcm, n, k, &vb);
        if (st != TRANSCRIBE_OK) return st;
        pcm = vb.pcm;
        n = vb.n;
    }
    transcribe_status st = tr_run_family_batch(s, pcm, n, k, p, rs);
    tr_vad_batch_finish(&vb, rs);
    return st;
}

static void add_timings(const tr_result *r, float *t) {
    t[0] += r->mel_ms, t[1] += r->encode_ms, t[2] += r->decode_ms;
}

/* Appends the result src of piece it to r (when its status keeps text)
 * and lists the piece. */
static void join(tr_result *r, tr_result_joiner *j, const tr_result *src, const piece *it, int rate,
                 transcribe_status st) {
    int64_t t0 = (int64_t)(ms_of(it->a, rate) + 0.5), t1 = (int64_t)ms_of(it->b, rate);
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
        st == TRANSCRIBE_ERR_ABORTED) {
        tr_result_join_piece(r, j, src, t0, t1);
    }
    tr_result_add_piece(r, t0, t1, it->end_kind, st);
}

/* The scratch state of one split run. */
typedef struct chunk_run {
    piece_list l;
    tr_result *scratch; /* one per row of a group, and one for a row run again alone */
    const float **ptrs;
    int *lens;
    int group;
    tr_result_joiner joiner;
} chunk_run;

static void chunk_run_free(chunk_run *c) {
    for (int i = 0; c->scratch && i <= c->group; i++) tr_result_free(&c->scratch[i]);
    free(c->scratch);
    free(c->ptrs);
    free(c->lens);
    free(c->l.v);
    tr_result_joiner_free(&c->joiner);
}

/* Tells the progress callback how far the pieces are (never backwards). */
static void report(transcribe_progress_callback cb, void *ud, float *last, double done_samples,
                   int n) {
    float f = n > 0 ? (float)(done_samples / n) : 1.0f;
    if (f > 1.0f) f = 1.0f;
    if (!cb || f <= *last) return;
    *last = f;
    cb(f, ud);
}

transcribe_status tr_chunk_run(struct transcribe_session *s, const float *pcm, int n,
                               const struct transcribe_run_params *rp, const tr_chunk_plan *plan,
                               struct transcribe_audio_span *spans, int ns, tr_result *out) {
    int rate =
        s->model->desc.caps.native_sample_rate > 0 ? s->model->desc.caps.native_sample_rate : 16000;
    chunk_run c;
    memset(&c, 0, sizeof c);
    tr_result_joiner_init(&c.joiner);
    c.group = plan->batch > 0 ? plan->batch : 1;
    c.l = (piece_list){malloc((size_t)(ns > 0 ? ns : 1) * sizeof *c.l.v), ns, ns > 0 ? ns : 1};
    c.scratch = calloc((size_t)c.group + 1, sizeof *c.scratch);
    c.ptrs = calloc((size_t)c.group, sizeof *c.ptrs);
    c.lens = calloc((size_t)c.group, sizeof *c.lens);
    if (!c.l.v || !c.scratch || !c.ptrs || !c.lens) {
        transcribe_pause_split_free(spans);
        chunk_run_free(&c);
        TR_ERROR("transcribe_run: out of memory planning %d pieces", ns);
        return TRANSCRIBE_ERR_OOM;
    }
    for (int k = 0; k <= c.group; k++) tr_result_init(&c.scratch[k]);
    for (int k = 0; k < ns; k++)
        c.l.v[k] = (piece){spans[k].start, spans[k].end, spans[k].end_kind, 0};
    transcribe_pause_split_free(spans);
    piece_list *l = &c.l;
    out->chunked = true;

    /* Counted in samples: a sum of per-piece seconds drifts below the whole
     * (a "-0.0 s" of silence when the pieces cover the file). */
    int64_t speech = 0;
    for (int k = 0; k < l->n; k++) speech += l->v[k].b - l->v[k].a;
    double audio_s = (double)n / rate;
    double silence_s = speech < n ? (double)(n - speech) / rate : 0.0;
    if (l->n == 0) {
        TR_INFO("long audio: %.1f s, no speech found: nothing to run", audio_s);
    } else {
        TR_INFO("long audio: %.1f s in %d pieces cut at pauses (%.1f s left out as silence; "
                "target %.0f s, at most %.0f s; %s), %s",
                audio_s, l->n, silence_s, (double)plan->target_ms / 1000.0,
                (double)plan->max_ms / 1000.0, plan->why,
                c.group > 1 ? "batched" : "one call each");
    }
    /* A piece's own progress would run from 0 to 1 again for every piece:
     * the callback hears of the pieces instead. */
    transcribe_progress_callback progress = s->progress_cb;
    void *progress_ud = s->progress_user_data;
    s->progress_cb = NULL;
    s->progress_user_data = NULL;
    float last_progress = 0.0f;

    float tm[3] = {0, 0, 0};
    transcribe_status first_err = TRANSCRIBE_OK, st;
    bool kept_partial = false, aborted = false;
    tr_result *alone_r = &c.scratch[c.group];
    for (int i = 0; i < l->n && !aborted;) {
        int g = l->n - i < c.group ? l->n - i : c.group;
        for (int j = 0; j < g; j++) {
            c.ptrs[j] = pcm + l->v[i + j].a;
            c.lens[j] = (int)(l->v[i + j].b - l->v[i + j].a);
            TR_DEBUG("piece %d/%d: %.2f - %.2f s (%s)", i + j + 1, l->n,
                     ms_of(l->v[i + j].a, rate) / 1000.0, ms_of(l->v[i + j].b, rate) / 1000.0,
                     l->v[i + j].end_kind == TRANSCRIBE_SPAN_END_PAUSE    ? "ends in a pause"
                     : l->v[i + j].end_kind == TRANSCRIBE_SPAN_END_FORCED ? "forced cut"
                                                                          : "last");
        }
        if (g == 1) {
            st = run_one(s, c.ptrs[0], c.lens[0], rp, &c.scratch[0]);
        } else {
            st = run_group(s, (const float *const *)c.ptrs, c.lens, g, rp, c.scratch);
        }
        for (int j = 0; j < g; j++) add_timings(&c.scratch[j], tm);
        bool per_row = g > 1
                           ? (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED)
                           : (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
                              st == TRANSCRIBE_ERR_ABORTED || st == TRANSCRIBE_ERR_INPUT_TOO_LONG);
        if (!per_row) { /* the call failed as a whole: same parameters fail every piece */
            first_err = st;
            break;
        }
        int next = i + g;
        for (int j = 0; j < g; j++) {
            const piece *it = &l->v[i + j];
            const tr_result *src = &c.scratch[j];
            transcribe_status rs = src->status;
            double a_s = ms_of(it->a, rate) / 1000.0, b_s = ms_of(it->b, rate) / 1000.0;
            bool alone = g == 1; /* this piece ran as a single run */
            if (rs == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
                if (resplit(l, i + j, pcm, rate, rp)) {
                    TR_WARN("piece %.2f - %.2f s hit the output budget; split at its pauses and "
                            "run again",
                            a_s, b_s);
                    next = i + j; /* later rows of this batch are run again too */
                    break;
                }
                it = &l->v[i + j]; /* resplit may have moved the list */
                if (!alone) {      /* a batch row keeps no partial text: run it alone */
                    rs = run_one(s, c.ptrs[j], c.lens[j], rp, alone_r);
                    add_timings(alone_r, tm);
                    src = alone_r;
                    alone = true;
                    next = i + j + 1; /* the batch's later rows are gone: run them again */
                }
                if (rs == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
                    TR_WARN("piece %.2f - %.2f s: output truncated; its text is partial", a_s, b_s);
                    kept_partial = true;
                }
            }
            join(out, &c.joiner, src, it, rate, rs);
            if (rs == TRANSCRIBE_ERR_ABORTED) {
                aborted = true;
                break;
            }
            if (rs != TRANSCRIBE_OK && rs != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
                TR_ERROR("piece %.2f - %.2f s: %s; its text is missing", a_s, b_s,
                         transcribe_status_string(rs));
                if (first_err == TRANSCRIBE_OK) first_err = rs;
            }
            if (alone && g > 1) break;
        }
        i = next;
        if (i > 0) report(progress, progress_ud, &last_progress, (double)l->v[i - 1].b, n);
    }
    if (!aborted) report(progress, progress_ud, &last_progress, (double)n, n); /* the end */
    s->progress_cb = progress;
    s->progress_user_data = progress_ud;
    /* Pieces carry their place in time even where the family gives none. */
    if (out->ts_kind == TRANSCRIBE_TIMESTAMPS_NONE && out->n_segs > 0 &&
        rp->timestamps != TRANSCRIBE_TIMESTAMPS_NONE) {
        out->ts_kind = TRANSCRIBE_TIMESTAMPS_SEGMENT;
    }
    tr_result_joiner_finish(out, &c.joiner);
    tr_result_clamp(out, ((int64_t)n * 1000 + rate / 2) / rate);
    out->mel_ms = tm[0], out->encode_ms = tm[1], out->decode_ms = tm[2];
    chunk_run_free(&c);
    if (out->oom) {
        TR_ERROR("transcribe_run: out of memory joining the pieces");
        if (first_err == TRANSCRIBE_OK) first_err = TRANSCRIBE_ERR_OOM;
    }
    if (aborted) return TRANSCRIBE_ERR_ABORTED;
    if (first_err != TRANSCRIBE_OK) return first_err;
    return kept_partial ? TRANSCRIBE_ERR_OUTPUT_TRUNCATED : TRANSCRIBE_OK;
}
