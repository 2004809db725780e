/* Sessions (docs/c-api.md §9), limits (§13.2), timings (§15), cancellation
 * flags (§12). A session borrows its model unless transcribe_open made it. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/status.h"
#include "util/log.h"

static void session_destroy(struct transcribe_session *s) {
    if (!s) return;
    tr_stream_free(s);
    tr_diarize_release(s);
    if (s->head.fsession && s->model->family->session_free)
        s->model->family->session_free(s->head.fsession);
    for (int i = 0; i < s->cap_results; i++) tr_result_free(&s->results[i]);
    free(s->results);
    tr_pool_free(s->pool);
    struct transcribe_model *owned = s->owns_model ? s->model : NULL;
    free(s);
    transcribe_model_free(owned); /* after the session, which borrowed it */
}

/* What transcribe_session_init judges without its model: every public entry
 * answers these before it touches a handle, and never keeps their message on
 * the handle (last_error.c), for a call with a bad argument may hold no model
 * at all. Fills *out with the caller's parameters, defaults filled in. */
static transcribe_status session_args(const struct transcribe_model *model,
                                      const struct transcribe_session_params *params,
                                      struct transcribe_session **out_session,
                                      struct transcribe_session_params *out) {
    if (out_session) *out_session = NULL;
    if (!out_session || !model) {
        TR_ERROR("transcribe_session_init: %s is NULL", model ? "out_session" : "model");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    if (params) {
        if (params->struct_size < TR_MIN_SESSION_PARAMS) {
            TR_ERROR("transcribe_session_init: session params struct_size %llu < %u",
                     (unsigned long long)params->struct_size, TR_MIN_SESSION_PARAMS);
            return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
        }
        sp.n_threads = params->n_threads;
        sp.kv_type = params->kv_type;
        /* n_ctx is an optional trailing field: read only when covered. */
        if (params->struct_size >=
            offsetof(struct transcribe_session_params, n_ctx) + sizeof params->n_ctx) {
            sp.n_ctx = params->n_ctx;
        }
    }
    if (sp.n_threads < 0) {
        TR_ERROR("transcribe_session_init: n_threads %d < 0", sp.n_threads);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if ((int)sp.kv_type < TRANSCRIBE_KV_TYPE_AUTO || (int)sp.kv_type > TRANSCRIBE_KV_TYPE_F16) {
        TR_ERROR("transcribe_session_init: invalid kv_type %d", (int)sp.kv_type);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (sp.n_ctx < 0) {
        TR_ERROR("transcribe_session_init: n_ctx %d < 0", (int)sp.n_ctx);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *out = sp;
    return TRANSCRIBE_OK;
}

static transcribe_status
transcribe_session_init_impl(struct transcribe_model *model,
                             const struct transcribe_session_params *params,
                             struct transcribe_session **out_session) {
    struct transcribe_session_params sp;
    transcribe_status st = session_args(model, params, out_session, &sp);
    if (st != TRANSCRIBE_OK) return st;
    if (!model->family->session_init || !model->family->run) {
        TR_ERROR("transcribe_session_init: the %s family cannot create sessions", model->arch);
        return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
    }
    struct transcribe_session *s = calloc(1, sizeof *s);
    if (!s) {
        TR_ERROR("transcribe_session_init: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    s->model = model;
    s->cfg.n_threads = sp.n_threads > 0 ? sp.n_threads : tr_default_n_threads();
    if (s->cfg.n_threads < 1) s->cfg.n_threads = 1;
    if (s->cfg.n_threads > tr_max_n_threads()) {
        TR_WARN("transcribe_session_init: n_threads %d is more than 4x the %d CPUs; using %d",
                s->cfg.n_threads, tr_max_n_threads() / 4, tr_max_n_threads());
        s->cfg.n_threads = tr_max_n_threads();
    }
    s->cfg.kv_type = sp.kv_type;
    s->cfg.n_ctx = sp.n_ctx;
    s->pool = tr_pool_create(s->cfg.n_threads);
    if (!s->pool) {
        TR_ERROR("transcribe_session_init: cannot create a pool of %d threads", s->cfg.n_threads);
        free(s);
        return TRANSCRIBE_ERR_OOM;
    }
    s->cfg.pool = s->pool;
    tr_strbuf_init(&s->stream.committed);
    if (!tr_session_reserve_results(s, 1)) {
        TR_ERROR("transcribe_session_init: out of memory");
        session_destroy(s);
        return TRANSCRIBE_ERR_OOM;
    }
    s->head.family = model->family;
    st = model->family->session_init(model->fmodel, &s->cfg, &s->head.fsession);
    if (st != TRANSCRIBE_OK) {
        s->head.fsession = NULL;
        TR_ERROR("transcribe_session_init: %s session failed: %s", model->arch,
                 tr_status_string(st));
        session_destroy(s);
        return st;
    }
    *out_session = s;
    return TRANSCRIBE_OK;
}

/* The public entry: transcribe_session_init_impl, with its error kept on the model (last_error.c).
 */
TRANSCRIBE_API transcribe_status transcribe_session_init(
    struct transcribe_model *model, const struct transcribe_session_params *params,
    struct transcribe_session **out_session) {
    struct transcribe_session_params sp;
    transcribe_status st = session_args(model, params, out_session, &sp);
    if (st != TRANSCRIBE_OK) return st;
    char msg[TR_LAST_ERROR_CAP];
    tr_log_capture enclosing = tr_log_capture_begin(msg, sizeof msg);
    st = transcribe_session_init_impl(model, params, out_session);
    tr_log_capture_end(enclosing);
    tr_api_note_model_error(model, st, msg);
    return st;
}

TRANSCRIBE_API void transcribe_session_free(struct transcribe_session *session) {
    session_destroy(session);
}

TRANSCRIBE_API transcribe_status
transcribe_open(const char *path, const struct transcribe_model_load_params *load_params,
                const struct transcribe_session_params *session_params,
                struct transcribe_session **out_session) {
    if (out_session) *out_session = NULL;
    if (!out_session) {
        TR_ERROR("transcribe_open: out_session is NULL");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_model *m = NULL;
    transcribe_status st = transcribe_model_load_file(path, load_params, &m);
    if (st != TRANSCRIBE_OK) return st;
    st = transcribe_session_init(m, session_params, out_session);
    if (st != TRANSCRIBE_OK) {
        transcribe_model_free(m);
        return st;
    }
    (*out_session)->owns_model = true;
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API void transcribe_close(struct transcribe_session *session) {
    session_destroy(session);
}

TRANSCRIBE_API const struct transcribe_model *
transcribe_get_model(const struct transcribe_session *session) {
    return session ? session->model : NULL;
}

/* ---- cancellation and outcome flags ---- */

TRANSCRIBE_API void transcribe_set_abort_callback(struct transcribe_session *session,
                                                  transcribe_abort_callback cb, void *user_data) {
    if (!session) return;
    session->abort_cb = cb;
    session->abort_user_data = cb ? user_data : NULL;
}

TRANSCRIBE_API void transcribe_set_progress_callback(struct transcribe_session *session,
                                                     transcribe_progress_callback cb,
                                                     void *user_data) {
    if (!session) return;
    session->progress_cb = cb;
    session->progress_user_data = cb ? user_data : NULL;
}

TRANSCRIBE_API bool transcribe_was_aborted(const struct transcribe_session *session) {
    return session && session->aborted;
}

TRANSCRIBE_API bool transcribe_was_truncated(const struct transcribe_session *session) {
    return session && session->truncated;
}

/* ---- timings ---- */

TRANSCRIBE_API transcribe_status transcribe_get_timings(const struct transcribe_session *session,
                                                        struct transcribe_timings *out_timings) {
    if (!session || !out_timings) {
        TR_ERROR("transcribe_get_timings: %s is NULL", session ? "out_timings" : "session");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (out_timings->struct_size < TR_MIN_TIMINGS) {
        TR_ERROR("transcribe_get_timings: struct_size %llu < %u",
                 (unsigned long long)out_timings->struct_size, TR_MIN_TIMINGS);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    struct transcribe_timings t = {sizeof t, session->model->load_ms, session->mel_ms,
                                   session->encode_ms, session->decode_ms};
    tr_copy_out(out_timings, &t, sizeof t);
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API void transcribe_print_timings(const struct transcribe_session *session) {
    if (!session) return;
    TR_INFO("timings: load=%.2f ms  mel=%.2f ms  encode=%.2f ms  decode=%.2f ms",
            (double)session->model->load_ms, (double)session->mel_ms, (double)session->encode_ms,
            (double)session->decode_ms);
}

TRANSCRIBE_API void transcribe_reset_timings(struct transcribe_session *session) {
    if (!session) return;
    session->mel_ms = session->encode_ms = session->decode_ms = 0.0f;
}
