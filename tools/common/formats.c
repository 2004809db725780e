/* Output formats for one transcribed file: plain text, JSON, SubRip,
 * WebVTT and transcribe-cli's detailed "report" block (docs/cli.md §4.2). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "output.h"

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Writes s without leading/trailing whitespace. */
static void put_trimmed(FILE *f, const char *s) {
    if (!s) return;
    while (is_space(*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1])) n--;
    fwrite(s, 1, n, f);
}

/* true when some segment is attributed to a speaker (diarized runs). */
static bool has_speakers(const cli_result *r) {
    for (int i = 0; i < r->n_segs; i++)
        if (r->segs[i].speaker_id > 0) return true;
    return false;
}

/* One line per speaker turn: "[S1] text" (unattributed turns unlabelled). */
static void print_turns(FILE *f, const cli_result *r, const char *open, const char *close) {
    for (int i = 0; i < r->n_segs; i++) {
        const struct transcribe_segment *seg = &r->segs[i];
        if (!seg->text) continue;
        if (seg->speaker_id > 0) fprintf(f, "%sS%d%s", open, (int)seg->speaker_id, close);
        put_trimmed(f, seg->text);
        fputc('\n', f);
    }
}

void cli_print_txt(FILE *f, const cli_result *r, const char *header) {
    if (header) fprintf(f, "# %s\n", header);
    if (has_speakers(r))
        print_turns(f, r, "[", "] ");
    else
        fprintf(f, "%s\n", r->text);
}

static const char *end_name(int kind) {
    return kind == TRANSCRIBE_SPAN_END_PAUSE    ? "pause"
           : kind == TRANSCRIBE_SPAN_END_FORCED ? "forced"
                                                : "end";
}

static void json_cues(FILE *f, const cli_result *r, double duration_s);

void cli_print_json(FILE *f, const cli_result *r, const char *path, const char *model,
                    double duration_s, transcribe_status st, bool tokens) {
    fputs("{\"file\":", f);
    cli_json_str(f, path);
    fputs(",\"model\":", f);
    cli_json_str(f, model);
    fputs(",\"text\":", f);
    cli_json_str(f, r->text);
    fputs(",\"language\":", f);
    cli_json_str(f, r->language);
    fprintf(f, ",\"duration\":%.3f", duration_s);
    static const char *const kinds[] = {"none", "auto", "segment", "word", "token"};
    int k = (int)r->kind;
    fprintf(f, ",\"timestamps\":\"%s\"", (k >= 0 && k <= 4) ? kinds[k] : "none");
    if (st != TRANSCRIBE_OK) {
        fputs(",\"error\":", f);
        cli_json_str(f, transcribe_status_string(st));
    }
    if (r->truncated) fputs(",\"truncated\":true", f);
    if (r->chunked) {
        fputs(",\"chunks\":[", f);
        for (int i = 0; i < r->n_chunks; i++) {
            const cli_chunk *c = &r->chunks[i];
            fprintf(f, "%s{\"t0_ms\":%lld,\"t1_ms\":%lld,\"end\":\"%s\",\"status\":", i ? "," : "",
                    (long long)c->t0_ms, (long long)c->t1_ms, end_name(c->end_kind));
            cli_json_str(f, transcribe_status_string(c->status));
            fputc('}', f);
        }
        fputc(']', f);
    }

    json_cues(f, r, duration_s); /* the SRT/VTT cues, from the same code */
    fputs(",\"segments\":[", f);
    for (int i = 0; i < r->n_segs; i++) {
        const struct transcribe_segment seg = r->segs[i];
        fprintf(f, "%s{\"t0_ms\":%lld,\"t1_ms\":%lld,", i ? "," : "", (long long)seg.t0_ms,
                (long long)seg.t1_ms);
        if (seg.speaker_id > 0)
            fprintf(f, "\"speaker_id\":%d,\"speaker\":\"S%d\",", (int)seg.speaker_id,
                    (int)seg.speaker_id);
        fputs("\"text\":", f);
        cli_json_str(f, seg.text);
        fputc('}', f);
    }
    fputc(']', f);

    if (r->n_words > 0) {
        fputs(",\"words\":[", f);
        for (int i = 0; i < r->n_words; i++) {
            const struct transcribe_word w = r->words[i];
            fprintf(f, "%s{\"t0_ms\":%lld,\"t1_ms\":%lld,\"text\":", i ? "," : "",
                    (long long)w.t0_ms, (long long)w.t1_ms);
            cli_json_str(f, w.text);
            fputc('}', f);
        }
        fputc(']', f);
    }
    if (tokens && r->n_toks > 0) {
        fputs(",\"tokens\":[", f);
        for (int i = 0; i < r->n_toks; i++) {
            const struct transcribe_token t = r->toks[i];
            fprintf(f, "%s{\"id\":%d,", i ? "," : "", t.id);
            if (isfinite(t.p)) fprintf(f, "\"p\":%.4f,", (double)t.p);
            fprintf(f, "\"t0_ms\":%lld,\"t1_ms\":%lld,\"text\":", (long long)t.t0_ms,
                    (long long)t.t1_ms);
            cli_json_str(f, t.text);
            fputc('}', f);
        }
        fputc(']', f);
    }
    fputs("}\n", f);
}

/* Subtitle cues: the segments when they carry times, else one cue over the
 * whole file. A segment longer than CUE_SPLIT_MS (or --max-cue-ms, or with
 * more text than --max-line-chars) whose word rows carry their
 * own times (Parakeet: one segment per utterance, even for an hour of audio)
 * is cut into readable cues at word boundaries: a cue ends after a pause of
 * CUE_GAP_MS, after sentence punctuation once it is CUE_MIN_MS long, or before
 * it would pass CUE_MAX_MS or CUE_MAX_CHARS (or the flags' values); a single
 * word longer than that is a cue of its own. */
typedef void (*cue_fn)(FILE *f, int index, int64_t t0, int64_t t1, const char *text);

#define CUE_SPLIT_MS  15000
#define CUE_MAX_MS    7000
#define CUE_MIN_MS    1500
#define CUE_GAP_MS    800
#define CUE_MAX_CHARS 84

static bool ends_sentence(const char *w) {
    size_t n = strlen(w);
    while (n > 0 && is_space(w[n - 1])) n--;
    return n > 0 && (w[n - 1] == '.' || w[n - 1] == '?' || w[n - 1] == '!');
}

/* Words [first, first + n) of segment seg as cues; false when they do not
 * carry their own times (Whisper's word rows repeat the segment's). */
static bool word_cues(FILE *f, const cli_result *r, const struct transcribe_segment *seg, int *idx,
                      cue_fn fn) {
    /* --max-cue-ms / --max-line-chars replace the defaults and split every
     * segment that passes them. */
    int64_t max_ms = r->shape.max_cue_ms > 0 ? r->shape.max_cue_ms : CUE_MAX_MS;
    int64_t split_ms = r->shape.max_cue_ms > 0 ? r->shape.max_cue_ms : CUE_SPLIT_MS;
    size_t max_chars = r->shape.max_chars > 0 ? (size_t)r->shape.max_chars : CUE_MAX_CHARS;
    bool long_text = r->shape.max_chars > 0 && seg->text && strlen(seg->text) > max_chars;
    if (seg->n_words < 2 || (seg->t1_ms - seg->t0_ms <= split_ms && !long_text)) return false;
    if (seg->first_word < 0 || seg->first_word + seg->n_words > r->n_words) return false;
    struct transcribe_word w = r->words[seg->first_word];
    if (w.t0_ms == seg->t0_ms && w.t1_ms == seg->t1_ms) return false;
    char text[4 * CLI_MAX_LINE_CHARS + 512];
    size_t len = 0;
    int64_t c0 = 0, c1 = 0;
    bool open = false, sentence = false;
    for (int i = seg->first_word; i < seg->first_word + seg->n_words; i++) {
        w = r->words[i];
        if (!w.text) continue;
        const char *t = w.text;
        while (is_space(*t)) t++;
        size_t wl = strlen(t);
        if (!wl) continue;
        if (open && (w.t0_ms - c1 >= CUE_GAP_MS || w.t1_ms - c0 > max_ms ||
                     len + 1 + wl > max_chars || (sentence && c1 - c0 >= CUE_MIN_MS))) {
            fn(f, (*idx)++, c0, c1, text);
            open = false;
        }
        if (!open) {
            len = 0;
            c0 = w.t0_ms;
            open = true;
        }
        if (len && len + 1 < sizeof text) text[len++] = ' ';
        size_t room = sizeof text - 1 - len;
        memcpy(text + len, t, wl < room ? wl : room);
        len += wl < room ? wl : room;
        text[len] = '\0';
        c1 = w.t1_ms > c1 ? w.t1_ms : c1;
        sentence = ends_sentence(t);
    }
    if (open) fn(f, (*idx)++, c0, c1, text);
    return true;
}

static void for_each_cue(FILE *f, const cli_result *r, double duration_s, cue_fn fn) {
    if (r->kind == TRANSCRIBE_TIMESTAMPS_NONE || r->n_segs == 0) {
        if (*r->text) fn(f, 1, 0, (int64_t)llround(duration_s * 1000.0), r->text);
        return;
    }
    int idx = 1;
    for (int i = 0; i < r->n_segs; i++) {
        const struct transcribe_segment seg = r->segs[i];
        if (!seg.text) continue;
        const char *t = seg.text;
        while (is_space(*t)) t++;
        if (!*t) continue;
        if (word_cues(f, r, &seg, &idx, fn)) continue;
        int64_t t1 = seg.t1_ms > seg.t0_ms ? seg.t1_ms : seg.t0_ms;
        fn(f, idx++, seg.t0_ms, t1, seg.text);
    }
}

static void clock_time(FILE *f, int64_t ms, char frac_sep) {
    if (ms < 0) ms = 0;
    fprintf(f, "%02lld:%02lld:%02lld%c%03lld", (long long)(ms / 3600000),
            (long long)(ms / 60000 % 60), (long long)(ms / 1000 % 60), frac_sep,
            (long long)(ms % 1000));
}

static void srt_cue(FILE *f, int index, int64_t t0, int64_t t1, const char *text) {
    fprintf(f, "%d\n", index);
    clock_time(f, t0, ',');
    fputs(" --> ", f);
    clock_time(f, t1, ',');
    fputc('\n', f);
    put_trimmed(f, text);
    fputs("\n\n", f);
}

static void vtt_cue(FILE *f, int index, int64_t t0, int64_t t1, const char *text) {
    (void)index;
    clock_time(f, t0, '.');
    fputs(" --> ", f);
    clock_time(f, t1, '.');
    fputc('\n', f);
    put_trimmed(f, text);
    fputs("\n\n", f);
}

static void json_cue(FILE *f, int index, int64_t t0, int64_t t1, const char *text) {
    fprintf(f, "%s{\"t0_ms\":%lld,\"t1_ms\":%lld,\"text\":", index > 1 ? "," : "", (long long)t0,
            (long long)(t1 > t0 ? t1 : t0));
    const char *t = text;
    while (is_space(*t)) t++;
    size_t n = strlen(t);
    while (n > 0 && is_space(t[n - 1])) n--;
    char buf[1024];
    if (n < sizeof buf) {
        memcpy(buf, t, n);
        buf[n] = '\0';
        cli_json_str(f, buf);
    } else {
        cli_json_str(f, t);
    }
    fputc('}', f);
}

static void json_cues(FILE *f, const cli_result *r, double duration_s) {
    fputs(",\"cues\":[", f);
    for_each_cue(f, r, duration_s, json_cue);
    fputc(']', f);
}

void cli_print_srt(FILE *f, const cli_result *r, double duration_s) {
    for_each_cue(f, r, duration_s, srt_cue);
}

void cli_print_vtt(FILE *f, const cli_result *r, double duration_s) {
    fputs("WEBVTT\n\n", f);
    if (has_speakers(r) && r->kind == TRANSCRIBE_TIMESTAMPS_NONE) {
        /* untimed speaker turns: one cue over the file, a voice span per turn */
        clock_time(f, 0, '.');
        fputs(" --> ", f);
        clock_time(f, (int64_t)llround(duration_s * 1000.0), '.');
        fputc('\n', f);
        print_turns(f, r, "<v ", ">");
        fputc('\n', f);
        return;
    }
    for_each_cue(f, r, duration_s, vtt_cue);
}

/* The result block of docs/cli.md §4.2, from `text:` on. */
void cli_print_report_result(FILE *f, const cli_result *r) {
    if (r->chunked) {
        fprintf(f, "chunks: %d\n", r->n_chunks);
        for (int i = 0; i < r->n_chunks; i++) {
            const cli_chunk *c = &r->chunks[i];
            fprintf(f, "  [%7.2f -> %7.2f] %-6s %s\n", (double)c->t0_ms / 1000.0,
                    (double)c->t1_ms / 1000.0, end_name(c->end_kind),
                    transcribe_status_string(c->status));
        }
    }
    const char *text = r->text;
    fprintf(f, "text: %s\n", *text ? text : "(empty)");
    if (r->truncated) {
        fprintf(f, "  note:      output truncated (hit the model's context/generation cap before "
                   "end-of-stream); transcript is incomplete\n");
    }
    if (r->language[0]) fprintf(f, "detected-language: %s\n", r->language);
    transcribe_timestamp_kind kind = r->kind;
    int n = r->n_segs;
    if (n > 0 && (kind != TRANSCRIBE_TIMESTAMPS_NONE || r->n_speaker_segments > 0)) {
        fprintf(f, "segments: %d\n", n);
        for (int i = 0; i < n; i++) {
            const struct transcribe_segment seg = r->segs[i];
            if (!seg.text) continue;
            fputs("  ", f);
            if (kind != TRANSCRIBE_TIMESTAMPS_NONE) {
                fprintf(f, "[%7.2f -> %7.2f] ", (double)seg.t0_ms / 1000.0,
                        (double)seg.t1_ms / 1000.0);
            }
            if (seg.speaker_id > 0) fprintf(f, "S%d: ", (int)seg.speaker_id);
            fprintf(f, "%s\n", seg.text);
        }
    }
    if (kind == TRANSCRIBE_TIMESTAMPS_WORD || kind == TRANSCRIBE_TIMESTAMPS_TOKEN) {
        fprintf(f, "words: %d\n", r->n_words);
        for (int i = 0; i < r->n_words; i++) {
            const struct transcribe_word w = r->words[i];
            if (!w.text) continue;
            fprintf(f, "  [%7.2f -> %7.2f] %s\n", (double)w.t0_ms / 1000.0,
                    (double)w.t1_ms / 1000.0, w.text);
        }
    }
    if (kind == TRANSCRIBE_TIMESTAMPS_TOKEN) {
        fprintf(f, "tokens: %d\n", r->n_toks);
        for (int i = 0; i < r->n_toks; i++) {
            const struct transcribe_token t = r->toks[i];
            if (!t.text) continue;
            fprintf(f, "  [%7.2f -> %7.2f] p=%.3f %s\n", (double)t.t0_ms / 1000.0,
                    (double)t.t1_ms / 1000.0, (double)t.p, t.text);
        }
    }
}

bool cli_emit(FILE *f, cli_format fmt, const cli_result *r, bool have_result, const char *path,
              const char *model, double duration_s, transcribe_status st, bool tokens,
              bool header) {
    if (fmt == CLI_FMT_JSON) {
        cli_print_json(f, r, path, model, duration_s, st, tokens);
    } else if (have_result) {
        switch (fmt) {
        case CLI_FMT_REPORT:
            cli_print_report_result(f, r);
            break;
        case CLI_FMT_TXT:
            cli_print_txt(f, r, header ? path : NULL);
            break;
        case CLI_FMT_SRT:
            cli_print_srt(f, r, duration_s);
            break;
        case CLI_FMT_VTT:
            cli_print_vtt(f, r, duration_s);
            break;
        case CLI_FMT_JSON:
            break;
        }
    }
    return fflush(f) == 0 && !ferror(f);
}
