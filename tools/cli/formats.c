/* Output formats for one transcribed file: plain text, JSON, SubRip,
 * WebVTT and transcribe-cli's detailed "report" block (cli.md §4.2). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cli.h"

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
static bool has_speakers(const struct transcribe_session *s) {
    for (int i = 0; i < transcribe_n_segments(s); i++) {
        struct transcribe_segment seg;
        transcribe_segment_init(&seg);
        if (transcribe_get_segment(s, i, &seg) == TRANSCRIBE_OK && seg.speaker_id > 0) return true;
    }
    return false;
}

/* One line per speaker turn: "[S1] text" (unattributed turns unlabelled). */
static void print_turns(FILE *f, const struct transcribe_session *s, const char *open,
                        const char *close) {
    for (int i = 0; i < transcribe_n_segments(s); i++) {
        struct transcribe_segment seg;
        transcribe_segment_init(&seg);
        if (transcribe_get_segment(s, i, &seg) != TRANSCRIBE_OK || !seg.text) continue;
        if (seg.speaker_id > 0) fprintf(f, "%sS%d%s", open, (int)seg.speaker_id, close);
        put_trimmed(f, seg.text);
        fputc('\n', f);
    }
}

void cli_print_txt(FILE *f, const struct transcribe_session *s, const char *header) {
    if (header) fprintf(f, "# %s\n", header);
    if (has_speakers(s))
        print_turns(f, s, "[", "] ");
    else
        fprintf(f, "%s\n", transcribe_full_text(s));
}

void cli_print_json(FILE *f, const struct transcribe_session *s, const char *path,
                    const char *model, double duration_s, transcribe_status st, bool tokens) {
    fputs("{\"file\":", f);
    cli_json_str(f, path);
    fputs(",\"model\":", f);
    cli_json_str(f, model);
    fputs(",\"text\":", f);
    cli_json_str(f, transcribe_full_text(s));
    fputs(",\"language\":", f);
    cli_json_str(f, transcribe_detected_language(s));
    fprintf(f, ",\"duration\":%.3f", duration_s);
    static const char *const kinds[] = {"none", "auto", "segment", "word", "token"};
    int k = (int)transcribe_returned_timestamp_kind(s);
    fprintf(f, ",\"timestamps\":\"%s\"", (k >= 0 && k <= 4) ? kinds[k] : "none");
    if (st != TRANSCRIBE_OK) {
        fputs(",\"error\":", f);
        cli_json_str(f, transcribe_status_string(st));
    }
    if (transcribe_was_truncated(s)) fputs(",\"truncated\":true", f);

    fputs(",\"segments\":[", f);
    int n = transcribe_n_segments(s);
    for (int i = 0; i < n; i++) {
        struct transcribe_segment seg;
        transcribe_segment_init(&seg);
        if (transcribe_get_segment(s, i, &seg) != TRANSCRIBE_OK || !seg.text) continue;
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

    int nw = transcribe_n_words(s);
    if (nw > 0) {
        fputs(",\"words\":[", f);
        for (int i = 0; i < nw; i++) {
            struct transcribe_word w;
            transcribe_word_init(&w);
            if (transcribe_get_word(s, i, &w) != TRANSCRIBE_OK || !w.text) continue;
            fprintf(f, "%s{\"t0_ms\":%lld,\"t1_ms\":%lld,\"text\":", i ? "," : "",
                    (long long)w.t0_ms, (long long)w.t1_ms);
            cli_json_str(f, w.text);
            fputc('}', f);
        }
        fputc(']', f);
    }
    int nt = transcribe_n_tokens(s);
    if (tokens && nt > 0) {
        fputs(",\"tokens\":[", f);
        for (int i = 0; i < nt; i++) {
            struct transcribe_token t;
            transcribe_token_init(&t);
            if (transcribe_get_token(s, i, &t) != TRANSCRIBE_OK || !t.text) continue;
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
 * whole file. A segment longer than CUE_SPLIT_MS whose word rows carry their
 * own times (Parakeet: one segment per utterance, even for an hour of audio)
 * is cut into readable cues at word boundaries: a cue ends after a pause of
 * CUE_GAP_MS, after sentence punctuation once it is CUE_MIN_MS long, or before
 * it would pass CUE_MAX_MS or CUE_MAX_CHARS. */
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
static bool word_cues(FILE *f, const struct transcribe_session *s,
                      const struct transcribe_segment *seg, int *idx, cue_fn fn) {
    if (seg->n_words < 2 || seg->t1_ms - seg->t0_ms <= CUE_SPLIT_MS) return false;
    struct transcribe_word w;
    transcribe_word_init(&w);
    if (transcribe_get_word(s, seg->first_word, &w) != TRANSCRIBE_OK) return false;
    if (w.t0_ms == seg->t0_ms && w.t1_ms == seg->t1_ms) return false;
    char text[4 * CUE_MAX_CHARS + 512];
    size_t len = 0;
    int64_t c0 = 0, c1 = 0;
    bool open = false, sentence = false;
    for (int i = seg->first_word; i < seg->first_word + seg->n_words; i++) {
        transcribe_word_init(&w);
        if (transcribe_get_word(s, i, &w) != TRANSCRIBE_OK || !w.text) continue;
        const char *t = w.text;
        while (is_space(*t)) t++;
        size_t wl = strlen(t);
        if (!wl) continue;
        if (open && (w.t0_ms - c1 >= CUE_GAP_MS || w.t1_ms - c0 > CUE_MAX_MS ||
                     len + 1 + wl > CUE_MAX_CHARS || (sentence && c1 - c0 >= CUE_MIN_MS))) {
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

static void for_each_cue(FILE *f, const struct transcribe_session *s, double duration_s,
                         cue_fn fn) {
    int n = transcribe_n_segments(s);
    if (transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_NONE || n == 0) {
        const char *text = transcribe_full_text(s);
        if (*text) fn(f, 1, 0, (int64_t)llround(duration_s * 1000.0), text);
        return;
    }
    int idx = 1;
    for (int i = 0; i < n; i++) {
        struct transcribe_segment seg;
        transcribe_segment_init(&seg);
        if (transcribe_get_segment(s, i, &seg) != TRANSCRIBE_OK || !seg.text) continue;
        const char *t = seg.text;
        while (is_space(*t)) t++;
        if (!*t) continue;
        if (word_cues(f, s, &seg, &idx, fn)) continue;
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

void cli_print_srt(FILE *f, const struct transcribe_session *s, double duration_s) {
    for_each_cue(f, s, duration_s, srt_cue);
}

void cli_print_vtt(FILE *f, const struct transcribe_session *s, double duration_s) {
    fputs("WEBVTT\n\n", f);
    if (has_speakers(s) && transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_NONE) {
        /* untimed speaker turns: one cue over the file, a voice span per turn */
        clock_time(f, 0, '.');
        fputs(" --> ", f);
        clock_time(f, (int64_t)llround(duration_s * 1000.0), '.');
        fputc('\n', f);
        print_turns(f, s, "<v ", ">");
        fputc('\n', f);
        return;
    }
    for_each_cue(f, s, duration_s, vtt_cue);
}

/* The result block of cli.md §4.2, from `text:` on. */
void cli_print_report_result(FILE *f, const struct transcribe_session *s) {
    const char *text = transcribe_full_text(s);
    fprintf(f, "text: %s\n", *text ? text : "(empty)");
    if (transcribe_was_truncated(s)) {
        fprintf(f, "  note:      output truncated (hit the model's context/generation cap before "
                   "end-of-stream); transcript is incomplete\n");
    }
    const char *lang = transcribe_detected_language(s);
    if (*lang) fprintf(f, "detected-language: %s\n", lang);
    transcribe_timestamp_kind kind = transcribe_returned_timestamp_kind(s);
    int n = transcribe_n_segments(s);
    if (n > 0 && (kind != TRANSCRIBE_TIMESTAMPS_NONE || transcribe_n_speaker_segments(s) > 0)) {
        fprintf(f, "segments: %d\n", n);
        for (int i = 0; i < n; i++) {
            struct transcribe_segment seg;
            transcribe_segment_init(&seg);
            if (transcribe_get_segment(s, i, &seg) != TRANSCRIBE_OK || !seg.text) continue;
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
        int nw = transcribe_n_words(s);
        fprintf(f, "words: %d\n", nw);
        for (int i = 0; i < nw; i++) {
            struct transcribe_word w;
            transcribe_word_init(&w);
            if (transcribe_get_word(s, i, &w) != TRANSCRIBE_OK || !w.text) continue;
            fprintf(f, "  [%7.2f -> %7.2f] %s\n", (double)w.t0_ms / 1000.0,
                    (double)w.t1_ms / 1000.0, w.text);
        }
    }
    if (kind == TRANSCRIBE_TIMESTAMPS_TOKEN) {
        int nt = transcribe_n_tokens(s);
        fprintf(f, "tokens: %d\n", nt);
        for (int i = 0; i < nt; i++) {
            struct transcribe_token t;
            transcribe_token_init(&t);
            if (transcribe_get_token(s, i, &t) != TRANSCRIBE_OK || !t.text) continue;
            fprintf(f, "  [%7.2f -> %7.2f] p=%.3f %s\n", (double)t.t0_ms / 1000.0,
                    (double)t.t1_ms / 1000.0, (double)t.p, t.text);
        }
    }
}
