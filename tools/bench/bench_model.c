/* transcribe-bench model -m MODEL AUDIO [--threads N] [--repeat R] [--step-pairs N]
 *
 * End-to-end model benchmark through the public API (the FLOP count and
 * the decoder figures are the family's answers to its tool hooks, asked
 * through api/tool_hooks.h; no family is named here): loads the model
 * once, transcribes AUDIO R times and prints one JSON line with the
 * fastest run's stage timings, the decoded token count, real-time factor
 * and the peak resident memory of loading and transcribing (peak_rss_mb;
 * process_peak_rss_mb adds the bench's own buffers).
 *
 * Encoder efficiency: the encoder's work is counted analytically from the
 * file's hyper-parameters by the family (bench_flops.c), so the fastest encode gives an
 * achieved GFLOP/s. Beside it stands OpenBLAS cblas_sgemm (F32, same
 * thread count) on the encoder's FFN GEMM shape (K, N) over at least
 * BENCH_SGEMM_MIN_M rows (bench.h: OpenBLAS is slow on short row counts
 * and would flatter short inputs), timed between the runs (at least 3
 * calls and 100 ms after each transcription, fastest call kept) so that
 * both see the same host conditions, in a child process (probe_run) so
 * that OpenBLAS's resident buffers never count in peak_rss_mb; enc_vs_sgemm is their
 * ratio. Fields are null when the file cannot be counted or OpenBLAS is
 * absent.
 *
 * Audio-LLM families (qwen3_asr, granite_speech, moss; Granite and MOSS also
 * split encoder_ms from projector_ms, the Q-Former or the VQ adaptor, and
 * the efficiency then divides the encoder's count by encoder_ms alone) add
 * the causal-LM stages: prefill ms, ms per
 * decode step, the weight bytes one step reads and that size at the copy
 * bandwidth measured in the same run (the memory-bound floor of a step),
 * and the step probe (bench_step_probe.c): N steps alternated with copy
 * samples, the median ratio of step time to that floor (probe_*).
 *
 * Encoder-decoder families with a tr_ed_step decoder (family hook
 * ed_probe: Cohere) add the step's weight bytes, the K/V bytes it also
 * reads (cross K/V, self K/V up to its position) and the same step probe,
 * one row at the last run's final position, against the weights' floor
 * (probe_step_vs_floor) and against weights + K/V (_vs_read_floor).
 *
 * Prefill efficiency: the prompt's work counted from the decoder's
 * hyper-parameters (every layer's projections over T_prompt rows and the
 * causal attention; the head runs on the last row only and is left out)
 * gives an achieved GFLOP/s, beside OpenBLAS sgemm on the decoder's FFN
 * shape at the prompt's own row count (M = T_prompt, K = d_model,
 * N = d_ffn), timed between the runs like the encoder's baseline:
 * prefill_vs_sgemm near 1 says the prefill runs at the rate a GEMM of its
 * shape reaches on this host.
 *
 * Speculative decoding (--spec-k-drafts K): every repeat also runs with
 * spec_k_drafts = K right after the plain run (alternated, so host drift
 * hits both), and the JSON adds the fastest decode phase of each
 * (spec_decode_ms_plain / _spec: the timings' decode_ms; for the audio-LLM
 * families also the step loop alone, spec_steps_ms_*), their ratio and
 * whether every speculative text equalled the plain one. The other fields
 * stay the plain runs'. */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/tool_hooks.h"
#include "bench.h"
#include "bench_lm.h"
#include "nn/causal_lm.h"
#include "tensor/pool.h"
#include "transcribe.h"
#include "util/timer.h"

extern char **environ; /* posix_spawn's child environment: this one */

/* Causal-LM stage figures of the fastest run (audio-LLM families). */
typedef struct {
    bool have;
    double prefill_ms, step_ms;
    int n_steps, T_prompt;
    size_t step_bytes;
    double encoder_ms, projector_ms; /* < 0: not reported separately */
    tr_clm_state *lm;                /* the session's decoder state (step probe) */
    const tr_clm_hparams *hp;        /* the decoder's sizes (prefill FLOPs) */
} lm_figures;

/* The decoder's figures of the session's latest run, asked of the family
 * (its lm_stages tool hook); f->have stays false for families without a
 * causal-LM decoder. */
static void lm_capture(const struct transcribe_session *s, lm_figures *f) {
    f->encoder_ms = f->projector_ms = -1;
    tr_clm_stages st;
    if (!tr_tool_lm_stages(s, &st) || !st.dec) return;
    const tr_clm_session *dec = st.dec;
    f->have = true;
    f->prefill_ms = dec->prefill_ms;
    f->n_steps = dec->n_steps;
    f->step_ms = dec->n_steps > 0 ? dec->steps_ms / dec->n_steps : 0;
    f->T_prompt = dec->last_T_prompt;
    f->step_bytes = tr_clm_step_weight_bytes(st.hp, st.w);
    f->lm = dec->lm;
    f->hp = st.hp;
    f->encoder_ms = st.encoder_ms;
    f->projector_ms = st.projector_ms;
}

/* per transcription: at least this many calls and this much time (small
 * shapes take a few ms); the fastest call of all is kept */
#define SGEMM_CALLS  3
#define SGEMM_MIN_MS 100.0

typedef struct {
    int threads;
    float *a, *b, *c;
    int m, k, n;
    double best_ms; /* < 0 until measured */
    int calls;
} sgemm_probe;

static bool probe_init(sgemm_probe *p, int threads, const bench_enc_cost *cost) {
    memset(p, 0, sizeof *p);
    p->best_ms = -1;
    if (!cost || cost->gemm_m <= 0) return false;
    p->threads = threads;
    p->m = cost->gemm_m;
    p->k = cost->gemm_k;
    p->n = cost->gemm_n;
    return true;
}

static void probe_buffers_free(sgemm_probe *p) {
    free(p->a);
    free(p->b);
    free(p->c);
    p->a = p->b = p->c = NULL;
}

static bool probe_buffers(sgemm_probe *p) {
    p->a = malloc(sizeof(float) * (size_t)p->m * (size_t)p->k);
    p->b = malloc(sizeof(float) * (size_t)p->n * (size_t)p->k);
    p->c = malloc(sizeof(float) * (size_t)p->m * (size_t)p->n);
    if (!p->a || !p->b || !p->c) {
        probe_buffers_free(p);
        return false;
    }
    unsigned seed = 1;
    for (size_t i = 0; i < (size_t)p->m * (size_t)p->k; i++)
        p->a[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 9) * 0x1p-23f - 1.0f;
    for (size_t i = 0; i < (size_t)p->n * (size_t)p->k; i++)
        p->b[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 9) * 0x1p-23f - 1.0f;
    return true;
}

/* The probe's calls, in the child: Y [m][n] = X [m][k] · Wᵀ, W [n][k] (the
 * layout tr_linear computes); r gets the fastest call's ms (-1 without
 * OpenBLAS or memory) and the call count. */
static void probe_child(sgemm_probe *p, double r[2]) {
    bench_blas blas;
    r[0] = -1;
    r[1] = 0;
    if (!bench_blas_open(p->threads, &blas)) return;
    if (probe_buffers(p)) {
        const double start = tr_time_ms();
        for (int i = 0; i < SGEMM_CALLS || tr_time_ms() - start < SGEMM_MIN_MS; i++) {
            double t0 = tr_time_ms();
            blas.sgemm(BENCH_CBLAS_ROW_MAJOR, BENCH_CBLAS_NO_TRANS, BENCH_CBLAS_TRANS, p->m, p->n,
                       p->k, 1.0f, p->a, p->k, p->b, p->k, 0.0f, p->c, p->n);
            double ms = tr_time_ms() - t0;
            r[1]++;
            if (r[0] < 0 || ms < r[0]) r[0] = ms;
        }
        probe_buffers_free(p);
    }
    bench_blas_close(&blas);
}

/* One round of the probe, in a child process: OpenBLAS allocates its
 * buffers and starts its threads when it is loaded and keeps them for the
 * life of the process, so loaded here it stayed resident (~10 MB on a
 * 2-core host) and counted in every later run's peak RSS; the child takes
 * them with it. The host conditions are the same (the child runs between
 * the transcriptions, the parent waits). The child is this program run
 * again in its hidden sgemm-probe mode (bench_sgemm_probe_main), not a
 * fork: after a fork every page of the session that the parent wrote
 * again (its K/V caches, the buffers it keeps between runs) took a
 * copy-on-write fault, and the next timed run paid them (Moonshine base,
 * jfk: ~13 500 minor faults a run, a few µs to 60 µs each on the shared
 * VM hosts). */
static void probe_run(sgemm_probe *p) {
    if (p->m <= 0) return;
    int fd[2];
    if (pipe(fd) != 0) return;
    fflush(stdout);
    char a[4][24];
    snprintf(a[0], sizeof a[0], "%d", p->m);
    snprintf(a[1], sizeof a[1], "%d", p->k);
    snprintf(a[2], sizeof a[2], "%d", p->n);
    snprintf(a[3], sizeof a[3], "%d", p->threads);
    char *args[] = {"transcribe-bench", "sgemm-probe", a[0], a[1], a[2], a[3], NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid = -1;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0) {
        rc = posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
        if (rc == 0) rc = posix_spawn_file_actions_addclose(&fa, fd[0]);
        if (rc == 0) rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        return;
    }
    char out[128];
    size_t got = 0;
    while (got + 1 < sizeof out) {
        ssize_t k = read(fd[0], out + got, sizeof out - 1 - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    out[got] = '\0';
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    double r[2];
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        sscanf(out, "%lf %lf", &r[0], &r[1]) != 2 || r[0] < 0)
        return;
    p->calls += (int)r[1];
    if (p->best_ms < 0 || r[0] < p->best_ms) p->best_ms = r[0];
}

int bench_sgemm_probe_main(int argc, char **argv) {
    sgemm_probe p;
    const bench_enc_cost shape = {.gemm_m = argc == 5 ? atoi(argv[1]) : 0,
                                  .gemm_k = argc == 5 ? atoi(argv[2]) : 0,
                                  .gemm_n = argc == 5 ? atoi(argv[3]) : 0};
    const int threads = argc == 5 ? atoi(argv[4]) : 0;
    if (shape.gemm_m <= 0 || shape.gemm_k <= 0 || shape.gemm_n <= 0 || threads <= 0 ||
        !probe_init(&p, threads, &shape))
        return 2;
    double r[2];
    probe_child(&p, r);
    printf("%.6f %.0f\n", r[0], r[1]);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* GFLOP of a prefill of T rows: per layer the q, k, v, o, gate, up and
 * down projections of every row, and causal attention (row t scores and
 * weighs t + 1 positions in every head). */
static double prefill_gflop(const tr_clm_hparams *hp, int T) {
    const double D = hp->d_model, Q = (double)hp->n_head * hp->head_dim,
                 KV = (double)hp->n_head_kv * hp->head_dim, F = hp->d_ffn;
    const double proj = D * Q + 2.0 * D * KV + Q * D + 3.0 * D * F;
    const double attn = 2.0 * Q * ((double)T * (T + 1) / 2.0);
    return 2.0 * hp->n_layer * ((double)T * proj + attn) * 1e-9;
}

static void probe_free(sgemm_probe *p) {
    probe_buffers_free(p);
}

/* Peak RSS of the transcriptions alone: the kernel's high-water mark is
 * reset before each run (clear_refs "5", Linux 4.0+) and VmHWM read after
 * it, so neither the sgemm probe nor the copy-bandwidth buffers count.
 * False where /proc does not offer this (the process-wide peak is used). */
static bool rss_peak_reset(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static double rss_peak_mb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = atof(line + 6);
    if (f) fclose(f);
    return kb < 0 ? -1 : kb / 1024.0;
}

static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static int fail(const char *model, const char *audio, const char *what, transcribe_status st) {
    printf("{\"bench\":\"model\",\"model\":");
    json_str(model ? model : "");
    printf(",\"audio\":");
    json_str(audio ? audio : "");
    printf(",\"error\":");
    char buf[256];
    snprintf(buf, sizeof buf, "%s: %s", what, transcribe_status_string(st));
    json_str(buf);
    printf("}\n");
    return 1;
}

/* ,"enc_family":..,"enc_gflop":..,"enc_gflops":..,"sgemm_shape":"MxKxN","sgemm_gflops":..,
 * "enc_vs_sgemm":.. (min encode time; best sgemm call) */
static void print_efficiency(const bench_enc_cost *cost, const char *why, float encode_ms,
                             const sgemm_probe *p) {
    if (!cost) {
        printf(",\"enc_gflop\":null,\"enc_gflops\":null,\"enc_flops_note\":");
        json_str(why ? why : "not counted");
        printf(",\"sgemm_gflops\":null,\"enc_vs_sgemm\":null");
        return;
    }
    double enc_rate = encode_ms > 0 ? cost->gflop / (encode_ms * 1e-3) : 0.0;
    printf(",\"enc_family\":\"%s\",\"enc_windows\":%d,\"enc_gflop\":%.2f,\"enc_gflops\":%.1f",
           cost->family, cost->windows, cost->gflop, enc_rate);
    printf(",\"enc_frames\":%d,\"sgemm_shape\":\"%dx%dx%d\"", cost->frames, cost->gemm_m,
           cost->gemm_k, cost->gemm_n);
    if (p->best_ms > 0) {
        double rate = 2.0 * p->m * (double)p->k * p->n * 1e-9 / (p->best_ms * 1e-3);
        printf(",\"sgemm_calls\":%d,\"sgemm_gflops\":%.1f,\"enc_vs_sgemm\":%.3f", p->calls, rate,
               enc_rate / rate);
    } else {
        printf(",\"sgemm_gflops\":null,\"enc_vs_sgemm\":null");
    }
}

/* ,"prefill_gflop":..,"prefill_gflops":..,"prefill_sgemm_shape":"MxKxN",
 * "prefill_sgemm_gflops":..,"prefill_vs_sgemm":.. (the fastest run's
 * prefill; the best sgemm call at its shape) */
static void print_prefill(const lm_figures *lm, const sgemm_probe *p) {
    if (!lm->hp || lm->T_prompt < 1 || lm->prefill_ms <= 0) return;
    const double gflop = prefill_gflop(lm->hp, lm->T_prompt);
    const double rate = gflop / (lm->prefill_ms * 1e-3);
    printf(",\"prefill_gflop\":%.2f,\"prefill_gflops\":%.1f", gflop, rate);
    printf(",\"prefill_sgemm_shape\":\"%dx%dx%d\"", lm->T_prompt, lm->hp->d_model, lm->hp->d_ffn);
    if (p->best_ms > 0) {
        const double blas = 2.0 * p->m * (double)p->k * p->n * 1e-9 / (p->best_ms * 1e-3);
        printf(",\"prefill_sgemm_gflops\":%.1f,\"prefill_vs_sgemm\":%.3f", blas, rate / blas);
    } else {
        printf(",\"prefill_sgemm_gflops\":null,\"prefill_vs_sgemm\":null");
    }
}

/* Plain against speculative decoding (--spec-k-drafts): the fastest
 * decode phase of each. */
typedef struct {
    int k;
    double plain_ms, spec_ms;             /* timings' decode_ms */
    double plain_steps_ms, spec_steps_ms; /* the causal LM's step loop; < 0: none */
    int plain_steps, spec_steps;          /* tokens stepped (causal LM) */
    bool same_text;
} spec_cmp;

static void keep_min(double *best, double v) {
    if (v >= 0 && (*best < 0 || v < *best)) *best = v;
}

/* The latest (plain) run's figures, then one run with spec_k_drafts. */
static void spec_pair(struct transcribe_session *s, const float *pcm, int n,
                      transcribe_status plain_st, spec_cmp *c) {
    struct transcribe_timings t;
    transcribe_timings_init(&t);
    transcribe_get_timings(s, &t);
    keep_min(&c->plain_ms, t.decode_ms);
    tr_clm_stages lm;
    if (tr_tool_lm_stages(s, &lm) && lm.dec) {
        keep_min(&c->plain_steps_ms, lm.dec->steps_ms);
        c->plain_steps = lm.dec->n_steps;
    }
    char *plain = strdup(transcribe_full_text(s));
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.spec_k_drafts = c->k;
    transcribe_status st = transcribe_run(s, pcm, n, &rp);
    if (!plain || st != plain_st || strcmp(plain, transcribe_full_text(s)) != 0)
        c->same_text = false;
    free(plain);
    transcribe_timings_init(&t);
    transcribe_get_timings(s, &t);
    keep_min(&c->spec_ms, t.decode_ms);
    if (tr_tool_lm_stages(s, &lm) && lm.dec) {
        keep_min(&c->spec_steps_ms, lm.dec->steps_ms);
        c->spec_steps = lm.dec->n_steps;
    }
}

static void spec_print(const spec_cmp *c) {
    printf(",\"spec_k_drafts\":%d,\"spec_decode_ms_plain\":%.1f,\"spec_decode_ms_spec\":%.1f,"
           "\"spec_speedup\":%.3f",
           c->k, c->plain_ms, c->spec_ms, c->spec_ms > 0 ? c->plain_ms / c->spec_ms : 0.0);
    if (c->plain_steps_ms >= 0 && c->spec_steps_ms >= 0)
        printf(",\"spec_steps_ms_plain\":%.1f,\"spec_steps_ms_spec\":%.1f,"
               "\"spec_steps_speedup\":%.3f,\"spec_n_steps\":[%d,%d]",
               c->plain_steps_ms, c->spec_steps_ms,
               c->spec_steps_ms > 0 ? c->plain_steps_ms / c->spec_steps_ms : 0.0, c->plain_steps,
               c->spec_steps);
    printf(",\"spec_same_text\":%s", c->same_text ? "true" : "false");
}

int bench_model(int argc, char **argv) {
    const char *model = NULL, *audio = NULL;
    int threads = 0, repeat = 1, step_pairs = 16, spec_k = 0;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) && i + 1 < argc) {
            model = argv[++i];
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
            repeat = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--step-pairs") && i + 1 < argc) {
            step_pairs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--spec-k-drafts") && i + 1 < argc) {
            spec_k = atoi(argv[++i]);
        } else if (argv[i][0] != '-' && !audio) {
            audio = argv[i];
        } else {
            fprintf(stderr, "usage: transcribe-bench model -m MODEL AUDIO [--threads N] "
                            "[--repeat R] [--step-pairs N] [--spec-k-drafts K]\n");
            return 2;
        }
    }
    if (!model || !audio) {
        fprintf(stderr, "usage: transcribe-bench model -m MODEL AUDIO [--threads N] [--repeat R] "
                        "[--step-pairs N] [--spec-k-drafts K]\n");
        return 2;
    }
    if (threads < 0) threads = 0;
    if (repeat < 1) repeat = 1;
    transcribe_log_set(NULL, NULL); /* stdout carries exactly one JSON line */

    struct transcribe_session *s = NULL;
    transcribe_status st = bench_open(model, threads, &s);
    if (st != TRANSCRIBE_OK) return fail(model, audio, "open", st);
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    transcribe_model_get_capabilities(m, &caps);
    int rate = caps.native_sample_rate > 0 ? caps.native_sample_rate : 16000;
    float *pcm = NULL;
    int n = 0;
    st = transcribe_audio_load_file(audio, rate, &pcm, &n);
    if (st != TRANSCRIBE_OK) {
        transcribe_session_free(s);
        return fail(model, audio, "audio", st);
    }

    const char *why = NULL;
    bench_enc_cost cost;
    const bool counted = bench_enc_cost_of(m, n, &cost, &why);
    sgemm_probe probe;
    int blas_threads = threads;
    if (blas_threads <= 0) {
        long nproc = sysconf(_SC_NPROCESSORS_ONLN);
        blas_threads = nproc > 0 ? (int)nproc : 1;
    }
    probe_init(&probe, blas_threads, counted ? &cost : NULL);
    sgemm_probe pre_probe; /* the prefill's baseline, set up once T_prompt is known */
    memset(&pre_probe, 0, sizeof pre_probe);
    pre_probe.best_ms = -1;
    bool pre_probe_set = false;

    struct transcribe_timings best;
    transcribe_timings_init(&best);
    double best_total = -1;
    float best_encode_ms = 0;
    int n_tokens = 0;
    lm_figures lm = {0};
    const char *tok_source = "rows";
    double run_rss_mb = -1; /* load and runs, not the probe: rss_peak_reset */
    bool rss_tracked = true;
    spec_cmp spec = {.k = spec_k > 0 ? spec_k : 0,
                     .plain_ms = -1,
                     .spec_ms = -1,
                     .plain_steps_ms = -1,
                     .spec_steps_ms = -1,
                     .same_text = true};
    for (int r = 0; r < repeat; r++) {
        if (r > 0) rss_tracked = rss_tracked && rss_peak_reset();
        st = transcribe_run(s, pcm, n, NULL);
        const double hwm = rss_peak_mb();
        if (hwm < 0) rss_tracked = false;
        if (hwm > run_rss_mb) run_rss_mb = hwm;
        if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) break;
        struct transcribe_timings t;
        transcribe_timings_init(&t);
        transcribe_get_timings(s, &t);
        double total = (double)t.mel_ms + (double)t.encode_ms + (double)t.decode_ms;
        if (best_total < 0 || total < best_total) {
            best_total = total;
            best = t;
            lm_capture(s, &lm);
        }
        /* the encoder alone where the family splits off its projector */
        lm_figures cur = {0};
        lm_capture(s, &cur);
        const float enc_ms = cur.encoder_ms >= 0 ? (float)cur.encoder_ms : t.encode_ms;
        if (r == 0 || enc_ms < best_encode_ms) best_encode_ms = enc_ms;
        probe_run(&probe);
        if (cur.have && cur.hp && !pre_probe_set) {
            const bench_enc_cost shape = {
                .gemm_m = cur.T_prompt, .gemm_k = cur.hp->d_model, .gemm_n = cur.hp->d_ffn};
            pre_probe_set = probe_init(&pre_probe, blas_threads, &shape);
        }
        if (pre_probe_set) probe_run(&pre_probe);
        /* last: it reads this plain run's figures, then runs again */
        if (spec.k > 0) spec_pair(s, pcm, n, st, &spec);
    }
    transcribe_audio_free(pcm);
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
        probe_free(&probe);
        probe_free(&pre_probe);
        transcribe_session_free(s);
        return fail(model, audio, "run", st);
    }
    n_tokens = transcribe_n_tokens(s);
    if (n_tokens == 0 && *transcribe_full_text(s)) {
        /* Families that report no token rows (whisper: segment timestamps
         * only): count the transcript's tokens instead. */
        int k = transcribe_tokenize(m, transcribe_full_text(s), NULL, 0);
        if (k != INT_MIN) {
            n_tokens = k < 0 ? -k : k;
            tok_source = "tokenize";
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double audio_ms = 1000.0 * (double)n / (double)rate;

    printf("{\"bench\":\"model\",\"model\":");
    json_str(model);
    printf(",\"arch\":");
    json_str(transcribe_model_arch_string(m));
    printf(",\"audio\":");
    json_str(audio);
    printf(",\"audio_s\":%.3f,\"threads\":%d,\"repeat\":%d,\"load_ms\":%.1f", audio_ms / 1000.0,
           threads, repeat, (double)best.load_ms);
    printf(",\"mel_ms\":%.1f,\"encode_ms\":%.1f,\"decode_ms\":%.1f", (double)best.mel_ms,
           (double)best.encode_ms, (double)best.decode_ms);
    printf(",\"n_tokens\":%d,\"n_tokens_source\":\"%s\",\"ms_per_token\":%.2f", n_tokens,
           tok_source, n_tokens > 0 ? (double)best.decode_ms / n_tokens : 0.0);
    const double process_rss_mb = (double)ru.ru_maxrss / 1024.0;
    printf(",\"rtf\":%.4f,\"peak_rss_mb\":%.1f,\"process_peak_rss_mb\":%.1f",
           audio_ms > 0 ? best_total / audio_ms : 0.0, rss_tracked ? run_rss_mb : process_rss_mb,
           process_rss_mb);
    if (lm.have) {
        /* the step's floor: its weight bytes at the copy bandwidth measured
         * on the same pool right after the runs (after peak RSS was read,
         * so the copy buffers do not count) */
        double bw = bench_copy_gbps(tr_tool_session_pool(s), 5);
        double ideal = bw > 0 ? (double)lm.step_bytes / (bw * 1e6) : 0;
        printf(",\"T_prompt\":%d,\"prefill_ms\":%.1f,\"n_steps\":%d,\"step_ms\":%.2f", lm.T_prompt,
               lm.prefill_ms, lm.n_steps, lm.step_ms);
        printf(",\"step_weight_mb\":%.1f,\"copy_gbps\":%.2f,\"step_floor_ms\":%.2f,"
               "\"step_vs_floor\":%.3f",
               (double)lm.step_bytes / 1048576.0, bw, ideal, ideal > 0 ? lm.step_ms / ideal : 0.0);
        /* the same step alternated with copy samples (the bandwidth of
         * this host drifts between seconds): the last run's final position */
        bench_step_probe sp;
        const int pos = lm.T_prompt + (lm.n_steps > 0 ? lm.n_steps - 1 : 0);
        if (step_pairs > 0 && lm.lm &&
            bench_step_probe_run(lm.lm, tr_tool_session_pool(s), pos, lm.step_bytes, step_pairs,
                                 &sp))
            printf(",\"probe_pairs\":%d,\"probe_step_ms\":%.2f,\"probe_copy_gbps\":%.2f,"
                   "\"probe_step_vs_floor\":%.3f,\"probe_step_vs_floor_min\":%.3f",
                   sp.pairs, sp.step_ms, sp.copy_gbps, sp.ratio, sp.ratio_min);
        if (lm.encoder_ms >= 0)
            printf(",\"encoder_ms\":%.1f,\"projector_ms\":%.1f", lm.encoder_ms, lm.projector_ms);
        print_prefill(&lm, &pre_probe);
    }
    tr_ed_probe ed;
    if (!lm.have && tr_tool_ed_probe(s, &ed)) {
        /* an encoder-decoder decoder (tr_ed_step): the last run's ms per
         * generated token (prefill included) and the probe's step, one row
         * at the last run's final position, against its weight bytes */
        const size_t bytes = tr_ed_step_weight_bytes(ed.dec);
        /* what the step also has to read: every layer's cross K/V (F32,
         * or half floats) and its self K/V up to the probe's position */
        const size_t L = (size_t)ed.dec->n_layers, D = (size_t)ed.dec->dims.d_model;
        const size_t kv = L * D * 2 *
                          ((size_t)ed.seq.n_src * (ed.seq.ck16 ? 2 : sizeof(float)) +
                           (size_t)(ed.seq.n_past + 1) * (ed.seq.kv->f16 ? 2 : sizeof(float)));
        bench_step_probe sp;
        printf(",\"step_weight_mb\":%.1f,\"step_kv_mb\":%.1f,\"probe_pos\":%d",
               (double)bytes / 1048576.0, (double)kv / 1048576.0, ed.seq.n_past);
        if (step_pairs > 0 &&
            bench_ed_step_probe_run(&ed, tr_tool_session_pool(s), bytes, step_pairs, &sp))
            printf(",\"probe_pairs\":%d,\"probe_step_ms\":%.2f,\"probe_copy_gbps\":%.2f,"
                   "\"probe_step_vs_floor\":%.3f,\"probe_step_vs_floor_min\":%.3f,"
                   "\"probe_step_vs_read_floor\":%.3f",
                   sp.pairs, sp.step_ms, sp.copy_gbps, sp.ratio, sp.ratio_min,
                   sp.ratio * (double)bytes / (double)(bytes + kv));
    }
    if (!lm.have && counted && cost.dec_step_mb > 0 && n_tokens > 0) {
        /* an encoder-decoder family's greedy step (its enc_cost counts the
         * bytes a step reads): decoder passes = tokens, plus the EOS step
         * when the run ended at EOS; the decode stage over them */
        const int passes = n_tokens + (st == TRANSCRIBE_OK ? 1 : 0);
        const double step_ms = (double)best.decode_ms / passes;
        const double bw = bench_copy_gbps(tr_tool_session_pool(s), 5);
        const double ideal = bw > 0 ? cost.dec_step_mb * 1048576.0 / (bw * 1e6) : 0;
        printf(",\"n_steps\":%d,\"step_ms\":%.2f,\"step_mb\":%.1f,\"copy_gbps\":%.2f,"
               "\"step_floor_ms\":%.2f,\"step_vs_floor\":%.3f",
               passes, step_ms, cost.dec_step_mb, bw, ideal, ideal > 0 ? step_ms / ideal : 0.0);
    }
    print_efficiency(counted ? &cost : NULL, why, best_encode_ms, &probe);
    if (spec.k > 0) spec_print(&spec);
    printf("}\n");
    probe_free(&probe);
    probe_free(&pre_probe);
    transcribe_session_free(s);
    return 0;
}
