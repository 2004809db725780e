/* transcribe-bench <kernels|frontend|model> [options]
 *
 * The help lives here, one text per mode, so that `transcribe-bench --help`
 * and `transcribe-bench MODE --help` answer (exit 0) before a mode parses
 * its options. */
#include <stdio.h>
#include <string.h>

#include "bench.h"

static const char k_overview[] =
    "usage: transcribe-bench MODE [options]     (transcribe-bench MODE --help for one mode)\n"
    "\n"
    "Speed measurements (speed is measured here, never asserted in tests). Output is one\n"
    "JSON object per line on stdout.\n"
    "\n"
    "modes:\n"
    "  kernels   GEMM and decode matrix-vector kernels against OpenBLAS (when installed)\n"
    "            and the memory bandwidth measured in the same run\n"
    "  frontend  feature extraction (log-mel / fbank) for 30 s of audio per front-end,\n"
    "            and 44.1 kHz -> 16 kHz resampling throughput\n"
    "  model     one model end to end through the public API: stage timings, real-time\n"
    "            factor, peak memory, achieved encoder GFLOP/s against OpenBLAS sgemm\n"
    "\n"
    "  -h, --help  this text\n";

static const char k_kernels[] =
    "usage: transcribe-bench kernels [--threads N] [--reps N] [--isa ISA] [--gemm|--gemv]\n"
    "\n"
    "GEMM cases (encoder shapes) time tr_matmul per weight type against OpenBLAS\n"
    "cblas_sgemm on F32 weights (null when libopenblas is not installed); decode (M = 1)\n"
    "cases report GB/s of weight bytes against a copy bandwidth measured between their\n"
    "calls. Every time is a median.\n"
    "\n"
    "  --threads N  worker threads (default 2)\n"
    "  --reps N     repetitions per case (default 5)\n"
    "  --isa ISA    force the kernel level: scalar, avx2 or avx512 (where the CPU has it)\n"
    "  --gemm       GEMM cases only\n"
    "  --gemv       decode matrix-vector cases only\n"
    "  -h, --help   this text\n";

static const char k_frontend[] =
    "usage: transcribe-bench frontend [--threads N] [--reps N]\n"
    "\n"
    "Milliseconds to compute the features of 30 s of 16 kHz audio for each front-end\n"
    "variant, and the throughput of both resamplers (44.1 kHz -> 16 kHz). The best of\n"
    "--reps runs is reported.\n"
    "\n"
    "  --threads N  worker threads (default 2)\n"
    "  --reps N     repetitions (default 3)\n"
    "  -h, --help   this text\n";

static const char k_model[] =
    "usage: transcribe-bench model -m MODEL AUDIO [--threads N] [--repeat R]\n"
    "\n"
    "Loads MODEL once, transcribes AUDIO R times and prints one JSON line: the fastest\n"
    "run's load/mel/encode/decode ms, decoded tokens, real-time factor, peak resident\n"
    "memory, the encoder's GFLOP/s (counted from the file's hyper-parameters) beside\n"
    "OpenBLAS sgemm on its FFN shape, and for the audio-LLM families prefill and\n"
    "per-step decode figures.\n"
    "\n"
    "  -m, --model MODEL  model file (GGUF or whisper.cpp .bin)\n"
    "  --threads N        session threads (default: the library's)\n"
    "  --repeat R         runs (default 1)\n"
    "  -h, --help         this text\n";

static bool wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return true;
    }
    return false;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(k_overview, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        fputs(k_overview, stdout);
        return 0;
    }
    static const struct {
        const char *name, *help;
        int (*run)(int argc, char **argv);
    } modes[] = {{"kernels", k_kernels, bench_kernels},
                 {"frontend", k_frontend, bench_frontend},
                 {"model", k_model, bench_model}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (strcmp(cmd, modes[i].name) != 0) continue;
        if (wants_help(argc - 1, argv + 1)) {
            fputs(modes[i].help, stdout);
            return 0;
        }
        return modes[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr,
            "transcribe-bench: unknown mode '%s' (kernels, frontend or model); run "
            "'transcribe-bench --help'\n",
            cmd);
    return 2;
}
