/* --stream: live transcription of one input as it arrives (README "Live
 * transcription"). The input is a file, a FIFO or standard input ('-'):
 * WAV read incrementally (its header first, then the data as it comes), or
 * raw mono PCM with --raw-format s16le|f32le --rate N; any other file
 * format is decoded whole first. Audio is converted to the model's rate
 * (linear interpolation, carried across reads) and fed as it arrives, or at
 * real-time pace with --realtime. Output: on a terminal one line rewritten
 * in place (committed text, then the tentative tail dimmed; a full line
 * moves up and stays); otherwise the newly committed text as plain
 * appended lines; with -f json one JSON object per line per change. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define READ_MS 100 /* default read / feed slice */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- input ---- */

enum { SAMPLE_S16, SAMPLE_S24, SAMPLE_S32, SAMPLE_F32 };

typedef struct live_in {
    int fd;
    int kind, channels, rate, frame_bytes;
    int64_t data_left; /* bytes of the WAV data chunk not read yet; -1: until EOF */
    unsigned char *buf;
    size_t have, cap;
    float *whole; /* a non-WAV file decoded at once (already at the model's rate) */
    int n_whole, pos_whole;
} live_in;

/* Reads exactly n bytes (blocking on a FIFO); false at EOF or error. */
static bool read_exact(int fd, void *dst, size_t n) {
    unsigned char *p = dst;
    while (n > 0) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got;
        n -= (size_t)got;
    }
    return true;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const unsigned char *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}

/* Parses the WAV header after "RIFF": up to the start of the data chunk. */
static bool read_wav_header(live_in *in, const char *path) {
    unsigned char h[8];
    if (!read_exact(in->fd, h, 8) || memcmp(h + 4, "WAVE", 4) != 0) {
        fprintf(stderr, "error: %s: not a WAV file\n", path);
        return false;
    }
    bool have_fmt = false;
    for (;;) {
        unsigned char ch[8];
        if (!read_exact(in->fd, ch, 8)) {
            fprintf(stderr, "error: %s: WAV data chunk missing\n", path);
            return false;
        }
        uint32_t size = le32(ch + 4);
        if (memcmp(ch, "data", 4) == 0) {
            if (!have_fmt) break;
            /* Piped WAV writers (arecord) cannot know the length: 0 or a
             * huge value mean "until the end". */
            in->data_left = (size == 0 || size >= 0x7FFFF000u) ? -1 : (int64_t)size;
            return true;
        }
        unsigned char fmt[40];
        size_t keep = size < sizeof fmt ? size : sizeof fmt;
        if (memcmp(ch, "fmt ", 4) == 0) {
            if (size < 16 || !read_exact(in->fd, fmt, keep)) break;
            int tag = le16(fmt), bits = le16(fmt + 14);
            if (tag == 0xFFFE && size >= 26) tag = le16(fmt + 24); /* WAVE_FORMAT_EXTENSIBLE */
            in->channels = le16(fmt + 2);
            in->rate = (int)le32(fmt + 4);
            if (tag == 1 && bits == 16)
                in->kind = SAMPLE_S16;
            else if (tag == 1 && bits == 24)
                in->kind = SAMPLE_S24;
            else if (tag == 1 && bits == 32)
                in->kind = SAMPLE_S32;
            else if (tag == 3 && bits == 32)
                in->kind = SAMPLE_F32;
            else {
                fprintf(stderr,
                        "error: %s: WAV sample format %d/%d bits is not supported live "
                        "(16/24/32-bit PCM or 32-bit float)\n",
                        path, tag, bits);
                return false;
            }
            if (in->channels < 1 || in->channels > 64 || in->rate < 1000) break;
            in->frame_bytes = in->channels * bits / 8;
            have_fmt = true;
            size -= (uint32_t)keep;
        }
        /* Skip the rest of this chunk (and its pad byte). */
        for (uint64_t skip = (uint64_t)size + (size & 1); skip > 0;) {
            unsigned char junk[512];
            size_t n = skip < sizeof junk ? (size_t)skip : sizeof junk;
            if (!read_exact(in->fd, junk, n)) {
                fprintf(stderr, "error: %s: truncated WAV header\n", path);
                return false;
            }
            skip -= n;
        }
    }
    fprintf(stderr, "error: %s: malformed WAV header\n", path);
    return false;
}

static bool open_input(const cli_opts *o, const char *path, int model_rate, live_in *in) {
    memset(in, 0, sizeof *in);
    in->data_left = -1;
    bool is_stdin = strcmp(path, "-") == 0;
    in->fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY);
    if (in->fd < 0) {
        fprintf(stderr, "error: cannot open '%s': %s\n", path, strerror(errno));
        return false;
    }
    if (o->raw_format) {
        in->kind = strcmp(o->raw_format, "f32le") == 0 ? SAMPLE_F32 : SAMPLE_S16;
        in->channels = 1;
        in->rate = o->raw_rate > 0 ? o->raw_rate : 16000;
        in->frame_bytes = in->kind == SAMPLE_F32 ? 4 : 2;
        return true;
    }
    struct stat sb;
    bool regular = fstat(in->fd, &sb) == 0 && S_ISREG(sb.st_mode);
    unsigned char magic[4];
    if (regular && (pread(in->fd, magic, 4, 0) != 4 || memcmp(magic, "RIFF", 4) != 0)) {
        /* Not WAV (FLAC, MP3, ...): decode the whole file, then feed it. */
        close(in->fd);
        in->fd = -1;
        transcribe_status st =
            transcribe_audio_load_file(path, model_rate, &in->whole, &in->n_whole);
        if (st != TRANSCRIBE_OK) {
            fprintf(stderr, "error: cannot read audio '%s': %s\n", path,
                    transcribe_status_string(st));
            return false;
        }
        in->rate = model_rate;
        return true;
    }
    if (!read_exact(in->fd, magic, 4) || memcmp(magic, "RIFF", 4) != 0) {
        fprintf(stderr,
                "error: %s is not WAV; for raw PCM pass --raw-format s16le|f32le --rate N\n",
                is_stdin ? "standard input" : path);
        return false;
    }
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
    size_t want = (size_t)max_frames * (size_t)in->frame_bytes;
    if (in->cap < want) {
        unsigned char *b = realloc(in->buf, want);
        if (!b) return 0;
        in->buf = b;
        in->cap = want;
    }
    while (in->have < (size_t)in->frame_bytes) {
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
    int n = (int)(in->have / (size_t)in->frame_bytes);
    int bps = in->frame_bytes / in->channels;
    for (int f = 0; f < n; f++) {
        const unsigned char *p = in->buf + (size_t)f * (size_t)in->frame_bytes;
        float acc = 0;
        for (int c = 0; c < in->channels; c++, p += bps) {
            switch (in->kind) {
            case SAMPLE_S16:
                acc += (float)(int16_t)le16(p) / 32768.0f;
                break;
            case SAMPLE_S24:
                acc += (float)((int32_t)((uint32_t)p[0] << 8 | (uint32_t)p[1] << 16 |
                                         (uint32_t)p[2] << 24) >>
                               8) /
                       8388608.0f;
                break;
            case SAMPLE_S32:
                acc += (float)((double)(int32_t)le32(p) / 2147483648.0);
                break;
            default: {
                uint32_t u = le32(p);
                float v;
                memcpy(&v, &u, sizeof v);
                acc += v;
            }
            }
        }
        out[f] = acc / (float)in->channels;
    }
    size_t used = (size_t)n * (size_t)in->frame_bytes;
    memmove(in->buf, in->buf + used, in->have - used);
    in->have -= used;
    return n;
}

/* ---- rate conversion: linear interpolation carried across reads ---- */

typedef struct resampler {
    double step; /* input samples per output sample */
    double pos;  /* next output position; input index -1 is `prev` */
    float prev;
    bool started;
} resampler;

/* Converts x[0..n) into out (room for n / step + 2); returns the count. */
static int resample(resampler *r, const float *x, int n, float *out) {
    if (r->step == 1.0) {
        memcpy(out, x, (size_t)n * sizeof *x);
        return n;
    }
    if (!r->started) {
        r->prev = x[0];
        r->pos = -1.0;
        r->started = true;
    }
    int m = 0;
    while (r->pos <= (double)(n - 1)) {
        int i = (int)(r->pos + 1.0) - 1; /* floor for pos >= -1 */
        double frac = r->pos - i;
        float a = i < 0 ? r->prev : x[i];
        float b = i + 1 < n ? x[i + 1] : a;
        out[m++] = a + (float)frac * (b - a);
        r->pos += r->step;
    }
    r->pos -= n;
    r->prev = x[n - 1];
    return m;
}

/* ---- display ---- */

typedef struct view {
    bool tty, json;
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
    } else if (!v->tty) {
        if (nc > v->printed || final) {
            const char *p = c + (v->printed <= nc ? v->printed : nc);
            while (*p == ' ') p++;
            if (*p) printf("%s\n", p);
            v->printed = nc;
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
                 const struct transcribe_run_params *rp, const char *path) {
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    transcribe_model_get_capabilities(transcribe_get_model(s), &caps);
    int model_rate = caps.native_sample_rate > 0 ? caps.native_sample_rate : 16000;
    if (!caps.supports_streaming) {
        fprintf(stderr, "error: this model cannot stream\n");
        return 1;
    }
    live_in in;
    if (!open_input(o, path, model_rate, &in)) {
        close_input(&in);
        return 1;
    }
    int slice_ms = o->stream_chunk_ms > 0 ? o->stream_chunk_ms : READ_MS;
    int max_frames = (int)((int64_t)slice_ms * in.rate / 1000);
    if (max_frames < 1) max_frames = 1;
    resampler rs = {(double)in.rate / model_rate, 0, 0, false};
    float *raw = malloc((size_t)max_frames * sizeof *raw);
    float *pcm =
        malloc(((size_t)max_frames * (size_t)model_rate / (size_t)in.rate + 4) * sizeof *pcm);
    view v = {0};
    v.json = o->format == CLI_FMT_JSON;
    v.tty = !v.json && isatty(STDOUT_FILENO);
    struct winsize ws;
    v.cols = v.tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
    int rc = 1;
    if (!raw || !pcm) {
        fprintf(stderr, "error: out of memory\n");
        goto out;
    }
    transcribe_status st = transcribe_stream_begin(s, rp, NULL);
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
    int n;
    while (!cli_interrupted() && (n = read_frames(&in, raw, max_frames)) > 0) {
        int m = resample(&rs, raw, n, pcm);
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
        st = transcribe_stream_feed(s, pcm, m, &u);
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
out:
    free(raw);
    free(pcm);
    close_input(&in);
    return rc;
}
