/* --batch mode (docs/cli.md §4.4 human output, §4.5 JSON Lines): one model, one
 * session, many files; serial transcribe_run per file, or groups of
 * --batch-size utterances per transcribe_run_batch. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "reason.h"

typedef struct {
    char **paths;
    int n, cap;
} path_list;

static void free_list(path_list *l) {
    for (int i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
}

/* One path per line; trailing blanks/CR stripped, empty lines and lines
 * whose first non-blank character is '#' (comments) skipped. */
static int read_list(const char *file, path_list *l) {
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "error: cannot open batch file %s: %s\n", file, strerror(errno));
        return 1;
    }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
                         line[n - 1] == '\t')) {
            line[--n] = '\0';
        }
        /* blanks around a path are the list's layout, not the name's */
        const char *first = line + strspn(line, " \t");
        n -= (size_t)(first - line);
        if (n == 0 || *first == '#') continue;
        if (l->n == l->cap) {
            int nc = l->cap ? l->cap * 2 : 16;
            char **p = realloc(l->paths, (size_t)nc * sizeof *p);
            if (!p) goto oom;
            l->paths = p;
            l->cap = nc;
        }
        l->paths[l->n] = malloc(n + 1);
        if (!l->paths[l->n]) goto oom;
        memcpy(l->paths[l->n++], first, n + 1);
    }
    fclose(f);
    if (l->n == 0) {
        fprintf(stderr, "error: batch file is empty\n");
        return 1;
    }
    return 0;
oom:
    fclose(f);
    fprintf(stderr, "error: out of memory reading the batch list %s\n", file);
    return 1;
}

typedef struct {
    int ok, truncated, failed;
    bool write_error;
} tally;

static int native_rate(const struct transcribe_session *s) {
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    if (transcribe_model_get_capabilities(transcribe_get_model(s), &caps) != TRANSCRIBE_OK ||
        caps.native_sample_rate <= 0) {
        return 16000;
    }
    return caps.native_sample_rate;
}

/* --output-dir: utterance i's files, from the same result rows the
 * single-file path prints (times clamped into the audio). */
static void write_dir(const cli_opts *o, const struct transcribe_session *s, int i,
                      const char *path, const char *model, double duration_s, transcribe_status st,
                      tally *t) {
    if (!o->output_dir) return;
    bool have = st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
                st == TRANSCRIBE_ERR_ABORTED;
    cli_result res;
    cli_result_init(&res);
    if (have) cli_result_copy(&res, s, i);
    cli_result_clamp(&res, (int64_t)(duration_s * 1000.0 + 0.5));
    res.shape = o->shape;
    cli_source src = {s, i, &res};
    if (res.oom || !cli_write_output_dir(o, path, &src, have, model, duration_s, st)) {
        t->write_error = true;
    }
    cli_result_free(&res);
}

/* -f json|srt|vtt: utterance `row` (-1: the single run) as the library
 * prints it, the bytes a run of that file alone prints, to stdout and -o. */
static bool emit_format(const cli_opts *o, const struct transcribe_session *s, int row,
                        const char *path, const char *model, double duration_s,
                        transcribe_status st, FILE *out_file, tally *t) {
    if (o->batch_jsonl ||
        (o->format != CLI_FMT_JSON && o->format != CLI_FMT_SRT && o->format != CLI_FMT_VTT)) {
        return false;
    }
    cli_result res;
    cli_result_init(&res);
    res.shape = o->shape;
    cli_source src = {s, row, &res};
    bool have = st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    if (!cli_emit(stdout, o->format, &src, have, path, model, duration_s, st, o->json_tokens,
                  false)) {
        t->write_error = true;
    }
    if (out_file && !cli_emit(out_file, o->format, &src, have, path, model, duration_s, st,
                              o->json_tokens, false)) {
        fprintf(stderr, "error: cannot write %s\n", o->output);
        t->write_error = true;
    }
    cli_result_free(&res);
    return true;
}

/* Why utterance i failed in words beyond its status (row: i, or -1 for a
 * single run), as the tools show a library reason; NULL when the library
 * gave none. */
static const char *fail_reason(const struct transcribe_session *s, int i, int row,
                               transcribe_status st) {
    const char *why =
        tool_reason(row >= 0 ? transcribe_batch_error(s, i) : transcribe_session_last_error(s));
    return why && why[0] && strcmp(why, transcribe_status_string(st)) != 0 ? why : NULL;
}

/* Prints utterance i of the latest run/batch (row: i, or -1 for a single
 * run; duration_s: its audio's length). */
static void report(const cli_opts *o, const struct transcribe_session *s, int i, int row,
                   const char *model, double duration_s, const char *path, int k, int n,
                   transcribe_status st, FILE *out_file, tally *t) {
    const char *text = transcribe_batch_full_text(s, i);
    if (st == TRANSCRIBE_OK)
        t->ok++;
    else if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
        t->truncated++;
    else
        t->failed++;
    if (emit_format(o, s, row, path, model, duration_s, st, out_file, t)) return;
    if (o->batch_jsonl) {
        fputs("{\"file\":", stdout);
        cli_json_str(stdout, path);
        fputs(",\"text\":", stdout);
        cli_json_str(stdout, text);
        int nseg = transcribe_batch_n_segments(s, i);
        int nspk = transcribe_batch_n_speaker_segments(s, i);
        if (nseg > 0 &&
            (transcribe_batch_returned_timestamp_kind(s, i) != TRANSCRIBE_TIMESTAMPS_NONE ||
             nspk > 0)) {
            fputs(",\"segments\":[", stdout);
            for (int j = 0; j < nseg; j++) {
                struct transcribe_segment seg;
                transcribe_segment_init(&seg);
                transcribe_batch_get_segment(s, i, j, &seg);
                /* on the audio's clock, as every other output (a CTC
                 * model's last frame may end past the audio) */
                const int64_t end = (int64_t)(duration_s * 1000.0 + 0.5);
                const int64_t t0 = seg.t0_ms < end ? seg.t0_ms : end;
                const int64_t t1 = seg.t1_ms < end ? seg.t1_ms : end;
                fprintf(stdout, "%s{\"t0_ms\":%lld,\"t1_ms\":%lld,", j ? "," : "", (long long)t0,
                        (long long)(t1 > t0 ? t1 : t0));
                if (seg.speaker_id > 0) fprintf(stdout, "\"speaker_id\":%d,", (int)seg.speaker_id);
                fputs("\"text\":", stdout);
                cli_json_str(stdout, seg.text ? seg.text : "");
                fputc('}', stdout);
            }
            fputc(']', stdout);
        }
        const char *raw = transcribe_batch_raw_text(s, i);
        if (*raw && strcmp(raw, text) != 0) {
            fputs(",\"raw_text\":", stdout);
            cli_json_str(stdout, raw);
        }
        struct transcribe_timings tm;
        transcribe_timings_init(&tm);
        if (o->batch_size > 1) {
            transcribe_batch_get_timings(s, i, &tm);
        } else {
            transcribe_get_timings(s, &tm);
        }
        fprintf(stdout, ",\"mel_ms\":%.1f,\"encode_ms\":%.1f,\"decode_ms\":%.1f", (double)tm.mel_ms,
                (double)tm.encode_ms, (double)tm.decode_ms);
        if (st != TRANSCRIBE_OK) {
            fputs(",\"error\":", stdout);
            cli_json_str(stdout, transcribe_status_string(st));
            const char *why =
                st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED ? fail_reason(s, i, row, st) : NULL;
            if (why) {
                fputs(",\"reason\":", stdout);
                cli_json_str(stdout, why);
            }
        }
        fputs("}\n", stdout);
    } else if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
        printf("[%d/%d] %s%s\n  text: %s\n", k, n, path, st == TRANSCRIBE_OK ? "" : "  (truncated)",
               text);
    } else {
        const char *why = fail_reason(s, i, row, st);
        printf("[%d/%d] %s  ERROR: %s%s%s\n", k, n, path, transcribe_status_string(st),
               why ? ": " : "", why ? why : "");
    }
    if (out_file) {
        const char *w = (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) ? text : "";
        if (!cli_write_text_file(out_file, o->output, w)) t->write_error = true;
    }
}

static void wav_failure(const cli_opts *o, const char *path, const char *why, tally *t) {
    t->failed++;
    if (o->batch_jsonl) {
        fputs("{\"file\":", stdout);
        cli_json_str(stdout, path);
        fputs(",\"text\":\"\",\"error\":", stdout);
        char msg[600];
        snprintf(msg, sizeof msg, "wav: %s", why);
        cli_json_str(stdout, msg);
        fputs("}\n", stdout);
    } else {
        fprintf(stderr, "SKIP %s: %s\n", path, why);
    }
}

int cli_run_batch(const cli_opts *o, struct transcribe_session *s,
                  const struct transcribe_run_params *rp, FILE *out_file, const char *model_path) {
    const char *model = model_path ? model_path : ""; /* JSON's "model", as a single run */
    path_list l = {0};
    if (read_list(o->batch_file, &l) != 0) {
        free_list(&l);
        return 1;
    }
    /* as for several inputs on the command line (args.c): one stream of
     * subtitles would restart its cue numbers at every input */
    if ((o->format == CLI_FMT_SRT || o->format == CLI_FMT_VTT) && l.n > 1) {
        fprintf(stderr,
                "error: -f %s prints one input's cues; the --batch list has %d inputs: use "
                "--output-dir DIR --output-format %s (one DIR/<name>.%s per input)\n",
                o->format == CLI_FMT_SRT ? "srt" : "vtt", l.n,
                o->format == CLI_FMT_SRT ? "srt" : "vtt", o->format == CLI_FMT_SRT ? "srt" : "vtt");
        free_list(&l);
        return 1;
    }
    if (cli_output_dir_refused(o, (const char *const *)l.paths, l.n)) {
        free_list(&l);
        return 1;
    }
    if (!o->batch_jsonl && !o->quiet) fprintf(stderr, "batch: %d files\n", l.n);
    if (o->batch_jsonl) {
        struct transcribe_timings tm;
        transcribe_timings_init(&tm);
        transcribe_get_timings(s, &tm);
        printf("{\"type\":\"batch_header\",\"load_ms\":%.1f}\n", (double)tm.load_ms);
    }
    int rate = native_rate(s);
    int group = o->batch_size > 1 ? o->batch_size : 1;
    tally t = {0};
    float **pcm = calloc((size_t)group, sizeof *pcm);
    int *ns = calloc((size_t)group, sizeof *ns);
    const char **names = calloc((size_t)group, sizeof *names);
    int *ks = calloc((size_t)group, sizeof *ks);
    if (!pcm || !ns || !names || !ks) {
        fprintf(stderr, "error: out of memory\n");
        free(pcm), free(ns), free(names), free(ks), free_list(&l);
        return 1;
    }
    for (int start = 0; start < l.n; start += group) {
        int m = 0;
        for (int i = start; i < l.n && i < start + group; i++) {
            float *p = NULL;
            int n = 0;
            if (cli_input_cut_short(l.paths[i])) { /* the server's rule too (wav_cut.h) */
                wav_failure(o, l.paths[i], CLI_WAV_CUT_SHORT_MSG, &t);
                continue;
            }
            char why[512];
            transcribe_status st = cli_audio_load(l.paths[i], rate, &p, &n, why, sizeof why);
            if (st != TRANSCRIBE_OK) {
                wav_failure(o, l.paths[i], why, &t);
                continue;
            }
            pcm[m] = p;
            ns[m] = n;
            names[m] = l.paths[i];
            ks[m] = i + 1;
            m++;
        }
        if (m == 0) continue;
        if (group == 1) {
            transcribe_status st = transcribe_run(s, pcm[0], ns[0], rp);
            report(o, s, 0, -1, model, (double)ns[0] / rate, names[0], ks[0], l.n, st, out_file,
                   &t);
            write_dir(o, s, -1, names[0], model, (double)ns[0] / rate, st, &t);
        } else {
            transcribe_status st = transcribe_run_batch(s, (const float *const *)pcm, ns, m, rp);
            if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED) {
                for (int j = 0; j < m; j++) {
                    report(o, s, j, j, model, (double)ns[j] / rate, names[j], ks[j], l.n,
                           transcribe_batch_status(s, j), out_file, &t);
                    write_dir(o, s, j, names[j], model, (double)ns[j] / rate,
                              transcribe_batch_status(s, j), &t);
                }
            } else {
                for (int j = 0; j < m; j++) {
                    t.failed++;
                    if (o->batch_jsonl) {
                        fputs("{\"file\":", stdout);
                        cli_json_str(stdout, names[j]);
                        fputs(",\"text\":\"\",\"error\":", stdout);
                        cli_json_str(stdout, transcribe_status_string(st));
                        fputs("}\n", stdout);
                    }
                }
            }
        }
        for (int j = 0; j < m; j++) transcribe_audio_free(pcm[j]);
        fflush(stdout);
    }
    if (!o->batch_jsonl && (!o->quiet || t.failed > 0)) {
        fprintf(stderr, "batch: %d ok, %d truncated, %d failed out of %d\n", t.ok, t.truncated,
                t.failed, l.n);
    }
    free(pcm), free(ns), free(names), free(ks), free_list(&l);
    return (t.failed > 0 || t.write_error) ? 1 : 0;
}
