/* JSON: one object per result, on one line: file, model, text, language,
 * emotion and audio_event (only when the model gives them),
 * duration, timestamps, error, truncated, the pieces of a split run
 * ("chunks"), the subtitle cues, segments (with speakers), words and
 * (optionally) tokens. Strings are escaped minimally: quote, backslash,
 * \n \r \t, other control bytes as \u00xx; every other byte (UTF-8) as is. */
#include <math.h>
#include <string.h>

#include "output/output_internal.h"

void tr_out_json_str(tr_strbuf *b, const char *s, size_t n) {
    tr_strbuf_append(b, "\"", 1);
    size_t run = 0; /* bytes copied as they are, pending */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = c == '"'    ? "\\\""
                          : c == '\\' ? "\\\\"
                          : c == '\n' ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                                      : NULL;
        if (!esc && c >= 0x20) continue;
        tr_strbuf_append(b, s + run, i - run);
        run = i + 1;
        if (esc)
            tr_strbuf_appends(b, esc);
        else
            tr_strbuf_appendf(b, "\\u%04x", c);
    }
    tr_strbuf_append(b, s + run, n - run);
    tr_strbuf_append(b, "\"", 1);
}

static void json_cstr(tr_strbuf *b, const char *s) {
    if (!s) s = "";
    tr_out_json_str(b, s, strlen(s));
}

static const char *end_name(int kind) {
    return kind == TRANSCRIBE_SPAN_END_PAUSE    ? "pause"
           : kind == TRANSCRIBE_SPAN_END_FORCED ? "forced"
                                                : "end";
}

static const char *status_name(const tr_out_view *v, transcribe_status st) {
    return v->o->status_name ? v->o->status_name(st) : "";
}

static void json_cue(tr_out_view *v, int index, int64_t t0, int64_t t1, const char *text,
                     int32_t speaker) {
    tr_strbuf *b = v->out;
    tr_strbuf_appendf(b, "%s{\"t0_ms\":%lld,\"t1_ms\":%lld,", index > 1 ? "," : "", (long long)t0,
                      (long long)(t1 > t0 ? t1 : t0));
    if (speaker > 0)
        tr_strbuf_appendf(b, "\"speaker_id\":%d,\"speaker\":\"S%d\",", (int)speaker, (int)speaker);
    tr_strbuf_appends(b, "\"text\":");
    size_t n;
    text = tr_out_trim(text, &n);
    tr_out_json_str(b, text, n);
    tr_strbuf_append(b, "}", 1);
}

static void json_pieces(tr_out_view *v) {
    const tr_result *r = v->r;
    if (!r || !r->chunked) return;
    tr_strbuf *b = v->out;
    tr_strbuf_appends(b, ",\"chunks\":[");
    for (int i = 0; i < r->n_pieces; i++) {
        const tr_result_piece *c = &r->pieces[i];
        tr_strbuf_appendf(
            b, "%s{\"t0_ms\":%lld,\"t1_ms\":%lld,\"end\":\"%s\",\"status\":", i ? "," : "",
            (long long)c->t0_ms, (long long)c->t1_ms, end_name(c->end_kind));
        json_cstr(b, status_name(v, c->status));
        tr_strbuf_append(b, "}", 1);
    }
    tr_strbuf_append(b, "]", 1);
}

static void json_rows(tr_out_view *v) {
    tr_strbuf *b = v->out;
    tr_strbuf_appends(b, ",\"segments\":[");
    for (int i = 0; i < tr_out_n_segs(v); i++) {
        int64_t t0, t1;
        const char *t;
        tr_out_seg(v, i, &t0, &t1, &t);
        tr_strbuf_appendf(b, "%s{\"t0_ms\":%lld,\"t1_ms\":%lld,", i ? "," : "", (long long)t0,
                          (long long)t1);
        int32_t spk = tr_out_speaker(v, i);
        if (spk > 0)
            tr_strbuf_appendf(b, "\"speaker_id\":%d,\"speaker\":\"S%d\",", (int)spk, (int)spk);
        tr_strbuf_appends(b, "\"text\":");
        json_cstr(b, t);
        tr_strbuf_append(b, "}", 1);
    }
    tr_strbuf_append(b, "]", 1);
    if (tr_out_n_words(v) > 0) {
        tr_strbuf_appends(b, ",\"words\":[");
        for (int i = 0; i < tr_out_n_words(v); i++) {
            int64_t t0, t1;
            const char *t;
            tr_out_word(v, i, &t0, &t1, &t);
            tr_strbuf_appendf(b, "%s{\"t0_ms\":%lld,\"t1_ms\":%lld,", i ? "," : "", (long long)t0,
                              (long long)t1);
            const int32_t wspk = v->r->words[i].speaker_id;
            if (wspk > 0)
                tr_strbuf_appendf(b, "\"speaker_id\":%d,\"speaker\":\"S%d\",", (int)wspk,
                                  (int)wspk);
            tr_strbuf_appends(b, "\"text\":");
            json_cstr(b, t);
            tr_strbuf_append(b, "}", 1);
        }
        tr_strbuf_append(b, "]", 1);
    }
    if (v->o->tokens && tr_out_n_toks(v) > 0) {
        tr_strbuf_appends(b, ",\"tokens\":[");
        for (int i = 0; i < tr_out_n_toks(v); i++) {
            const tr_result_token *k = &v->r->toks[i];
            tr_strbuf_appendf(b, "%s{\"id\":%d,", i ? "," : "", k->id);
            if (isfinite(k->p)) tr_strbuf_appendf(b, "\"p\":%.4f,", (double)k->p);
            int64_t t0 = k->t0_ms, t1 = k->t1_ms;
            if (t0 < 0) t0 = 0;
            if (t0 > v->end_ms) t0 = v->end_ms;
            if (t1 > v->end_ms) t1 = v->end_ms;
            if (t1 < t0) t1 = t0;
            tr_strbuf_appendf(b, "\"t0_ms\":%lld,\"t1_ms\":%lld,\"text\":", (long long)t0,
                              (long long)t1);
            json_cstr(b, tr_result_str(v->r, k->text_off));
            tr_strbuf_append(b, "}", 1);
        }
        tr_strbuf_append(b, "]", 1);
    }
}

void tr_out_json(tr_out_view *v) {
    const tr_output_opts *o = v->o;
    tr_strbuf *b = v->out;
    tr_strbuf_appends(b, "{\"file\":");
    json_cstr(b, o->file);
    tr_strbuf_appends(b, ",\"model\":");
    json_cstr(b, o->model);
    tr_strbuf_appends(b, ",\"text\":");
    size_t n;
    const char *text = tr_out_full_text(v, &n);
    tr_out_json_str(b, text, n);
    tr_strbuf_appends(b, ",\"language\":");
    json_cstr(b, v->r ? tr_result_language(v->r) : "");
    /* audio tags, only where the model gives them (SenseVoice) */
    if (v->r && *tr_result_emotion(v->r)) {
        tr_strbuf_appends(b, ",\"emotion\":");
        json_cstr(b, tr_result_emotion(v->r));
    }
    if (v->r && *tr_result_audio_event(v->r)) {
        tr_strbuf_appends(b, ",\"audio_event\":");
        json_cstr(b, tr_result_audio_event(v->r));
    }
    tr_strbuf_appendf(b, ",\"duration\":%.3f", o->duration_s);
    static const char *const kinds[] = {"none", "auto", "segment", "word", "token"};
    int k = (int)tr_out_kind(v);
    tr_strbuf_appendf(b, ",\"timestamps\":\"%s\"", (k >= 0 && k <= 4) ? kinds[k] : "none");
    if (o->status != TRANSCRIBE_OK) {
        tr_strbuf_appends(b, ",\"error\":");
        json_cstr(b, status_name(v, o->status));
    }
    bool truncated = o->truncated;
    for (int i = 0; v->r && i < v->r->n_pieces; i++)
        if (v->r->pieces[i].status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) truncated = true;
    if (truncated) tr_strbuf_appends(b, ",\"truncated\":true");
    json_pieces(v);
    tr_strbuf_appends(b, ",\"cues\":["); /* the SRT/VTT cues, from the same code */
    if (v->r) tr_out_for_each_cue(v, json_cue);
    tr_strbuf_append(b, "]", 1);
    json_rows(v);
    tr_strbuf_appends(b, "}\n");
}
