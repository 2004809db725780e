/* Response bodies in OpenAI's shapes: errors, json / text / srt / vtt /
 * verbose_json, and the server-sent events of stream=true. Text and the
 * subtitle formats are the library's (transcribe_format_result, rendered in
 * job.c), string escaping the command-line tool's (tools/common). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"

double srv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool srv_buf_open(srv_buf *b) {
    memset(b, 0, sizeof *b);
    b->f = open_memstream(&b->data, &b->len);
    return b->f != NULL;
}

bool srv_buf_to_reply(srv_buf *b, srv_reply *out, int status, const char *content_type) {
    bool ok = b->f && !ferror(b->f);
    if (b->f && fclose(b->f) != 0) ok = false;
    b->f = NULL;
    if (!ok) {
        free(b->data);
        b->data = NULL;
        return false;
    }
    free(out->body);
    out->body = b->data;
    out->len = b->len;
    out->status = status;
    out->content_type = content_type;
    b->data = NULL;
    return true;
}

static const char *error_type(int status) {
    switch (status) {
    case 401:
        return "authentication_error";
    case 404:
        return "not_found_error";
    case 429:
    case 503:
        return "server_overloaded";
    case 500:
    case 504:
        return "server_error";
    default:
        return "invalid_request_error";
    }
}

void srv_reply_error(srv_request *rq, int status, srv_err_kind kind, const char *param,
                     const char *code, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rq->failed = true;
    atomic_fetch_add(&rq->srv->metrics.errors[kind], 1);
    srv_buf b;
    if (!srv_buf_open(&b)) {
        rq->reply.status = status; /* the daemon answers with an empty body */
        return;
    }
    fputs("{\"error\":{\"message\":", b.f);
    cli_json_str(b.f, msg);
    fprintf(b.f, ",\"type\":\"%s\",\"param\":", error_type(status));
    if (param)
        cli_json_str(b.f, param);
    else
        fputs("null", b.f);
    fputs(",\"code\":", b.f);
    if (code)
        cli_json_str(b.f, code);
    else
        fputs("null", b.f);
    fputs("}}\n", b.f);
    if (!srv_buf_to_reply(&b, &rq->reply, status, "application/json")) rq->reply.status = status;
}

/* Seconds with millisecond precision, as OpenAI prints them. */
static void put_seconds(FILE *f, int64_t ms) {
    fprintf(f, "%.3f", (double)ms / 1000.0);
}

static void put_trimmed_json(FILE *f, const char *s) {
    /* segment texts carry the leading space of the decode; OpenAI's do too,
     * so they are kept as they are */
    cli_json_str(f, s ? s : "");
}

static void verbose_segments(FILE *f, const cli_result *r, const srv_run_info *info) {
    fputs(",\"segments\":[", f);
    for (int i = 0; i < r->n_segs; i++) {
        const struct transcribe_segment *g = &r->segs[i];
        fprintf(f, "%s{\"id\":%d,\"seek\":0,\"start\":", i ? "," : "", i);
        put_seconds(f, g->t0_ms);
        fputs(",\"end\":", f);
        put_seconds(f, g->t1_ms);
        fputs(",\"text\":", f);
        put_trimmed_json(f, g->text);
        /* the segment's tokens: ids, and the mean log-probability where
         * the model gives probabilities */
        fputs(",\"tokens\":[", f);
        double logp = 0.0;
        int n_tok = 0, n_p = 0;
        for (int k = 0; k < r->n_toks; k++) {
            const struct transcribe_token *t = &r->toks[k];
            if (t->seg_index != i) continue;
            fprintf(f, "%s%d", n_tok ? "," : "", t->id);
            n_tok++;
            if (isfinite(t->p) && t->p > 0.0f && t->p <= 1.0f) {
                logp += log((double)t->p);
                n_p++;
            }
        }
        fputc(']', f);
        fprintf(f, ",\"temperature\":%.1f", (double)info->temperature);
        if (n_p > 0) fprintf(f, ",\"avg_logprob\":%.6f", logp / n_p);
        for (int w = 0; w < info->n_windows; w++) {
            if (g->t0_ms >= info->window_t0[w] && g->t0_ms < info->window_t1[w]) {
                fprintf(f, ",\"no_speech_prob\":%.6f", (double)info->no_speech[w]);
                break;
            }
        }
        if (g->speaker_id > 0) fprintf(f, ",\"speaker\":\"S%d\"", (int)g->speaker_id);
        fputc('}', f);
    }
    fputc(']', f);
}

static void verbose_words(FILE *f, const cli_result *r) {
    fputs(",\"words\":[", f);
    int n = 0;
    for (int i = 0; i < r->n_words; i++) {
        const struct transcribe_word *w = &r->words[i];
        const char *t = w->text ? w->text : "";
        while (*t == ' ') t++;
        if (!*t) continue;
        fprintf(f, "%s{\"word\":", n++ ? "," : "");
        cli_json_str(f, t);
        fputs(",\"start\":", f);
        put_seconds(f, w->t0_ms);
        fputs(",\"end\":", f);
        put_seconds(f, w->t1_ms);
        if (w->speaker_id > 0) fprintf(f, ",\"speaker\":\"S%d\"", (int)w->speaker_id);
        fputc('}', f);
    }
    fputc(']', f);
}

/* The array value of "key" in the JSON text s (n bytes): [*b, *e) spans
 * it, brackets included. The text is the library's own output: strings are
 * skipped (a ']' in a cue's text ends nothing), escapes honoured. */
static bool json_array_of(const char *s, size_t n, const char *key, size_t *b, size_t *e) {
    char pat[64];
    int pl = snprintf(pat, sizeof pat, "\"%s\":[", key);
    if (pl <= 0 || (size_t)pl >= sizeof pat) return false;
    const char *hit = NULL;
    for (size_t i = 0; i + (size_t)pl <= n && !hit; i++)
        if (memcmp(s + i, pat, (size_t)pl) == 0) hit = s + i;
    if (!hit) return false;
    size_t i = (size_t)(hit - s) + (size_t)pl - 1, depth = 0;
    *b = i;
    bool in_str = false;
    for (; i < n; i++) {
        const char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{') {
            depth++;
        } else if ((c == ']' || c == '}') && --depth == 0) {
            *e = i + 1;
            return true;
        }
    }
    return false;
}

bool srv_format_body(srv_format fmt, const cli_result *r, const srv_run_info *info,
                     srv_reply *out) {
    srv_buf b;
    if (!srv_buf_open(&b)) return false;
    const char *ctype = "application/json";
    switch (fmt) {
    case SRV_FMT_JSON:
        fputs("{\"text\":", b.f);
        cli_json_str(b.f, r->text);
        fprintf(b.f, ",\"usage\":{\"type\":\"duration\",\"seconds\":%d}}\n",
                (int)ceil(info->duration_s));
        break;
    case SRV_FMT_TEXT:
    case SRV_FMT_SRT:
    case SRV_FMT_VTT:
        /* the library's txt / srt / vtt, rendered while the session was held */
        if (!info->rendered) {
            fclose(b.f);
            free(b.data);
            return false;
        }
        fwrite(info->rendered, 1, info->rendered_len, b.f);
        ctype = fmt == SRV_FMT_TEXT  ? "text/plain; charset=utf-8"
                : fmt == SRV_FMT_SRT ? "application/x-subrip; charset=utf-8"
                                     : "text/vtt; charset=utf-8";
        break;
    case SRV_FMT_VERBOSE_JSON:
        fprintf(b.f,
                "{\"task\":\"%s\",\"language\":", info->translate ? "translate" : "transcribe");
        if (info->translate || (info->language && info->language[0]))
            cli_json_str(b.f, info->translate ? "en" : info->language);
        else
            fputs("null", b.f);
        if (r->emotion[0]) { /* audio tags, only where the model gives them */
            fputs(",\"emotion\":", b.f);
            cli_json_str(b.f, r->emotion);
        }
        if (r->audio_event[0]) {
            fputs(",\"audio_event\":", b.f);
            cli_json_str(b.f, r->audio_event);
        }
        fprintf(b.f, ",\"duration\":%.3f,\"text\":", info->duration_s);
        cli_json_str(b.f, r->text);
        verbose_segments(b.f, r, info);
        if (info->words) verbose_words(b.f, r);
        /* beside OpenAI's fields: the subtitle cues that srt / vtt print
         * (the library's, as the CLI JSON's: t0_ms, t1_ms, text, speaker),
         * so that a client (the page) saves the same SRT without a rerun */
        size_t cb, ce;
        if (info->rendered && json_array_of(info->rendered, info->rendered_len, "cues", &cb, &ce)) {
            fputs(",\"cues\":", b.f);
            fwrite(info->rendered + cb, 1, ce - cb, b.f);
        }
        fprintf(b.f, ",\"usage\":{\"type\":\"duration\",\"seconds\":%d}}\n",
                (int)ceil(info->duration_s));
        break;
    }
    return srv_buf_to_reply(&b, out, 200, ctype);
}

static void sse_event(FILE *f, const char *type, const char *key, const char *s, size_t n) {
    char *piece = malloc(n + 1);
    if (!piece) return;
    memcpy(piece, s, n);
    piece[n] = '\0';
    fprintf(f, "data: {\"type\":\"%s\",\"%s\":", type, key);
    cli_json_str(f, piece);
    fputs("}\n\n", f);
    free(piece);
}

/* stream=true. No family streams an offline run yet, so the deltas are the
 * finished run's segments, cut so that they add up to the full text exactly
 * (OpenAI's clients concatenate them). When the library gains a streaming
 * run, the deltas come from its updates instead; the framing stays. */
bool srv_format_sse(const cli_result *r, srv_reply *out) {
    srv_buf b;
    if (!srv_buf_open(&b)) return false;
    const char *text = r->text;
    size_t len = strlen(text), pos = 0;
    for (int i = 0; i < r->n_segs && pos < len; i++) {
        const char *t = r->segs[i].text ? r->segs[i].text : "";
        while (*t == ' ' || *t == '\n' || *t == '\t') t++;
        size_t tl = strlen(t);
        while (tl > 0 && (t[tl - 1] == ' ' || t[tl - 1] == '\n' || t[tl - 1] == '\t')) tl--;
        if (tl == 0) continue;
        const char *hit = NULL;
        for (const char *p = text + pos; (p = strchr(p, t[0])) != NULL; p++) {
            if (strncmp(p, t, tl) == 0) {
                hit = p;
                break;
            }
        }
        if (!hit) break;
        size_t end = (size_t)(hit - text) + tl;
        sse_event(b.f, "transcript.text.delta", "delta", text + pos, end - pos);
        pos = end;
    }
    if (pos < len) sse_event(b.f, "transcript.text.delta", "delta", text + pos, len - pos);
    sse_event(b.f, "transcript.text.done", "text", text, len);
    return srv_buf_to_reply(&b, out, 200, "text/event-stream");
}
