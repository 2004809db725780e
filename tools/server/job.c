/* One transcription request: the form's fields checked and mapped onto run
 * parameters, the upload decoded, one run on a pooled session, and the
 * reply in the requested format. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "lang_code.h"
#include "reason.h"
#include "server.h"

bool srv_request_should_stop(srv_request *rq) {
    if (rq->client_gone) return true;
    double now = srv_now();
    if (now > rq->deadline) return true;
    if (now - rq->last_poll < 0.02) return false;
    rq->last_poll = now;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    /* the request has been read whole: a readable socket with nothing in it
     * (EOF) or a hang-up means the client closed its end */
    struct pollfd pfd = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
    if (poll(&pfd, 1, 0) > 0) {
        if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) {
            rq->client_gone = true;
        } else if (pfd.revents & POLLIN) {
            char c;
            ssize_t n = recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
            if (n == 0) rq->client_gone = true;
        }
    }
    return rq->client_gone;
}

static bool abort_cb(void *user) {
    srv_request *rq = user;
    return atomic_load(&rq->srv->closing) == 2 || srv_request_should_stop(rq);
}

/* UTF-8 well-formedness (no overlongs, no surrogates, <= U+10FFFF). */
static bool utf8_valid(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        int n = c < 0x80             ? 0
                : (c & 0xE0) == 0xC0 ? 1
                : (c & 0xF0) == 0xE0 ? 2
                : (c & 0xF8) == 0xF0 ? 3
                                     : -1;
        if (n < 0 || (n == 1 && c < 0xC2) || c > 0xF4) return false;
        unsigned cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
        for (int k = 1; k <= n; k++) {
            if ((p[k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (p[k] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
        p += n + 1;
    }
    return true;
}

static bool parse_bool(const char *v, bool *out) {
    if (!v) return true;
    if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "True")) {
        *out = true;
        return true;
    }
    if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "False") || !*v) {
        *out = false;
        return true;
    }
    return false;
}

static bool parse_format(const char *v, srv_format *out) {
    static const char *const names[] = {"json", "text", "srt", "vtt", "verbose_json"};
    if (!v || !*v) {
        *out = SRV_FMT_JSON;
        return true;
    }
    for (int i = 0; i < 5; i++) {
        if (!strcmp(v, names[i])) {
            *out = (srv_format)i;
            return true;
        }
    }
    return false;
}

/* The checked request: everything the run and the reply need. */
typedef struct job {
    srv_model *model;
    srv_format fmt;
    bool stream, words, vad;
    bool diarize_given, diarize; /* the diarize field, when sent */
    bool temperature_given;
    float temperature;
    struct transcribe_run_params rp;
    struct transcribe_whisper_run_ext wx;
} job;

/* Fields -> job; false with rq->reply set on a bad field. */
static bool check_form(srv_request *rq, job *j) {
    srv_form *fm = &rq->form;
    const char *names[] = {"model",           "language", "prompt", "temperature",
                           "response_format", "stream",   "vad",    "diarize"};
    char *vals[] = {fm->model,           fm->language, fm->prompt, fm->temperature,
                    fm->response_format, fm->stream,   fm->vad,    fm->diarize};
    for (int i = 0; i < 8; i++) {
        if (vals[i] && !utf8_valid(vals[i])) {
            srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, names[i], "invalid_utf8",
                            "'%s' is not valid UTF-8", names[i]);
            return false;
        }
    }
    if (!fm->have_file) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "file", "missing_file",
                        "the multipart form has no 'file' part");
        return false;
    }
    j->model = srv_pool_find(&rq->srv->pool, fm->model);
    if (!j->model) {
        srv_reply_error(rq, 404, SRV_ERR_NOT_FOUND, "model", "model_not_found",
                        "The model '%s' does not exist (GET /v1/models lists them)", fm->model);
        return false;
    }
    if (!parse_format(fm->response_format, &j->fmt)) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "response_format", "invalid_value",
                        "response_format must be json, text, srt, vtt or verbose_json");
        return false;
    }
    if (!parse_bool(fm->stream, &j->stream)) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "stream", "invalid_value",
                        "stream must be true or false");
        return false;
    }
    if (j->stream && j->fmt != SRV_FMT_JSON && j->fmt != SRV_FMT_TEXT) {
        /* the events carry text deltas: a subtitle or verbose body has no
         * stream form, and a client asking for one should hear so */
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "stream", "unsupported_value",
                        "stream=true sends text events: response_format must be json or text");
        return false;
    }
    if (!parse_bool(fm->vad, &j->vad)) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "vad", "invalid_value",
                        "vad must be true or false");
        return false;
    }
    j->diarize_given = fm->diarize && *fm->diarize;
    if (!parse_bool(fm->diarize, &j->diarize)) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "diarize", "invalid_value",
                        "diarize must be true or false");
        return false;
    }
    if (j->diarize && !srv_model_diarizes(&rq->srv->pool, j->model)) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "diarize", "unsupported_value",
                        "the model '%s' does not tell speakers apart, and this server has no "
                        "diarizer (start it with --diarizer FILE)",
                        j->model->id);
        return false;
    }
    if (j->vad && !rq->srv->pool.vad) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "vad", "unsupported_value",
                        "this server has no VAD model (start it with --vad-model FILE)");
        return false;
    }
    for (int i = 0; i < fm->n_granularities; i++) {
        const char *g = fm->granularities[i];
        if (!utf8_valid(g) || (strcmp(g, "word") && strcmp(g, "segment"))) {
            srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "timestamp_granularities[]",
                            "invalid_value", "timestamp_granularities[] takes word or segment");
            return false;
        }
        if (!strcmp(g, "word")) j->words = true;
    }
    if (j->words && j->fmt != SRV_FMT_VERBOSE_JSON) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "timestamp_granularities[]", "invalid_value",
                        "word timestamps need response_format=verbose_json");
        return false;
    }
    if (j->words && j->model->caps.max_timestamp_kind < TRANSCRIBE_TIMESTAMPS_WORD) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "timestamp_granularities[]",
                        "unsupported_value", "the model '%s' has no word timestamps", j->model->id);
        return false;
    }
    if (fm->temperature && *fm->temperature) {
        char *end = NULL;
        double t = strtod(fm->temperature, &end);
        if (!end || *end || !(t >= 0.0 && t <= 1.0)) {
            srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "temperature", "invalid_value",
                            "temperature must be a number in [0, 1]");
            return false;
        }
        j->temperature_given = true;
        j->temperature = (float)t;
    }
    if (fm->language && strlen(fm->language) > 15) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "language", "invalid_value",
                        "language is a short code such as en");
        return false;
    }
    if (rq->translate && !j->model->caps.supports_translate) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "model", "unsupported_task",
                        "the model '%s' cannot translate", j->model->id);
        return false;
    }
    return true;
}

/* ---- form fields -> run parameters: the one place they are mapped ---- */
static void map_run_params(srv_request *rq, job *j) {
    srv_form *fm = &rq->form;
    struct transcribe_run_params *rp = &j->rp;
    transcribe_run_params_init(rp);
    rp->task = rq->translate ? TRANSCRIBE_TASK_TRANSLATE : TRANSCRIBE_TASK_TRANSCRIBE;
    /* the finest rows the model has, whatever the format: subtitle cues
     * are cut at word times, and a model may decode differently without
     * timestamps (whisper), while the text should be the CLI's */
    rp->timestamps = TRANSCRIBE_TIMESTAMPS_AUTO;
    /* word granularity asked: the finest kind, where AUTO may stop at
     * segments (whisper's estimated word times, docs/formats/whisper.md §13,
     * come only when asked; the decode is the same) */
    if (j->words && j->model->caps.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_TOKEN)
        rp->timestamps = TRANSCRIBE_TIMESTAMPS_TOKEN;
    if (fm->language && *fm->language && strcmp(fm->language, "auto")) {
        /* the model's spelling of a code given in another case ("EN"): the
         * library matches codes exactly, as transcribe.cpp's does */
        const struct transcribe_capabilities *c = &j->model->caps;
        rp->language = tool_lang_code(fm->language, c->languages, c->n_languages);
    }
    if (rq->translate) {
        /* OpenAI's translations are into English */
        const struct transcribe_capabilities *c = &j->model->caps;
        for (int i = 0; i < c->n_translate_target_languages; i++)
            if (!strcmp(c->translate_target_languages[i], "en")) rp->target_language = "en";
    }
    if (j->model->whisper_ext && ((fm->prompt && *fm->prompt) || j->temperature_given)) {
        transcribe_whisper_run_ext_init(&j->wx);
        if (fm->prompt && *fm->prompt) j->wx.initial_prompt = fm->prompt;
        if (j->temperature_given) j->wx.temperature = j->temperature;
        rp->family = &j->wx.ext;
    }
    /* vad=true: only the speech regions are transcribed, times stay on the
     * upload's clock (Silero VAD with its default settings) */
    if (j->vad) rp->vad_model = rq->srv->pool.vad;
    /* diarize=true|false: speaker attribution on / off (as --diarize); the
     * text, srt and vtt then carry the speakers as the CLI prints them */
    bool native = transcribe_model_supports(j->model->model, TRANSCRIBE_FEATURE_DIARIZATION);
    if (j->diarize_given && native)
        rp->diarize = j->diarize ? TRANSCRIBE_DIARIZE_MODE_ON : TRANSCRIBE_DIARIZE_MODE_OFF;
    /* a model that cannot tell speakers itself: the server's --diarizer
     * labels the words and segments (as the CLI's --diarizer); check_form
     * refused diarize=true where there is none */
    if (j->diarize && !native) rp->diarizer = rq->srv->pool.diarizer;
}

static int status_http(transcribe_status st, srv_err_kind *kind, const char **param,
                       const char **code) {
    *param = NULL;
    *code = NULL;
    *kind = SRV_ERR_BAD_REQUEST;
    switch (st) {
    case TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE:
        *param = "language", *code = "unsupported_language";
        return 400;
    case TRANSCRIBE_ERR_UNSUPPORTED_TASK:
        *param = "model", *code = "unsupported_task";
        return 400;
    case TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS:
        *param = "timestamp_granularities[]", *code = "unsupported_value";
        return 400;
    case TRANSCRIBE_ERR_INVALID_ARG:
        *code = "invalid_request";
        return 400;
    case TRANSCRIBE_ERR_INPUT_TOO_LONG:
        *kind = SRV_ERR_TOO_LARGE, *param = "file", *code = "audio_too_long";
        return 413;
    default:
        *kind = SRV_ERR_INTERNAL, *code = "run_failed";
        return 500;
    }
}

/* What verbose_json shows from whisper's per-window telemetry. */
static void window_info(struct transcribe_session *s, srv_run_info *info) {
    int n = transcribe_get_whisper_chunk_count(s);
    if (n <= 0) return;
    info->no_speech = calloc((size_t)n, sizeof *info->no_speech);
    info->window_t0 = calloc((size_t)n, sizeof *info->window_t0);
    info->window_t1 = calloc((size_t)n, sizeof *info->window_t1);
    if (!info->no_speech || !info->window_t0 || !info->window_t1) return;
    for (int i = 0; i < n; i++) {
        struct transcribe_whisper_chunk_trace t;
        transcribe_whisper_chunk_trace_init(&t);
        if (transcribe_get_whisper_chunk_trace(s, i, &t) != TRANSCRIBE_OK) continue;
        info->no_speech[info->n_windows] = t.no_speech_prob;
        info->window_t0[info->n_windows] = t.t0_ms;
        info->window_t1[info->n_windows] = t.t1_ms;
        info->n_windows++;
        if (t.temperature_used > info->temperature) info->temperature = t.temperature_used;
    }
}

static void run_job(srv_request *rq, job *j, const float *pcm, int n) {
    srv_server *srv = rq->srv;
    struct transcribe_session *s = NULL;
    switch (srv_model_acquire(j->model, rq, &s)) {
    case SRV_ACQ_OK:
        break;
    case SRV_ACQ_FULL:
        srv_reply_error(rq, 503, SRV_ERR_OVERLOADED, NULL, "queue_full",
                        "%s %d session%s of '%s' %s busy and %d request%s wait%s; retry later",
                        j->model->n_sessions == 1 ? "the" : "all", j->model->n_sessions,
                        j->model->n_sessions == 1 ? "" : "s", j->model->id,
                        j->model->n_sessions == 1 ? "is" : "are", j->model->queue_cap,
                        j->model->queue_cap == 1 ? "" : "s", j->model->queue_cap == 1 ? "s" : "");
        rq->reply.retry_after_s = 1;
        return;
    case SRV_ACQ_CLOSING:
        srv_reply_error(rq, 503, SRV_ERR_OVERLOADED, NULL, "shutting_down",
                        "the server is shutting down");
        rq->reply.retry_after_s = 1;
        return;
    case SRV_ACQ_GONE:
        srv_reply_error(rq, 400, SRV_ERR_ABORTED, NULL, "client_closed", "client went away");
        return;
    case SRV_ACQ_TIMEOUT:
        srv_reply_error(rq, 504, SRV_ERR_TIMEOUT, NULL, "timeout",
                        "the request waited longer than %d s", srv->opts->timeout_s);
        return;
    }
    cli_result r;
    cli_result_init(&r);
    srv_run_info info = {.translate = rq->translate,
                         .duration_s = n / 16000.0,
                         .words = j->words,
                         .temperature = j->temperature};
    atomic_fetch_add(&srv->metrics.running, 1);
    transcribe_set_abort_callback(s, abort_cb, rq);
    pthread_mutex_lock(&j->model->compute);
    /* the diarizer is a model of its own: one run at a time on it too */
    if (j->rp.diarizer) pthread_mutex_lock(&srv->pool.diar_compute);
    double t0 = srv_now();
    transcribe_status st = transcribe_run(s, pcm, n, &j->rp);
    double t1 = srv_now();
    if (j->rp.diarizer) pthread_mutex_unlock(&srv->pool.diar_compute);
    pthread_mutex_unlock(&j->model->compute);
    transcribe_set_abort_callback(s, NULL, NULL);
    atomic_fetch_add(&srv->metrics.running, -1);
    atomic_fetch_add(&srv->metrics.compute_us, (long long)((t1 - t0) * 1e6));
    char why[256] = "";
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
        cli_result_copy(&r, s, -1);
        cli_result_clamp(&r, (int64_t)n * 1000 / 16000);
        window_info(s, &info);
        /* the text's language where it is known: detected, else asked for,
         * else the model's only one when it gave text; none (null) for a
         * multilingual model that does not detect, or no text at all (a
         * diarization model's speaker turns) */
        const struct transcribe_capabilities *c = &j->model->caps;
        info.language = r.language[0]                      ? r.language
                        : j->rp.language                   ? j->rp.language
                        : c->n_languages == 1 && r.text[0] ? c->languages[0]
                                                           : NULL;
        if (!j->stream && j->fmt != SRV_FMT_JSON) {
            /* rendered now: the session goes back to the pool below
             * (verbose_json: the library's JSON, for its subtitle cues) */
            struct transcribe_format_params fp;
            transcribe_format_params_init(&fp);
            fp.format = j->fmt == SRV_FMT_SRT            ? TRANSCRIBE_FORMAT_SRT
                        : j->fmt == SRV_FMT_VTT          ? TRANSCRIBE_FORMAT_VTT
                        : j->fmt == SRV_FMT_VERBOSE_JSON ? TRANSCRIBE_FORMAT_JSON
                                                         : TRANSCRIBE_FORMAT_TXT;
            fp.duration_s = info.duration_s;
            fp.run_status = st;
            if (transcribe_format_result(s, -1, &fp, &info.rendered, &info.rendered_len) !=
                TRANSCRIBE_OK) {
                r.oom = true;
            }
        }
    } else {
        snprintf(why, sizeof why, "%s", tool_reason(transcribe_session_last_error(s)));
    }
    srv_model_release(j->model, s);

    if (st == TRANSCRIBE_ERR_ABORTED) {
        if (rq->client_gone)
            srv_reply_error(rq, 400, SRV_ERR_ABORTED, NULL, "client_closed", "client went away");
        else if (atomic_load(&srv->closing)) {
            srv_reply_error(rq, 503, SRV_ERR_OVERLOADED, NULL, "shutting_down",
                            "the server is shutting down");
            rq->reply.retry_after_s = 1;
        } else
            srv_reply_error(rq, 504, SRV_ERR_TIMEOUT, NULL, "timeout",
                            "the run took longer than %d s", srv->opts->timeout_s);
    } else if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
        srv_err_kind kind;
        const char *param, *code;
        int http = status_http(st, &kind, &param, &code);
        srv_reply_error(rq, http, kind, param, code, "%s",
                        *why ? why : transcribe_status_string(st));
    } else if (r.oom) {
        srv_reply_error(rq, 500, SRV_ERR_INTERNAL, NULL, "out_of_memory", "out of memory");
    } else {
        atomic_fetch_add(&srv->metrics.audio_ms, (long long)n * 1000 / 16000);
        atomic_fetch_add(&srv->metrics.ok, 1);
        bool ok = j->stream ? srv_format_sse(&r, &rq->reply)
                            : srv_format_body(j->fmt, &r, &info, &rq->reply);
        if (!ok) srv_reply_error(rq, 500, SRV_ERR_INTERNAL, NULL, "out_of_memory", "out of memory");
    }
    free(info.no_speech), free(info.window_t0), free(info.window_t1);
    transcribe_format_free(info.rendered);
    cli_result_free(&r);
}

void srv_job_run(srv_request *rq) {
    job j;
    memset(&j, 0, sizeof j);
    if (!check_form(rq, &j)) return;
    map_run_params(rq, &j);
    if (rq->file_fd >= 0) {
        close(rq->file_fd);
        rq->file_fd = -1;
    }
    struct stat sb;
    if (stat(rq->file_path, &sb) == 0 && sb.st_size == 0) { /* said as the CLI says it */
        srv_reply_error(rq, 415, SRV_ERR_MEDIA, "file", "unsupported_file",
                        "the file is empty (0 bytes)");
        return;
    }
    if (cli_wav_cut_short(rq->file_path)) { /* the CLI's rule (tools/common/wav_cut.h) */
        srv_reply_error(rq, 415, SRV_ERR_MEDIA, "file", "truncated_audio", CLI_WAV_CUT_SHORT_MSG);
        return;
    }
    float *pcm = NULL;
    int n = 0;
    /* refused before it is decoded past --max-audio-s (a small upload can
     * hold hours of audio) */
    int64_t max_ms = (int64_t)(rq->srv->opts->max_audio_s * 1000);
    char why[400];
    transcribe_status st = srv_decode_upload(rq->file_path, 16000, max_ms, rq->srv->opts->timeout_s,
                                             &pcm, &n, why, sizeof why);
    unlink(rq->file_path);
    rq->file_path[0] = '\0';
    if (st == TRANSCRIBE_ERR_INPUT_TOO_LONG) {
        srv_reply_error(rq, 413, SRV_ERR_TOO_LARGE, "file", "audio_too_long",
                        "the audio is longer than this server takes (%.0f s)",
                        rq->srv->opts->max_audio_s);
        return;
    }
    if (st == TRANSCRIBE_ERR_OOM) {
        srv_reply_error(rq, 500, SRV_ERR_INTERNAL, NULL, "out_of_memory", "out of memory");
        return;
    }
    if (st == TRANSCRIBE_ERR_BACKEND) {
        srv_reply_error(rq, 503, SRV_ERR_OVERLOADED, NULL, "decoder_unavailable",
                        "cannot start a decoder process now; try again");
        return;
    }
    if (st != TRANSCRIBE_OK || n <= 0) {
        transcribe_audio_free(pcm);
        /* the library's reason, as the CLI gives it (without the module's
         * tag), unless it names the server's temporary file */
        const char *r = why;
        if (!strncmp(r, "audio: ", 7)) r += 7;
        if (!strncmp(r, "wav: ", 5)) r += 5;
        bool say = st != TRANSCRIBE_OK && *r && !strstr(r, rq->srv->tmp_dir);
        srv_reply_error(rq, 415, SRV_ERR_MEDIA, "file", "unsupported_file",
                        "the file is not audio this server can decode (WAV, FLAC, MP3, Ogg, "
                        "Opus), or it is damaged%s%s",
                        say ? ": " : "", say ? r : "");
        return;
    }
    double dur = n / 16000.0;
    if (dur > rq->srv->opts->max_audio_s) {
        transcribe_audio_free(pcm);
        srv_reply_error(rq, 413, SRV_ERR_TOO_LARGE, "file", "audio_too_long",
                        "the audio is %.1f s long; this server takes at most %.0f s", dur,
                        rq->srv->opts->max_audio_s);
        return;
    }
    run_job(rq, &j, pcm, n);
    transcribe_audio_free(pcm);
}
