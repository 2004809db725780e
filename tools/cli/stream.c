/* --stream: live transcription of one input as it arrives (README "Live
 * transcription"). The input is a file, a FIFO or standard input ('-'):
 * WAV read incrementally (its header first, then the data as it comes), or
 * raw mono PCM with --raw-format s16le|f32le --rate N; any other file
 * format is decoded whole first. WAV headers and samples go through the
 * library's parser (transcribe_wav_read_header: the one files and uploads
 * use), and audio is converted to the model's rate by the library's sinc
 * resampler fed as it arrives (transcribe_resampler_*: the same samples a
 * whole-file load gives), then fed to the stream as it arrives, or at
 * real-time pace with --realtime. Output: on a terminal one line rewritten
 * in place (committed text, then the tentative tail dimmed; a full line
 * moves up and stays); otherwise the newly committed words as plain
 * appended lines; with -f json one JSON object per line per change; with
 * -f srt|vtt the stream's cues once it ends. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define READ_MS      100 /* default read / feed slice */
#define UNSPACED_MAX 64  /* piped output: bytes of text without a space held back at most */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- input ---- */

typedef struct live_in {
    int fd;
    int rate;
    struct transcribe_wav_info wav; /* the sample format (raw input: one made up) */
    int64_t data_left;              /* bytes of the WAV data chunk not read yet; -1: until EOF */
    unsigned char *buf;
    size_t have, cap;
    float *whole; /* a non-WAV file decoded at once (already at the model's rate) */
    int n_whole, pos_whole;
} live_in;

/* Reads exactly n bytes (blocking on a FIFO); false at EOF or error. */
/* n bytes, or false; *got (may be NULL) says how many came before the end */
static bool read_some(int fd, void *dst, size_t n, size_t *got_out) {
    unsigned char *p = dst;
    size_t total = 0;
    bool ok = true;
    while (total < n) {
        ssize_t got = read(fd, p + total, n - total);
        if (got < 0 && errno == EINTR && !cli_interrupted()) continue;
        if (got <= 0) {
            ok = false;
            break;
        }
        total += (size_t)got;
    }
    if (got_out) *got_out = total;
    return ok;
}

static bool read_exact(int fd, void *dst, size_t n) {
    return read_some(fd, dst, n, NULL);
}

static bool reserve(live_in *in, size_t n) {
    if (in->cap >= n) return true;
    unsigned char *b = realloc(in->buf, n);
    if (!b) return false;
    in->buf = b;
    in->cap = n;
    return true;
}

/* The WAV header through the library's parser (the one files and uploads
 * go through), read as it arrives: the bytes it asks for, no more. The
 * samples it read past the header stay in in->buf. */
static bool read_wav_header(live_in *in, const char *path) {
    size_t need = 4;
    for (;;) {
        transcribe_wav_info_init(&in->wav);
        transcribe_status st =
            transcribe_wav_read_header(in->buf, in->have, false, &in->wav, &need);
        if (st != TRANSCRIBE_OK) {
            fprintf(stderr, "error: %s: not a WAV header the library accepts: %s\n", path,
                    transcribe_status_string(st));
            return false;
        }
        if (need == 0) break;
        if (!reserve(in, need)) {
            fprintf(stderr, "error: out of memory\n");
            return false;
        }
        if (!read_exact(in->fd, in->buf + in->have, need - in->have)) {
            if (cli_interrupted()) return false;
            /* the input ended inside the header: the parser names what is missing */
            transcribe_wav_info_init(&in->wav);
            transcribe_wav_read_header(in->buf, in->have, true, &in->wav, &need);
            fprintf(stderr, "error: %s: the WAV header is cut short (no samples)\n", path);
            return false;
        }
        in->have = need;
    }
    size_t off = (size_t)in->wav.data_offset, extra = in->have - off;
    memmove(in->buf, in->buf + off, extra);
    in->have = extra;
    in->rate = in->wav.sample_rate;
    in->data_left = in->wav.data_bytes;
    if (in->data_left >= 0)
        in->data_left = in->data_left > (int64_t)extra ? in->data_left - (int64_t)extra : 0;
    return true;
}

static bool open_input(const cli_opts *o, const char *path, int model_rate, live_in *in) {
    memset(in, 0, sizeof *in);
    in->data_left = -1;
    bool is_stdin = strcmp(path, "-") == 0;
    in->fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY);
    if (in->fd < 0) {
        if (!cli_interrupted()) /* Ctrl-C while a FIFO waits for its writer: said by the caller */
            fprintf(stderr, "error: cannot open '%s': %s\n", path, strerror(errno));
        return false;
    }
    if (o->raw_format) {
        bool f32 = strcmp(o->raw_format, "f32le") == 0;
        transcribe_wav_info_init(&in->wav);
        in->wav.format_tag = f32 ? 3 : 1;
        in->wav.bits_per_sample = f32 ? 32 : 16;
        in->wav.channels = 1;
        in->wav.block_align = f32 ? 4 : 2;
        in->rate = o->raw_rate > 0 ? o->raw_rate : 16000;
        return true;
    }
    struct stat sb;
    bool regular = fstat(in->fd, &sb) == 0 && S_ISREG(sb.st_mode);
    unsigned char magic[4];
    if (regular && (pread(in->fd, magic, 4, 0) != 4 ||
                    (memcmp(magic, "RIFF", 4) != 0 && memcmp(magic, "RF64", 4) != 0))) {
        /* Not WAV (FLAC, MP3, ...): decode the whole file, then feed it. */
        close(in->fd);
        in->fd = -1;
        char why[512];
        transcribe_status st =
            cli_audio_load(path, model_rate, &in->whole, &in->n_whole, why, sizeof why);
        if (st != TRANSCRIBE_OK) {
            fprintf(stderr, "error: cannot read audio '%s': %s\n", path, why);
            return false;
        }
        in->rate = model_rate;
        return true;
    }
    size_t got = 0;
    if (!reserve(in, 4)) {
        fprintf(stderr, "error: out of memory\n");
        return false;
    }
    if (!read_some(in->fd, in->buf, 4, &got) && cli_interrupted()) return false;
    if (got == 0) {
        fprintf(stderr, "error: cannot read audio '%s': %s is empty (0 bytes)\n",
                is_stdin ? "-" : path, is_stdin ? "standard input" : "the input");
        return false;
    }
    if (got < 4 || (memcmp(in->buf, "RIFF", 4) != 0 && memcmp(in->buf, "RF64", 4) != 0)) {
        fprintf(stderr,
                "error: %s is not WAV; for raw PCM pass --raw-format s16le|f32le --rate N\n",
                is_stdin ? "standard input" : path);
        return false;
    }
    in->have = 4;
    return read_wav_header(in, path);
}

static void close_input(live_in *in) {
    if (in->fd > STDIN_FILENO) close(in->fd);
    free(in->buf);
    transcribe_audio_free(in->whole);
}

/* Up to max_frames mono frames as they arrive: blocks until at least one
 * whole frame is there; 0 at the end. */
static int read_frames(live_in *in, float *out, int max_frames) {
    if (in->whole) {
        int n = in->n_whole - in->pos_whole < max_frames ? in->n_whole - in->pos_whole : max_frames;
        memcpy(out, in->whole + in->pos_whole, (size_t)n * sizeof *out);
        in->pos_whole += n;
        return n;
    }
    size_t frame = (size_t)in->wav.block_align;
    size_t want = (size_t)max_frames * frame;
    if (!reserve(in, want > in->have ? want : in->have)) return 0;
    while (in->have < frame) {
        size_t room = want - in->have;
        if (in->data_left >= 0 && (int64_t)room > in->data_left) room = (size_t)in->data_left;
        if (room == 0) return 0;
        ssize_t got = read(in->fd, in->buf + in->have, room);
        if (got < 0 && errno == EINTR) {
            if (cli_interrupted()) return 0;
            continue;
        }
        if (got <= 0) return 0;
        in->have += (size_t)got;
        if (in->data_left >= 0) in->data_left -= got;
    }
    size_t bytes = in->have / frame * frame;
    if (bytes > want) bytes = want;
    int64_t n = 0;
    if (transcribe_wav_decode_frames(&in->wav, in->buf, bytes, out, &n) != TRANSCRIBE_OK) return 0;
    memmove(in->buf, in->buf + bytes, in->have - bytes);
    in->have -= bytes;
    return (int)n;
}

/* ---- display ---- */

typedef struct view {
    bool tty, json, subtitles;
    int cols;
    size_t line_start; /* tty: committed bytes before it are on finished lines */
    size_t printed;    /* lines / json: committed bytes already written */
} view;

static int utf8_chars(const char *s, size_t n) {
    int c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* The last `chars` characters of s[0..n) (whole UTF-8 sequences). */
static const char *utf8_tail(const char *s, size_t n, int chars) {
    const char *p = s + n;
    while (p > s && chars > 0) {
        p--;
        if (((unsigned char)*p & 0xC0) != 0x80) chars--;
    }
    return p;
}

static void show(view *v, const struct transcribe_stream_text *t, int64_t input_ms, bool final) {
    const char *c = t->committed_text;
    size_t nc = (size_t)t->committed_text_bytes;
    if (v->json) {
        printf("{\"type\":\"%s\",\"t_ms\":%lld,\"committed\":", final ? "final" : "partial",
               (long long)input_ms);
        cli_json_str(stdout, v->printed <= nc ? c + v->printed : "");
        if (final) {
            printf(",\"text\":");
            cli_json_str(stdout, c);
        } else {
            printf(",\"tentative\":");
            cli_json_str(stdout, t->tentative_text);
        }
        printf("}\n");
        v->printed = nc;
    } else if (v->subtitles) {
        return; /* -f srt|vtt: the cues are printed once the stream ends */
    } else if (!v->tty) {
        /* Committed text may end inside a word (the next commit goes on
         * with it): a line holds whole words only, the rest waits for the
         * space after it or the end, so the lines read as the transcript's
         * words. (Text without spaces is let out once it runs long.) */
        size_t from = v->printed <= nc ? v->printed : nc, upto = nc;
        if (!final) {
            while (upto > from && c[upto - 1] != ' ') upto--;
            if (upto == from && nc - from > UNSPACED_MAX) upto = nc; /* ends on a whole character */
        }
        if (upto > from) {
            size_t a = from, b = upto;
            while (a < b && c[a] == ' ') a++;
            while (b > a && c[b - 1] == ' ') b--;
            if (b > a) printf("%.*s\n", (int)(b - a), c + a);
            v->printed = upto;
        }
    } else {
        /* Finished lines move up: break the committed text at a space once
         * it fills the terminal width. */
        int width = v->cols > 20 ? v->cols - 1 : 79;
        while (utf8_chars(c + v->line_start, nc - v->line_start) > width) {
            size_t brk = v->line_start, limit = v->line_start;
            int chars = 0;
            while (limit < nc && chars < width) chars += ((unsigned char)c[limit++] & 0xC0) != 0x80;
            for (size_t i = v->line_start; i < limit; i++) {
                if (c[i] == ' ') brk = i;
            }
            if (brk == v->line_start) brk = limit; /* one very long word */
            printf("\r\033[K%.*s\n", (int)(brk - v->line_start), c + v->line_start);
            v->line_start = brk < nc && c[brk] == ' ' ? brk + 1 : brk;
        }
        size_t nl = nc - v->line_start;
        printf("\r\033[K%.*s", (int)nl, c + v->line_start);
        if (final) {
            printf("\n");
        } else {
            int room = width - utf8_chars(c + v->line_start, nl);
            size_t nt = (size_t)t->tentative_text_bytes;
            if (room > 4 && nt > 0) {
                const char *tail = utf8_tail(t->tentative_text, nt, room);
                printf("\033[2m%s\033[0m", tail); /* continues the committed text */
            }
        }
    }
    fflush(stdout);
}

/* ---- the live loop ---- */

int cli_run_live(const cli_opts *o, struct transcribe_session *s,
                 const struct transcribe_run_params *rp, const char *path, FILE *out_file,
                 const char *model_path) {
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    transcribe_model_get_capabilities(transcribe_get_model(s), &caps);
    int model_rate = caps.native_sample_rate > 0 ? caps.native_sample_rate : 16000;
    if (!caps.supports_streaming && !caps.supports_window_streaming) {
        fprintf(stderr, "error: this model cannot stream\n");
        return 1;
    }
    live_in in;
    if (!open_input(o, path, model_rate, &in)) {
        close_input(&in);
        /* the first Ctrl-C while the input has not started (a pipe or FIFO
         * with no writer yet): nothing was heard, nothing to finish */
        if (cli_interrupted())
            fprintf(stderr, "error: %s: interrupted before any audio arrived\n", path);
        return 1;
    }
    int slice_ms = o->stream_chunk_ms > 0 ? o->stream_chunk_ms : READ_MS;
    int max_frames = (int)((int64_t)slice_ms * in.rate / 1000);
    if (max_frames < 1) max_frames = 1;
    /* the library's sinc resampler (transcribe_audio_load_file's), streamed */
    struct transcribe_resampler *rs = NULL;
    transcribe_status st = transcribe_resampler_init(in.rate, model_rate, &rs);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "error: %s: cannot resample %d Hz to %d Hz: %s\n", path, in.rate,
                model_rate, transcribe_status_string(st));
        close_input(&in);
        return 1;
    }
    int64_t room = transcribe_resampler_max_out(rs, max_frames); /* grows as it must */
    float *raw = malloc((size_t)max_frames * sizeof *raw);
    float *pcm = malloc((size_t)(room > 0 ? room : 1) * sizeof *pcm);
    view v = {0};
    v.json = o->format == CLI_FMT_JSON;
    v.subtitles = o->format == CLI_FMT_SRT || o->format == CLI_FMT_VTT;
    v.tty = !v.json && !v.subtitles && isatty(STDOUT_FILENO);
    struct winsize ws;
    v.cols = v.tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
    int rc = 1;
    if (!raw || !pcm) {
        fprintf(stderr, "error: out of memory\n");
        goto out;
    }
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    sp.window_fallback = true; /* any model: natively, else through the window driver */
    st = transcribe_stream_begin(s, rp, &sp);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "error: stream_begin: %s\n", transcribe_status_string(st));
        goto out;
    }
    if (!o->quiet) {
        cli_log(TRANSCRIBE_LOG_LEVEL_INFO, "stream: %s, %d Hz%s%s",
                strcmp(path, "-") ? path : "stdin", in.rate,
                in.rate != model_rate ? " (resampled)" : "", o->realtime ? ", real-time pace" : "");
    }
    double t0 = now_s(), compute = 0;
    int64_t fed = 0;
    struct transcribe_stream_update u;
    int n = 0;
    bool ended = false;
    while (!ended && !cli_interrupted()) {
        int64_t m = 0;
        n = read_frames(&in, raw, max_frames);
        ended = n <= 0; /* then the resampler's last samples */
        int64_t need = transcribe_resampler_max_out(rs, ended ? 0 : n);
        if (need > room) {
            float *grown = realloc(pcm, (size_t)need * sizeof *pcm);
            if (!grown) {
                fprintf(stderr, "error: out of memory\n");
                goto out;
            }
            pcm = grown;
            room = need;
        }
        st = ended ? transcribe_resampler_finish(rs, pcm, &m)
                   : transcribe_resampler_feed(rs, raw, n, pcm, &m);
        if (st != TRANSCRIBE_OK) {
            fprintf(stderr, "error: resampling: %s\n", transcribe_status_string(st));
            goto out;
        }
        if (m == 0) continue;
        if (o->realtime) {
            double due = t0 + (double)fed / model_rate;
            double wait = due - now_s();
            if (wait > 0) {
                struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
                nanosleep(&ts, NULL);
            }
        }
        transcribe_stream_update_init(&u);
        double c0 = now_s();
        st = transcribe_stream_feed(s, pcm, (int)m, &u);
        compute += now_s() - c0;
        fed += m;
        if (st != TRANSCRIBE_OK) {
            if (v.tty) printf("\n");
            fprintf(stderr, "error: stream_feed: %s\n", transcribe_status_string(st));
            goto out;
        }
        if (u.result_changed) {
            struct transcribe_stream_text t;
            transcribe_stream_text_init(&t);
            transcribe_stream_get_text(s, &t);
            show(&v, &t, u.input_received_ms, false);
        }
    }
    if (fed == 0 && !cli_interrupted()) {
        /* the input rule (README): no samples at all is an error, raw PCM
         * (an empty pipe, a partial frame) as a WAV with an empty data chunk */
        fprintf(stderr, "error: cannot read audio '%s': %s has no samples\n",
                strcmp(path, "-") ? path : "-", strcmp(path, "-") ? "the input" : "standard input");
        goto out;
    }
    if (cli_interrupted() && !o->quiet) {
        if (v.tty) printf("\n");
        cli_log(TRANSCRIBE_LOG_LEVEL_INFO, "interrupted: finishing the stream");
    }
    transcribe_stream_update_init(&u);
    double c0 = now_s();
    st = transcribe_stream_finalize(s, &u);
    compute += now_s() - c0;
    if (st != TRANSCRIBE_OK) {
        if (v.tty) printf("\n");
        fprintf(stderr, "error: stream_finalize: %s\n", transcribe_status_string(st));
        goto out;
    }
    struct transcribe_stream_text t;
    transcribe_stream_text_init(&t);
    transcribe_stream_get_text(s, &t);
    show(&v, &t, u.input_received_ms, true);
    if (transcribe_was_truncated(s)) {
        cli_log(TRANSCRIBE_LOG_LEVEL_WARN, "the model's output cap was reached on some window");
    }
    if (!o->quiet) {
        double audio_s = (double)fed / model_rate;
        cli_log(TRANSCRIBE_LOG_LEVEL_INFO,
                "stream: %.1f s of audio, %.1f s of compute (%.2f s per audio second), %.1f s "
                "wall",
                audio_s, compute, audio_s > 0 ? compute / audio_s : 0.0, now_s() - t0);
    }
    rc = 0;
    {
        /* the stream's result, as every front end prints it: -f srt|vtt
         * on standard output (cues need their ends: printed once the
         * stream ends), -o in the -f format, --output-dir's files. */
        double dur = (double)fed / model_rate;
        cli_result res;
        cli_result_init(&res);
        res.shape = o->shape;
        cli_source src = {s, -1, &res};
        const char *name = strcmp(path, "-") ? path : "-";
        cli_format ofmt = o->format == CLI_FMT_REPORT ? CLI_FMT_TXT : o->format;
        if (v.subtitles && !cli_emit(stdout, o->format, &src, true, name, model_path, dur,
                                     TRANSCRIBE_OK, o->json_tokens, false))
            rc = 1; /* reported once, at exit */
        if (out_file && !cli_emit(out_file, ofmt, &src, true, name, model_path, dur, TRANSCRIBE_OK,
                                  o->json_tokens, false)) {
            fprintf(stderr, "error: cannot write %s: %s\n", o->output, strerror(errno));
            rc = 1;
        }
        if (!cli_write_output_dir(o, name, &src, true, model_path, dur, TRANSCRIBE_OK)) rc = 1;
        cli_result_free(&res);
    }
out:
    free(raw);
    free(pcm);
    transcribe_resampler_free(rs);
    close_input(&in);
    return rc;
}
