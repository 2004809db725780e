/* The output formats' entry points: checks the caller's parameters and
 * hands the session's result to src/output, which renders it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "output/output.h"
#include "util/log.h"

/* Smallest struct_size accepted: every field of the first version. */
#define TR_MIN_FORMAT_PARAMS                                                                       \
    (offsetof(struct transcribe_format_params, run_status) + sizeof(int32_t))

TRANSCRIBE_API void transcribe_format_params_init(struct transcribe_format_params *p) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->format = TRANSCRIBE_FORMAT_TXT;
    p->run_status = TRANSCRIBE_OK;
}

static transcribe_status check_params(const struct transcribe_format_params *p) {
    static const char *const where = "transcribe_format_result";
    if (p->format < TRANSCRIBE_FORMAT_TXT || p->format > TRANSCRIBE_FORMAT_VTT) {
        TR_ERROR("%s: format %d is not txt (0), json (1), srt (2) or vtt (3)", where, p->format);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (p->max_line_chars != 0 && (p->max_line_chars < 1 || p->max_line_chars > 1000)) {
        TR_ERROR("%s: max_line_chars %d outside 1..1000 (0: default)", where, p->max_line_chars);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (p->max_cue_ms != 0 && (p->max_cue_ms < 100 || p->max_cue_ms > 3600000)) {
        TR_ERROR("%s: max_cue_ms %d outside 100..3600000 (0: default)", where, p->max_cue_ms);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (!isfinite(p->duration_s) || p->duration_s < 0.0 || p->duration_s > 1e9) {
        TR_ERROR("%s: duration_s %g is not a length in seconds", where, p->duration_s);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (p->run_status < TRANSCRIBE_OK || p->run_status > TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
        TR_ERROR("%s: run_status %d is not a transcribe_status (0..%d)", where, p->run_status,
                 (int)TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

static const char *status_name(int st) {
    return transcribe_status_string(st);
}

TRANSCRIBE_API transcribe_status transcribe_format_result(
    const struct transcribe_session *session, int batch_index,
    const struct transcribe_format_params *params, char **out_text, size_t *out_len) {
    if (out_text) *out_text = NULL;
    if (out_len) *out_len = 0;
    if (!session || !out_text) {
        TR_ERROR("transcribe_format_result: %s is NULL", session ? "out_text" : "session");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_format_params p;
    transcribe_format_params_init(&p);
    if (params) {
        if (params->struct_size < TR_MIN_FORMAT_PARAMS) {
            TR_ERROR("transcribe_format_result: struct_size %llu < %zu",
                     (unsigned long long)params->struct_size, (size_t)TR_MIN_FORMAT_PARAMS);
            return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
        }
        /* a newer caller's longer struct: the fields known here */
        size_t n = params->struct_size < sizeof p ? (size_t)params->struct_size : sizeof p;
        memcpy(&p, params, n);
        p.struct_size = sizeof p;
    }
    transcribe_status st = check_params(&p);
    if (st != TRANSCRIBE_OK) return st;
    const tr_result *r = batch_index < 0 ? tr_session_result(session)
                                         : tr_session_batch_result(session, batch_index);
    if (batch_index >= 0 && !r) {
        TR_ERROR("transcribe_format_result: batch index %d out of range [0, %d)", batch_index,
                 session->n_results);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    /* the statuses after which a run leaves a result to print */
    transcribe_status run_st = (transcribe_status)p.run_status;
    bool printable = run_st == TRANSCRIBE_OK || run_st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
                     run_st == TRANSCRIBE_ERR_ABORTED;
    tr_output_opts o = {
        .format = (transcribe_output_format)p.format,
        .max_line_chars = p.max_line_chars,
        .max_cue_ms = p.max_cue_ms,
        .tokens = p.json_tokens,
        .header = p.txt_header,
        .duration_s = p.duration_s,
        .file = p.file,
        .model = p.model,
        .status = run_st,
        .truncated = printable && batch_index < 0 && session->truncated,
        .status_name = status_name,
    };
    tr_strbuf b;
    tr_strbuf_init(&b);
    if (!tr_output_render(printable ? r : NULL, &o, &b) ||
        !tr_strbuf_append(&b, "", 0)) { /* never NULL */
        tr_strbuf_free(&b);
        TR_ERROR("transcribe_format_result: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    *out_text = b.data;
    if (out_len) *out_len = b.len;
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API void transcribe_format_free(char *text) {
    free(text);
}
