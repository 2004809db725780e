/* Streaming state machine (c-api.md §14). The family maintains the raw
 * hypothesis in a tr_result; this file owns the lifecycle, revisions and
 * update reports (the commit policy is stream_commit.c's). */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "text/tokenizer.h"
#include "util/log.h"

static char *dup_or_null(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Back to IDLE with nothing committed; keeps allocated buffers. */
void tr_stream_clear(struct transcribe_session *s) {
    tr_stream_state *st = &s->stream;
    st->state = TRANSCRIBE_STREAM_IDLE;
    st->last_status = TRANSCRIBE_OK;
    st->revision = 0;
    tr_strbuf_clear(&st->committed);
    st->tentative_start = 0;
    tr_stream_forget_hypotheses(st);
    st->input_received_ms = st->samples_received = 0;
    st->audio_committed_ms = st->buffered_ms = 0;
    st->n_committed_segs = st->n_committed_words = st->n_committed_toks = 0;
    st->native_grows = false;
    st->native_counted = 0;
    st->native_bytes = 0;
    st->generic = false;
    tr_stream_window_clear(&st->win);
    transcribe_vad_free(st->vad);
    st->vad = NULL;
    st->vad_done = 0;
    st->vad_heard = -1;
}

void tr_stream_free(struct transcribe_session *s) {
    tr_stream_state *st = &s->stream;
    tr_stream_forget_hypotheses(st);
    tr_strbuf_free(&st->committed);
    free(st->language);
    free(st->target_language);
    free(st->ext_copy);
    st->language = st->target_language = NULL;
    st->ext_copy = NULL;
    tr_stream_window_free(&st->win);
    transcribe_vad_free(st->vad);
    st->vad = NULL;
}

/* ---- update reports ---- */

static transcribe_status prepare_update(struct transcribe_stream_update *u, const char *where) {
    if (!u) return TRANSCRIBE_OK;
    uint64_t sz = u->struct_size;
    if (sz < TR_MIN_STREAM_UPDATE) {
        TR_ERROR("%s: update struct_size %llu < %u", where, (unsigned long long)sz,
                 TR_MIN_STREAM_UPDATE);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    size_t n = sz < sizeof *u ? (size_t)sz : sizeof *u;
    memset((char *)u + sizeof sz, 0, n - sizeof sz);
    return TRANSCRIBE_OK;
}

static void write_update(const struct transcribe_session *s, struct transcribe_stream_update *u,
                         bool changed, bool committed_changed, bool tentative_changed,
                         bool is_final) {
    if (!u) return;
    const tr_stream_state *st = &s->stream;
    u->result_changed = changed;
    u->is_final = is_final;
    u->revision = st->revision;
    u->input_received_ms = st->input_received_ms;
    u->audio_committed_ms = (st->policy == TRANSCRIBE_STREAM_COMMIT_ON_FINALIZE && !is_final)
                                ? 0
                                : st->audio_committed_ms;
    u->buffered_ms = st->buffered_ms;
    if (u->struct_size >= offsetof(struct transcribe_stream_update, committed_changed) + 1) {
        u->committed_changed = committed_changed;
    }
    if (u->struct_size >= offsetof(struct transcribe_stream_update, tentative_changed) + 1) {
        u->tentative_changed = tentative_changed;
    }
}

static void init_sctx(struct transcribe_session *s, tr_stream_ctx *ctx) {
    memset(ctx, 0, sizeof *ctx);
    ctx->params = &s->stream.params;
    ctx->ext = (const struct transcribe_ext *)s->stream.ext_copy;
    ctx->pool = s->pool;
    ctx->abort_cb = s->abort_cb;
    ctx->abort_user_data = s->abort_user_data;
    ctx->result = &s->results[0];
    ctx->n_native_committed_toks = -1;
    ctx->agree_n = s->stream.agree_n;
}

static bool has_stream_hooks(const tr_family *f) {
    return f->stream_begin && f->stream_feed && f->stream_finalize;
}

bool tr_stream_is_native(const struct transcribe_model *m) {
    const tr_family *f = m->family;
    return has_stream_hooks(f) && (!f->stream_native || f->stream_native(m->fmodel));
}

/* A model streams natively (it says so in caps.supports_streaming and its
 * family's hooks take this file), or through the generic window driver on
 * its offline run path when the stream asks for that (window_fallback). */
static bool streams_natively(const struct transcribe_model *m) {
    return m->desc.caps.supports_streaming && tr_stream_is_native(m);
}

static transcribe_status not_streaming(const struct transcribe_model *m, const char *where) {
    if (m->desc.caps.supports_window_streaming) {
        TR_ERROR("%s: this %s model does not stream natively (set "
                 "stream_params.window_fallback to stream it through the window driver)",
                 where, m->arch);
    } else {
        TR_ERROR("%s: this %s model does not support streaming", where, m->arch);
    }
    return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
}

/* ---- entry points ---- */

/* What transcribe_stream_begin judges without its session: every public entry
 * answers these before it touches a handle, and never keeps their message on
 * the handle (last_error.c), for a call with a bad argument may hold no
 * session at all. Fills the caller's parameters, defaults filled in. */
static transcribe_status begin_args(const struct transcribe_session *session,
                                    const struct transcribe_run_params *run_params,
                                    const struct transcribe_stream_params *stream_params,
                                    struct transcribe_run_params *rp_out,
                                    struct transcribe_stream_params *sp_out) {
    const char *where = "transcribe_stream_begin";
    if (!session) {
        TR_ERROR("%s: session is NULL", where);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_run_params rp;
    transcribe_status st = tr_run_params_load(run_params, &rp, where);
    if (st != TRANSCRIBE_OK) return st;
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    if (stream_params) {
        uint64_t sz = stream_params->struct_size;
        if (sz < TR_MIN_STREAM_PARAMS) {
            TR_ERROR("%s: stream params struct_size %llu < %u", where, (unsigned long long)sz,
                     TR_MIN_STREAM_PARAMS);
            return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
        }
        sp.family = stream_params->family;
        if (sz >= offsetof(struct transcribe_stream_params, commit_policy) + 4) {
            sp.commit_policy = stream_params->commit_policy;
        }
        if (sz >= offsetof(struct transcribe_stream_params, stable_prefix_agreement_n) + 4) {
            sp.stable_prefix_agreement_n = stream_params->stable_prefix_agreement_n;
        }
        if (sz >= offsetof(struct transcribe_stream_params, window_fallback) + sizeof(bool)) {
            sp.window_fallback = stream_params->window_fallback;
        }
    }
    if ((int)sp.commit_policy < TRANSCRIBE_STREAM_COMMIT_AUTO ||
        (int)sp.commit_policy > TRANSCRIBE_STREAM_COMMIT_STABLE_PREFIX) {
        TR_ERROR("%s: invalid commit_policy %d", where, (int)sp.commit_policy);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (sp.stable_prefix_agreement_n > TR_STREAM_MAX_AGREE) {
        TR_ERROR("%s: stable_prefix_agreement_n %u > %d", where,
                 (unsigned)sp.stable_prefix_agreement_n, TR_STREAM_MAX_AGREE);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *rp_out = rp;
    *sp_out = sp;
    return TRANSCRIBE_OK;
}

static transcribe_status
transcribe_stream_begin_impl(struct transcribe_session *session,
                             const struct transcribe_run_params *run_params,
                             const struct transcribe_stream_params *stream_params) {
    const char *where = "transcribe_stream_begin";
    struct transcribe_run_params rp;
    struct transcribe_stream_params sp;
    transcribe_status st = begin_args(session, run_params, stream_params, &rp, &sp);
    if (st != TRANSCRIBE_OK) return st;
    if (session->stream.state == TRANSCRIBE_STREAM_ACTIVE) {
        TR_ERROR("%s: a stream is already active on this session", where);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const struct transcribe_model *m = session->model;
    /* The capability gate, then the caller's arguments, then whether the
     * family's hooks can stream this file (a file whose key claims
     * streaming its encoder cannot do is NOT_IMPLEMENTED after its
     * extension is checked, as in transcribe.cpp); each before any change. */
    const bool window_ok = sp.window_fallback && m->desc.caps.supports_window_streaming;
    if (!m->desc.caps.supports_streaming && !window_ok) return not_streaming(m, where);
    st = tr_validate_run_params(m, &rp, true);
    if (st != TRANSCRIBE_OK) return st;
    st = tr_validate_ext_ptr(m, sp.family, TRANSCRIBE_EXT_SLOT_STREAM, where);
    if (st != TRANSCRIBE_OK) return st;
    if (!streams_natively(m) && !window_ok) return not_streaming(m, where);
    /* A VAD stream commits at region ends through the generic driver,
     * whatever the family's own streaming (its hooks cannot commit at a
     * point of the caller's choosing). */
    bool native = streams_natively(m) && !rp.vad_model;
    if (native && m->family->validate_stream) {
        st = m->family->validate_stream(m->fmodel, sp.family);
        if (st != TRANSCRIBE_OK) {
            TR_ERROR("%s: %s rejected the stream extension: %s", where, m->arch,
                     transcribe_status_string(st));
            return st;
        }
    }
    if (!native && m->family->validate_run) {
        /* The generic driver decodes with run(): the family's own run checks
         * apply, before anything changes (run_params.family is not used). */
        struct transcribe_run_params vp = rp;
        vp.family = NULL;
        st = m->family->validate_run(m->fmodel, &vp);
        if (st != TRANSCRIBE_OK) {
            TR_ERROR("%s: %s rejected the run parameters: %s", where, m->arch,
                     transcribe_status_string(st));
            return st;
        }
    }
    struct transcribe_vad *vad = NULL;
    int64_t vad_hold = 0;
    if (rp.vad_model) {
        int rate = m->desc.caps.native_sample_rate > 0 ? m->desc.caps.native_sample_rate : 16000;
        st = transcribe_vad_init(rp.vad_model, rate, rp.vad_params, &vad);
        if (st != TRANSCRIBE_OK) {
            TR_ERROR("%s: VAD settings rejected: %s", where, transcribe_status_string(st));
            return st;
        }
        struct transcribe_vad_params vp; /* accepted by the detector: in range */
        transcribe_vad_params_init(&vp);
        if (rp.vad_params) {
            uint64_t k = rp.vad_params->struct_size; /* >= the minimum: init checked */
            memcpy(&vp, rp.vad_params, k < sizeof vp ? (size_t)k : sizeof vp);
        }
        /* The longest a closed region waits to be published, plus the
         * largest window and a feed piece of slack. */
        vad_hold =
            ((int64_t)vp.min_silence_ms + 2 * (int64_t)vp.speech_pad_ms + 200) * rate / 1000 + 1536;
    }
    /* Copy everything the stream keeps so the caller may free its params
     * (but for the vocabulary terms, read at every window decode). */
    char *lang = dup_or_null(rp.language), *tgt = dup_or_null(rp.target_language);
    void *ext = NULL;
    if (sp.family) {
        ext = malloc((size_t)sp.family->size);
        if (ext) memcpy(ext, sp.family, (size_t)sp.family->size);
    }
    if ((rp.language && !lang) || (rp.target_language && !tgt) || (sp.family && !ext)) {
        free(lang);
        free(tgt);
        free(ext);
        transcribe_vad_free(vad);
        TR_ERROR("%s: out of memory", where);
        return TRANSCRIBE_ERR_OOM;
    }
    tr_session_clear_results(session);
    tr_stream_clear(session);
    tr_stream_state *ss = &session->stream;
    free(ss->language);
    free(ss->target_language);
    free(ss->ext_copy);
    ss->language = lang;
    ss->target_language = tgt;
    ss->ext_copy = ext;
    ss->params = rp;
    ss->params.language = lang;
    ss->params.target_language = tgt;
    ss->params.family = NULL;    /* run_params.family is ignored by streams */
    ss->params.vad_model = NULL; /* the detector below holds the VAD settings */
    ss->params.vad_params = NULL;
    ss->vad = vad;
    ss->vad_hold = vad_hold;
    ss->policy = sp.commit_policy;
    ss->agree_n = sp.stable_prefix_agreement_n;
    ss->state = TRANSCRIBE_STREAM_ACTIVE;
    ss->generic = !native;
    session->n_results = 1; /* the live hypothesis is the session's result */
    tr_stream_ctx ctx;
    init_sctx(session, &ctx);
    tr_pool_take_failures(session->pool);
    st = native ? m->family->stream_begin(session->head.fsession, &ctx)
                : tr_stream_window_begin(session, &ctx);
    st = tr_session_kernel_status(session, st, where);
    if (st != TRANSCRIBE_OK) {
        ss->state = TRANSCRIBE_STREAM_FAILED;
        ss->last_status = st;
        TR_ERROR("%s: %s stream start failed: %s", where, m->arch, transcribe_status_string(st));
    }
    return st;
}

/* The public entry: transcribe_stream_begin_impl, with its error kept on the session
 * (last_error.c). */
TRANSCRIBE_API transcribe_status transcribe_stream_begin(
    struct transcribe_session *session, const struct transcribe_run_params *run_params,
    const struct transcribe_stream_params *stream_params) {
    struct transcribe_run_params rp;
    struct transcribe_stream_params sp;
    transcribe_status st = begin_args(session, run_params, stream_params, &rp, &sp);
    if (st != TRANSCRIBE_OK) return st;
    char msg[TR_LAST_ERROR_CAP];
    tr_log_capture enclosing = tr_log_capture_begin(msg, sizeof msg);
    st = transcribe_stream_begin_impl(session, run_params, stream_params);
    tr_log_capture_end(enclosing);
    tr_api_note_session_error(session, st, msg);
    return st;
}

/* Shared tail of feed/finalize: records family outputs and the outcome. */
static transcribe_status after_call(struct transcribe_session *s, tr_stream_ctx *ctx,
                                    transcribe_status st, const char *before_full,
                                    size_t before_committed, struct transcribe_stream_update *u,
                                    bool final, const char *where) {
    tr_stream_state *ss = &s->stream;
    tr_result *r = &s->results[0];
    if (!r->has_full_text) tr_result_build_full_text(r);
    /* Segments a stream closed sit on the stream's clock even where the
     * family times nothing finer: SEGMENT, as a split offline run's pieces
     * (chunk.c), so a long stream's subtitles get a cue per segment; one
     * segment stays as the family reported it (docs/c-api.md §14.2). */
    if (r->ts_kind == TRANSCRIBE_TIMESTAMPS_NONE && r->n_segs > 1 && ctx->params &&
        ctx->params->timestamps != TRANSCRIBE_TIMESTAMPS_NONE)
        tr_result_set_timestamp_kind(r, TRANSCRIBE_TIMESTAMPS_SEGMENT);
    r->status = st;
    s->mel_ms = r->mel_ms;
    s->encode_ms = r->encode_ms;
    s->decode_ms = r->decode_ms;
    ss->audio_committed_ms = ctx->audio_committed_ms;
    ss->buffered_ms = ctx->buffered_ms;
    ss->native_grows = !ss->generic && !ss->vad && ctx->grows_only;
    if (ctx->truncated && !s->truncated) {
        s->truncated = true;
        TR_WARN("%s: output truncated (the model's context/generation cap was reached)", where);
    }
    const char *full = tr_result_full_text(r);
    bool committed_changed = false;
    if (st == TRANSCRIBE_OK) {
        if (final) {
            tr_stream_commit_final(s, full);
            ss->state = TRANSCRIBE_STREAM_FINISHED;
        } else {
            /* The generic driver commits after each of its window decodes. */
            if (!ss->generic) tr_stream_commit(s, full, ctx->n_native_committed_toks);
            size_t c = ss->committed.len;
            ss->tentative_start = c <= strlen(full) ? c : strlen(full);
        }
        committed_changed = ss->committed.len != before_committed;
    } else {
        if (st == TRANSCRIBE_ERR_ABORTED) s->aborted = true;
        ss->state = TRANSCRIBE_STREAM_FAILED;
        ss->last_status = st;
        TR_ERROR("%s: %s", where, transcribe_status_string(st));
    }
    bool text_changed = strcmp(before_full, full) != 0;
    bool changed = text_changed || committed_changed || final || st != TRANSCRIBE_OK;
    if (changed) ss->revision++;
    write_update(s, u, changed, committed_changed, text_changed || committed_changed, final);
    return st;
}

/* What transcribe_stream_feed judges without its session (see begin_args). */
static transcribe_status feed_args(const struct transcribe_session *session, const float *pcm,
                                   int n_samples, struct transcribe_stream_update *update) {
    const char *where = "transcribe_stream_feed";
    transcribe_status st = prepare_update(update, where);
    if (st != TRANSCRIBE_OK) return st;
    if (!session || !pcm || n_samples <= 0) {
        TR_ERROR("%s: %s", where,
                 !session ? "session is NULL"
                 : !pcm   ? "pcm is NULL"
                          : "n_samples must be > 0");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status transcribe_stream_feed_impl(struct transcribe_session *session,
                                                     const float *pcm, int n_samples,
                                                     struct transcribe_stream_update *update) {
    const char *where = "transcribe_stream_feed";
    transcribe_status st = feed_args(session, pcm, n_samples, update);
    if (st != TRANSCRIBE_OK) return st;
    if (session->stream.state != TRANSCRIBE_STREAM_ACTIVE) {
        TR_ERROR("%s: no active stream (call transcribe_stream_begin first)", where);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_stream_state *ss = &session->stream;
    ss->samples_received += n_samples;
    int rate = session->model->desc.caps.native_sample_rate > 0
                   ? session->model->desc.caps.native_sample_rate
                   : 16000;
    ss->input_received_ms = ss->samples_received * 1000 / rate;
    char *before = dup_or_null(tr_result_full_text(tr_session_result(session)));
    if (!before) {
        TR_ERROR("%s: out of memory", where);
        return TRANSCRIBE_ERR_OOM;
    }
    size_t before_committed = ss->committed.len;
    tr_stream_ctx ctx;
    init_sctx(session, &ctx);
    tr_pool_take_failures(session->pool);
    st = ss->vad ? tr_stream_vad_feed(session, pcm, n_samples, &ctx)
         : ss->generic
             ? tr_stream_window_feed(session, pcm, n_samples, &ctx)
             : session->model->family->stream_feed(session->head.fsession, pcm, n_samples, &ctx);
    st = tr_session_kernel_status(session, st, where);
    st = after_call(session, &ctx, st, before, before_committed, update, false, where);
    free(before);
    return st;
}

/* The public entry: transcribe_stream_feed_impl, with its error kept on the session (last_error.c).
 */
TRANSCRIBE_API transcribe_status transcribe_stream_feed(struct transcribe_session *session,
                                                        const float *pcm, int n_samples,
                                                        struct transcribe_stream_update *update) {
    transcribe_status st = feed_args(session, pcm, n_samples, update);
    if (st != TRANSCRIBE_OK) return st;
    char msg[TR_LAST_ERROR_CAP];
    tr_log_capture enclosing = tr_log_capture_begin(msg, sizeof msg);
    st = transcribe_stream_feed_impl(session, pcm, n_samples, update);
    tr_log_capture_end(enclosing);
    tr_api_note_session_error(session, st, msg);
    return st;
}

/* What transcribe_stream_finalize judges without its session (see begin_args). */
static transcribe_status finalize_args(const struct transcribe_session *session,
                                       struct transcribe_stream_update *update) {
    const char *where = "transcribe_stream_finalize";
    transcribe_status st = prepare_update(update, where);
    if (st != TRANSCRIBE_OK) return st;
    if (update) update->is_final = true;
    if (!session) {
        TR_ERROR("%s: session is NULL", where);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status transcribe_stream_finalize_impl(struct transcribe_session *session,
                                                         struct transcribe_stream_update *update) {
    const char *where = "transcribe_stream_finalize";
    transcribe_status st = finalize_args(session, update);
    if (st != TRANSCRIBE_OK) return st;
    if (session->stream.state != TRANSCRIBE_STREAM_ACTIVE) {
        TR_ERROR("%s: no active stream", where);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    char *before = dup_or_null(tr_result_full_text(tr_session_result(session)));
    if (!before) {
        TR_ERROR("%s: out of memory", where);
        return TRANSCRIBE_ERR_OOM;
    }
    size_t before_committed = session->stream.committed.len;
    tr_stream_ctx ctx;
    init_sctx(session, &ctx);
    tr_pool_take_failures(session->pool);
    st = session->stream.vad ? tr_stream_vad_finalize(session, &ctx)
         : session->stream.generic
             ? tr_stream_window_finalize(session, &ctx)
             : session->model->family->stream_finalize(session->head.fsession, &ctx);
    st = tr_session_kernel_status(session, st, where);
    st = after_call(session, &ctx, st, before, before_committed, update, true, where);
    free(before);
    return st;
}

/* The public entry: transcribe_stream_finalize_impl, with its error kept on the session
 * (last_error.c). */
TRANSCRIBE_API transcribe_status transcribe_stream_finalize(
    struct transcribe_session *session, struct transcribe_stream_update *update) {
    transcribe_status st = finalize_args(session, update);
    if (st != TRANSCRIBE_OK) return st;
    char msg[TR_LAST_ERROR_CAP];
    tr_log_capture enclosing = tr_log_capture_begin(msg, sizeof msg);
    st = transcribe_stream_finalize_impl(session, update);
    tr_log_capture_end(enclosing);
    tr_api_note_session_error(session, st, msg);
    return st;
}

TRANSCRIBE_API void transcribe_stream_reset(struct transcribe_session *session) {
    if (!session) return;
    if (!session->stream.generic && session->model->family->stream_reset)
        session->model->family->stream_reset(session->head.fsession);
    bool truncated = session->truncated; /* reset does not clear was_truncated */
    tr_session_clear_results(session);
    session->truncated = truncated;
    tr_stream_clear(session);
}

TRANSCRIBE_API transcribe_status transcribe_stream_get_text(
    const struct transcribe_session *session, struct transcribe_stream_text *out) {
    if (!out) {
        TR_ERROR("transcribe_stream_get_text: out is NULL");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (out->struct_size < TR_MIN_STREAM_TEXT) {
        TR_ERROR("transcribe_stream_get_text: struct_size %llu < %u",
                 (unsigned long long)out->struct_size, TR_MIN_STREAM_TEXT);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    struct transcribe_stream_text t = {0};
    t.struct_size = sizeof t;
    t.full_text = t.committed_text = t.tentative_text = "";
    const tr_result *r = tr_session_result(session);
    if (r) {
        const tr_stream_state *ss = &session->stream;
        t.full_text = tr_result_full_text(r);
        t.full_text_bytes = strlen(t.full_text);
        bool streamed = ss->state != TRANSCRIBE_STREAM_IDLE;
        if (streamed) {
            t.committed_text = tr_strbuf_cstr(&ss->committed);
            t.committed_text_bytes = ss->committed.len;
            uint64_t start = ss->tentative_start;
            if (start > t.full_text_bytes) start = t.full_text_bytes;
            t.raw_tentative_start_bytes = start;
            t.tentative_text = t.full_text + start;
            t.tentative_text_bytes = t.full_text_bytes - start;
        } else {
            /* An offline result is complete: everything counts as committed. */
            t.committed_text = t.full_text;
            t.committed_text_bytes = t.full_text_bytes;
            t.raw_tentative_start_bytes = t.full_text_bytes;
            t.tentative_text = t.full_text + t.full_text_bytes;
        }
    }
    tr_copy_out(out, &t, sizeof t);
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API enum transcribe_stream_state
transcribe_stream_get_state(const struct transcribe_session *session) {
    return session ? session->stream.state : TRANSCRIBE_STREAM_IDLE;
}

TRANSCRIBE_API int transcribe_stream_revision(const struct transcribe_session *session) {
    return session ? session->stream.revision : 0;
}

TRANSCRIBE_API int
transcribe_stream_n_committed_segments(const struct transcribe_session *session) {
    return session ? session->stream.n_committed_segs : 0;
}

TRANSCRIBE_API int transcribe_stream_n_committed_words(const struct transcribe_session *session) {
    return session ? session->stream.n_committed_words : 0;
}

TRANSCRIBE_API int transcribe_stream_n_committed_tokens(const struct transcribe_session *session) {
    return session ? session->stream.n_committed_toks : 0;
}

TRANSCRIBE_API transcribe_status
transcribe_stream_last_status(const struct transcribe_session *session) {
    return session ? session->stream.last_status : TRANSCRIBE_OK;
}
