/* Long audio: split a file at pauses (transcribe_pause_split), transcribe
 * the pieces and stitch them into one result on the file's clock.
 *
 * When: families that decode text with a fixed output budget and have no
 * long-form mode (Qwen3-ASR, Granite Speech, MOSS: about 256 tokens, a
 * minute of speech) are split above one piece's length; families with their
 * own long-form path (Whisper's 30 s windows, Parakeet's overlapping
 * windows) and families with a stated input limit (Canary) only above that
 * limit; a family that states neither is split above one piece's length. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Families with a fixed output budget and no long-form mode, which also
 * decode a batch of utterances together (run_batch is faster there than
 * one call per piece). */
static const char *const k_budget_archs[] = {"qwen3_asr", "granite_speech", "moss"};

#define BATCH_PIECES 4 /* pieces per run_batch call where the family batches */
#define MAX_RESPLIT  3 /* a truncated piece is halved at most this often */

static bool budget_arch(const char *arch) {
    for (size_t i = 0; i < sizeof k_budget_archs / sizeof k_budget_archs[0]; i++) {
        if (arch && strcmp(arch, k_budget_archs[i]) == 0) return true;
    }
    return false;
}

cli_chunk_plan cli_chunk_rule(cli_chunk_mode mode, int chunk_max_s, const char *arch,
                              bool long_form, int64_t limit_ms, int64_t duration_ms) {
    cli_chunk_plan p;
    memset(&p, 0, sizeof p);
    int64_t limit = limit_ms > 0 ? limit_ms : 0;
    p.max_ms = (int64_t)(chunk_max_s > 0 ? chunk_max_s : CLI_CHUNK_MAX_S) * 1000;
    if (limit > 0 && p.max_ms > limit * 9 / 10) p.max_ms = limit * 9 / 10; /* margin under it */
    if (p.max_ms < 2000) p.max_ms = 2000;
    p.target_ms = p.max_ms * 2 / 3;
    switch (mode) {
    case CLI_CHUNK_OFF:
        return p;
    case CLI_CHUNK_ON:
        p.split = true;
        snprintf(p.why, sizeof p.why, "--chunk on");
        return p;
    case CLI_CHUNK_AUTO:
        break;
    }
    if (limit > 0 && duration_ms > limit) {
        p.split = true;
        snprintf(p.why, sizeof p.why, "longer than the model's %.0f s input limit",
                 (double)limit / 1000.0);
    } else if (!long_form && budget_arch(arch) && duration_ms > p.max_ms) {
        p.split = true;
        snprintf(p.why, sizeof p.why, "%s has a fixed output budget and no long-form mode", arch);
    } else if (!long_form && limit == 0 && duration_ms > p.max_ms) {
        p.split = true;
        snprintf(p.why, sizeof p.why, "%s states no long-form mode and no input limit",
                 arch ? arch : "the model");
    }
    return p;
}

cli_chunk_plan cli_chunk_decide(const cli_opts *o, const struct transcribe_session *s,
                                int64_t duration_ms) {
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    transcribe_model_get_capabilities(m, &caps);
    struct transcribe_session_limits lim;
    transcribe_session_limits_init(&lim);
    int64_t limit = caps.max_audio_ms > 0 ? caps.max_audio_ms : 0;
    if (transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK && lim.effective_max_audio_ms > 0) {
        limit = lim.effective_max_audio_ms; /* n_ctx can lower it */
    }
    return cli_chunk_rule(o->chunk, o->chunk_max_s, transcribe_model_arch_string(m),
                          transcribe_model_supports(m, TRANSCRIBE_FEATURE_LONG_FORM), limit,
                          duration_ms);
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

static void add_timings(const struct transcribe_session *s, double *t) {
    struct transcribe_timings tm;
    transcribe_timings_init(&tm);
    if (transcribe_get_timings(s, &tm) != TRANSCRIBE_OK) return;
    t[0] += tm.mel_ms, t[1] += tm.encode_ms, t[2] += tm.decode_ms;
}

/* Appends the result of piece it (batch row i, or the single run if i < 0). */
static void stitch(cli_result *out, const struct transcribe_session *s, int i, const piece *it,
                   int rate, transcribe_status st) {
    int64_t t0 = (int64_t)(ms_of(it->a, rate) + 0.5), t1 = (int64_t)ms_of(it->b, rate);
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
        st == TRANSCRIBE_ERR_ABORTED) {
        cli_result_append(out, s, i, true, t0, t0, t1);
    }
    cli_result_add_chunk(out, t0, t1, it->end_kind, st);
}

transcribe_status cli_run_chunked(const cli_opts *o, struct transcribe_session *s,
                                  const struct transcribe_run_params *rp, const float *pcm, int n,
                                  int rate, const cli_chunk_plan *plan, volatile double *done_s,
                                  cli_result *out) {
    struct transcribe_pause_split_params sp;
    transcribe_pause_split_params_init(&sp);
    sp.target_ms = plan->target_ms;
    sp.max_ms = plan->max_ms;
    sp.vad_model = rp->vad_model; /* --vad: cut at the VAD's pauses */
    sp.vad_params = rp->vad_params;
    struct transcribe_audio_span *spans = NULL;
    int ns = 0;
    transcribe_status st = transcribe_pause_split(pcm, n, rate, &sp, &spans, &ns);
    if (st != TRANSCRIBE_OK) return st;
    piece_list l = {malloc((size_t)(ns > 0 ? ns : 1) * sizeof *l.v), ns, ns > 0 ? ns : 1};
    if (!l.v) {
        transcribe_pause_split_free(spans);
        return TRANSCRIBE_ERR_OOM;
    }
    for (int k = 0; k < ns; k++)
        l.v[k] = (piece){spans[k].start, spans[k].end, spans[k].end_kind, 0};
    transcribe_pause_split_free(spans);

    const char *arch = transcribe_model_arch_string(transcribe_get_model(s));
    int group = o->batch_size > 0 ? o->batch_size : budget_arch(arch) ? BATCH_PIECES : 1;
    double audio_s = (double)n / rate, speech_s = 0;
    for (int k = 0; k < l.n; k++) speech_s += (double)(l.v[k].b - l.v[k].a) / rate;
    out->chunked = true;
    if (l.n == 0) {
        cli_log(TRANSCRIBE_LOG_LEVEL_INFO, "long audio: %.1f s, no speech found: nothing to run",
                audio_s);
    } else {
        cli_log(TRANSCRIBE_LOG_LEVEL_INFO,
                "long audio: %.1f s in %d pieces cut at pauses (%.1f s left out as silence; "
                "target %.0f s, at most %.0f s; %s), %s",
                audio_s, l.n, audio_s - speech_s, (double)plan->target_ms / 1000.0,
                (double)plan->max_ms / 1000.0, plan->why, group > 1 ? "batched" : "one call each");
    }

    double tm[3] = {0, 0, 0};
    transcribe_status first_err = TRANSCRIBE_OK;
    bool kept_partial = false, aborted = false;
    const float **ptrs = calloc((size_t)group, sizeof *ptrs);
    int *lens = calloc((size_t)group, sizeof *lens);
    if (!ptrs || !lens) first_err = TRANSCRIBE_ERR_OOM;
    for (int i = 0; i < l.n && first_err != TRANSCRIBE_ERR_OOM && !aborted;) {
        int g = l.n - i < group ? l.n - i : group;
        for (int j = 0; j < g; j++) {
            ptrs[j] = pcm + l.v[i + j].a;
            lens[j] = (int)(l.v[i + j].b - l.v[i + j].a);
        }
        for (int j = 0; j < g; j++) {
            cli_log(TRANSCRIBE_LOG_LEVEL_DEBUG, "piece %d/%d: %.2f - %.2f s (%s)", i + j + 1, l.n,
                    ms_of(l.v[i + j].a, rate) / 1000.0, ms_of(l.v[i + j].b, rate) / 1000.0,
                    l.v[i + j].end_kind == TRANSCRIBE_SPAN_END_PAUSE    ? "ends in a pause"
                    : l.v[i + j].end_kind == TRANSCRIBE_SPAN_END_FORCED ? "forced cut"
                                                                        : "last");
        }
        st = g == 1 ? transcribe_run(s, ptrs[0], lens[0], rp)
                    : transcribe_run_batch(s, (const float *const *)ptrs, lens, g, rp);
        add_timings(s, tm);
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
            const piece *it = &l.v[i + j];
            transcribe_status rs = g == 1 ? st : transcribe_batch_status(s, j);
            double a_s = ms_of(it->a, rate) / 1000.0, b_s = ms_of(it->b, rate) / 1000.0;
            bool alone = g == 1; /* the session holds this piece as its single run */
            if (rs == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
                if (resplit(&l, i + j, pcm, rate, rp)) {
                    cli_log(TRANSCRIBE_LOG_LEVEL_WARN,
                            "piece %.2f - %.2f s hit the output budget; split at its pauses and "
                            "run again",
                            a_s, b_s);
                    next = i + j; /* later rows of this batch are run again too */
                    break;
                }
                if (!alone) { /* a batch row keeps no partial text: run it alone */
                    rs = transcribe_run(s, ptrs[j], lens[j], rp);
                    add_timings(s, tm);
                    alone = true;
                    next = i + j + 1; /* the batch's later rows are gone: run them again */
                }
                if (rs == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
                    cli_log(TRANSCRIBE_LOG_LEVEL_WARN,
                            "piece %.2f - %.2f s: output truncated; its text is partial", a_s, b_s);
                    kept_partial = true;
                }
            }
            stitch(out, s, alone ? -1 : j, it, rate, rs);
            if (rs == TRANSCRIBE_ERR_ABORTED) {
                aborted = true;
                break;
            }
            if (rs != TRANSCRIBE_OK && rs != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
                cli_log(TRANSCRIBE_LOG_LEVEL_ERROR, "piece %.2f - %.2f s: %s; its text is missing",
                        a_s, b_s, transcribe_status_string(rs));
                if (first_err == TRANSCRIBE_OK) first_err = rs;
            }
            if (alone && g > 1) break;
        }
        i = next;
        if (done_s && i > 0) *done_s = ms_of(l.v[i - 1].b, rate) / 1000.0;
    }
    free(ptrs);
    free(lens);
    free(l.v);
    /* Pieces carry their place in time even where the family gives none. */
    if (out->kind == TRANSCRIBE_TIMESTAMPS_NONE && out->n_segs > 0 &&
        (!rp || rp->timestamps != TRANSCRIBE_TIMESTAMPS_NONE)) {
        out->kind = TRANSCRIBE_TIMESTAMPS_SEGMENT;
    }
    out->mel_ms = tm[0], out->encode_ms = tm[1], out->decode_ms = tm[2];
    if (out->oom && first_err == TRANSCRIBE_OK) first_err = TRANSCRIBE_ERR_OOM;
    if (aborted) return TRANSCRIBE_ERR_ABORTED;
    if (first_err != TRANSCRIBE_OK) return first_err;
    return kept_partial ? TRANSCRIBE_ERR_OUTPUT_TRUNCATED : TRANSCRIBE_OK;
}
