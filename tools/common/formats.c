/* Output for one transcribed file: txt, JSON, SubRip and WebVTT as the
 * library renders them (transcribe_format_result, the same bytes the server
 * and the Python package print), and transcribe-cli's detailed "report"
 * block (cli.md §4.2), which is the CLI's own. */
#include <stdint.h>

#include "output.h"

static const char *end_name(int kind) {
    return kind == TRANSCRIBE_SPAN_END_PAUSE    ? "pause"
           : kind == TRANSCRIBE_SPAN_END_FORCED ? "forced"
                                                : "end";
}

/* The result block of cli.md §4.2, from `text:` on. */
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

/* The library's rendering of the session's result (transcribe_format_result):
 * the same bytes the server and the Python package print. */
static bool emit_session(FILE *f, cli_format fmt, const cli_source *src, const char *path,
                         const char *model, double duration_s, transcribe_status st, bool tokens,
                         bool header) {
    struct transcribe_format_params p;
    transcribe_format_params_init(&p);
    p.format = fmt == CLI_FMT_JSON  ? TRANSCRIBE_FORMAT_JSON
               : fmt == CLI_FMT_SRT ? TRANSCRIBE_FORMAT_SRT
               : fmt == CLI_FMT_VTT ? TRANSCRIBE_FORMAT_VTT
                                    : TRANSCRIBE_FORMAT_TXT;
    p.max_line_chars = src->r ? src->r->shape.max_chars : 0;
    p.max_cue_ms = src->r ? src->r->shape.max_cue_ms : 0;
    p.json_tokens = tokens;
    p.txt_header = header;
    p.duration_s = duration_s;
    p.file = path;
    p.model = model;
    p.run_status = st;
    char *text = NULL;
    size_t len = 0;
    if (transcribe_format_result(src->s, src->row, &p, &text, &len) != TRANSCRIBE_OK) return false;
    bool ok = fwrite(text, 1, len, f) == len;
    transcribe_format_free(text);
    return ok;
}

bool cli_emit(FILE *f, cli_format fmt, const cli_source *src, bool have_result, const char *path,
              const char *model, double duration_s, transcribe_status st, bool tokens,
              bool header) {
    if (fmt != CLI_FMT_REPORT) {
        /* JSON also without a result: it carries the error */
        if (!emit_session(f, fmt, src, path, model, duration_s, st, tokens, header)) return false;
    } else if (have_result) {
        cli_print_report_result(f, src->r);
    }
    return fflush(f) == 0 && !ferror(f);
}
