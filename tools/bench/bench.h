/* Subcommands of transcribe-bench. Each prints one JSON object per line on
 * stdout and returns a process exit code. argv[0] is the subcommand. */
#ifndef TR_TOOLS_BENCH_H
#define TR_TOOLS_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "transcribe.h"

int bench_kernels(int argc, char **argv);
int bench_frontend(int argc, char **argv);
int bench_model(int argc, char **argv);
/* The hidden mode `sgemm-probe M K N THREADS` (bench_model.c): the model
 * bench's OpenBLAS probe in a process of its own; prints the fastest
 * call's ms and the call count. */
int bench_sgemm_probe_main(int argc, char **argv);
int bench_llm_batch(int argc, char **argv); /* bench_llm_batch.c */
int bench_batch(int argc, char **argv);     /* bench_batch.c: batched vs serial throughput */
int bench_server(int argc, char **argv);    /* bench_server.c: load on transcribe-server */
int bench_vad(int argc, char **argv);
int bench_stream(int argc, char **argv);
int bench_fallback(int argc, char **argv); /* bench_fallback.c: Whisper's fallback tiers */

/* ---- command-line options (bench_opts.c) ---- */

typedef enum { BENCH_OPT_STR, BENCH_OPT_INT, BENCH_OPT_DBL } bench_opt_kind;

/* An option that takes the next word as its value: name (and alias, may be
 * NULL) → *out as a const char *, int (atoi) or double (atof). */
typedef struct {
    const char *name, *alias;
    bench_opt_kind kind;
    void *out;
} bench_opt;

/* Parses argv[1..argc) against n_opts options; words not starting with '-'
 * are positional, kept in pos (capacity max_pos, *n_pos of them). false at
 * the first word that is neither (an unknown option, one without its
 * value, one positional too many), with *bad pointing at it. */
bool bench_parse_args(int argc, char **argv, const bench_opt *opts, int n_opts, const char **pos,
                      int max_pos, int *n_pos, const char **bad);

/* Opens model in a session of n_threads threads (0: the library's
 * default); the caller reports a failure its own way. */
transcribe_status bench_open(const char *model, int n_threads, struct transcribe_session **out);

/* ---- copy bandwidth and medians (bench_copy.c) ---- */

struct tr_pool;

/* Source and destination of a STREAM-style copy, 128 MiB each. */
typedef struct {
    float *dst;
    const float *src;
    size_t n;
} bench_copy;

bool bench_copy_init(bench_copy *c); /* false on OOM (nothing held) */
void bench_copy_free(bench_copy *c);
/* One copy on the pool: bytes read + written per second, GB/s. */
double bench_copy_sample(struct tr_pool *pool, bench_copy *c);
/* The best of reps samples. */
double bench_copy_best(struct tr_pool *pool, bench_copy *c, int reps);
/* The same with buffers of its own (allocated and freed here); 0 on OOM. */
double bench_copy_gbps(struct tr_pool *pool, int reps);

/* Median of v[0..n) (sorts v); 0 when n < 1. */
double bench_median(double *v, int n);

/* ---- OpenBLAS baseline (bench_blas.c) ---- */

enum { BENCH_CBLAS_ROW_MAJOR = 101, BENCH_CBLAS_NO_TRANS = 111, BENCH_CBLAS_TRANS = 112 };

typedef void (*bench_sgemm_fn)(int order, int ta, int tb, int M, int N, int K, float alpha,
                               const float *A, int lda, const float *B, int ldb, float beta,
                               float *C, int ldc);

typedef struct {
    void *handle;
    bench_sgemm_fn sgemm; /* cblas_sgemm; NULL when OpenBLAS is absent */
} bench_blas;

/* dlopens OpenBLAS and sets its thread count (when threads > 0); false
 * (and b->sgemm NULL) when it is not installed. */
bool bench_blas_open(int threads, bench_blas *b);
void bench_blas_close(bench_blas *b);

/* ---- analytic encoder cost (bench_flops.c) ---- */

typedef struct {
    const char *family;         /* the encoder counted: "whisper", "parakeet", ... */
    double gflop;               /* encoder GFLOP for the whole input (GEMMs, attention, convs) */
    int windows;                /* encoder passes counted */
    int frames;                 /* encoder frames of the first window */
    int gemm_m, gemm_k, gemm_n; /* the sgemm baseline: the encoder's FFN (K = d_model,
                                   N = d_ff) over M = max(frames, BENCH_SGEMM_MIN_M) rows */
    double dec_step_mb;         /* an encoder-decoder step's bytes read, MB (0: not counted) */
} bench_enc_cost;

/* Fewest rows the sgemm baseline runs on. OpenBLAS's rate falls steeply
 * below about a thousand rows (on the 2-core AVX2 host, 138 rows, a
 * Parakeet encoder on 11 s of audio, reach ~0.6 of its 1500-row rate), so
 * comparing a short input's encoder with sgemm on its own row count
 * measured our encoder against a handicapped baseline. 1500 is Whisper's
 * window, where OpenBLAS is at its sustained rate. */
#define BENCH_SGEMM_MIN_M 1500

/* Counts the encoder's floating-point work (2 per multiply-add) for
 * n_samples of audio, as the model's family counts it from its file's
 * hyper-parameters (its own windowing included). False (with a reason in
 * *why) for files it cannot count (legacy .bin, families without a count). */
bool bench_enc_cost_of(const struct transcribe_model *m, long n_samples, bench_enc_cost *out,
                       const char **why);

#endif
