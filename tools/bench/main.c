/* transcribe-bench MODE [options]
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
    "  batch     N copies of a clip through transcribe_run_batch against N single runs\n"
    "  llm-batch the same for the audio-LLM families, with the decode-phase ratio\n"
    "  stream    live transcription: commit delay (median, p90), compute per audio second\n"
    "  vad       Silero VAD real-time factor, and a half-silent file with and without it\n"
    "  server    loopback load on a transcribe-server it starts: latency, throughput, RSS\n"
    "  fallback  Whisper's temperature fallback: sequential tiers against side by side\n"
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

static const char k_batch[] =
    "usage: transcribe-bench batch -m MODEL AUDIO [--n N] [--threads T] [--repeat R]\n"
    "\n"
    "N copies of AUDIO (default 8) through one transcribe_run_batch call against N\n"
    "single runs, side by side in one process: wall times, throughput ratio, and\n"
    "whether every batch row equals its single run.\n";

static const char k_llm_batch[] =
    "usage: transcribe-bench llm-batch -m MODEL AUDIO [--batch B] [--threads N] [--repeat R]\n"
    "\n"
    "For Qwen3-ASR, Granite Speech and MOSS: B copies of AUDIO (default 4) serially and\n"
    "as one run_batch, alternated; best wall and decode-phase times, their ratios, and\n"
    "whether the rows equal the serial text.\n";

static const char k_stream[] =
    "usage: transcribe-bench stream -m MODEL AUDIO... [--threads N] [--feed-ms N]\n"
    "                               [--att-right R] [--buffered L,C,R] [--offline 0]\n"
    "       transcribe-bench stream --make-cache-aware IN.gguf OUT.gguf [R]\n"
    "       transcribe-bench stream --make-unified IN.gguf OUT.gguf\n"
    "\n"
    "Streams the files (feeds of --feed-ms, default 100) and reports the delay from a\n"
    "word's end in the audio to its commit (median, p90) and the compute per second of\n"
    "audio (wall and CPU), and for any model the delay from the end of each 80 ms of\n"
    "audio, arriving in real time, to the call that commits past it (median, p90).\n"
    "--offline 0 skips the offline run the word delays need. --att-right picks a\n"
    "cache-aware Parakeet file's lookahead. The second form rewrites an offline\n"
    "Parakeet file into the cache-aware streaming schema with\n"
    "default context (70, R) (R of 13, 6, 1, 0), for measuring at real dimensions.\n"
    "--buffered picks a unified-en file's buffered window in ms (PKBS; -1 = default);\n"
    "--make-unified rewrites an offline Parakeet file into unified-en-0.6b's schema.\n";

static const char k_fallback[] =
    "usage: transcribe-bench fallback -m WHISPER_MODEL AUDIO [--threads N] [--repeat R]\n"
    "\n"
    "Whisper's temperature fallback with every tier failing (compression_ratio_thold 0):\n"
    "a fixed seed (tiers one after another) against seed 0 (the tiers after the greedy\n"
    "one side by side in lockstep), alternated; fastest decode ms of each, their ratio.\n";

static const char k_vad[] =
    "usage: transcribe-bench vad [--vad-model F] [--threads N] [--reps N]\n"
    "                            [-m MODEL AUDIO [--minutes M]]\n"
    "\n"
    "Silero VAD speed (real-time factor, wall and CPU time) at 16 and 8 kHz; with -m, a\n"
    "file of M minutes (default 10), half silence, transcribed with and without the VAD.\n";

static const char k_server[] =
    "usage: transcribe-bench server -m MODEL --audio WAV [--server PATH] [--requests N]\n"
    "                               [--clients N] [--clip-ms N] [--parallel N] [--queue N]\n"
    "                               [--check]\n"
    "\n"
    "Starts transcribe-server on a free loopback port and sends it N requests (default\n"
    "500) from concurrent clients (default 16), valid and hostile mixed: p50/p99 latency,\n"
    "throughput, statuses, peak RSS.\n";

static const char k_model[] =
    "usage: transcribe-bench model -m MODEL AUDIO [--threads N] [--repeat R] [--step-pairs N]\n"
    "                             [--spec-k-drafts K]\n"
    "\n"
    "Loads MODEL once, transcribes AUDIO R times and prints one JSON line: the fastest\n"
    "run's load/mel/encode/decode ms, decoded tokens, real-time factor, peak resident\n"
    "memory, the encoder's GFLOP/s (counted from the file's hyper-parameters) beside\n"
    "OpenBLAS sgemm on its FFN shape, and for the audio-LLM families the prefill's\n"
    "GFLOP/s beside sgemm on the decoder's FFN shape at the prompt's row count, and\n"
    "per-step decode figures: the step against its memory-bound floor (weight bytes at\n"
    "the copy bandwidth), once from the runs and once from N steps alternated with copy\n"
    "samples (probe_*, the median ratio; this host's bandwidth drifts between seconds);\n"
    "encoder-decoder families with a probe hook (Cohere) get the probe too, with the\n"
    "K/V bytes a step also reads (probe_step_vs_read_floor).\n"
    "\n"
    "  -m, --model MODEL  model file (GGUF or whisper.cpp .bin)\n"
    "  --threads N        session threads (default: the library's)\n"
    "  --repeat R         runs (default 1)\n"
    "  --step-pairs N     step/copy pairs of the step probe (default 16, 0: none)\n"
    "  --spec-k-drafts K  also run every repeat with speculative decoding (K drafts per\n"
    "                     step), alternating with the plain run, and print both decode\n"
    "                     times (spec_*: fastest of each; spec_speedup = plain / spec;\n"
    "                     spec_same_text: whether every speculative text equalled plain's)\n"
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
    /* not a mode for users: the model bench runs its OpenBLAS probe in a
     * process of its own through it */
    if (strcmp(cmd, "sgemm-probe") == 0) return bench_sgemm_probe_main(argc - 1, argv + 1);
    static const struct {
        const char *name, *help;
        int (*run)(int argc, char **argv);
    } modes[] = {{"kernels", k_kernels, bench_kernels},
                 {"frontend", k_frontend, bench_frontend},
                 {"model", k_model, bench_model},
                 {"batch", k_batch, bench_batch},
                 {"llm-batch", k_llm_batch, bench_llm_batch},
                 {"stream", k_stream, bench_stream},
                 {"vad", k_vad, bench_vad},
                 {"server", k_server, bench_server},
                 {"fallback", k_fallback, bench_fallback}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (strcmp(cmd, modes[i].name) != 0) continue;
        if (wants_help(argc - 1, argv + 1)) {
            fputs(modes[i].help, stdout);
            return 0;
        }
        return modes[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr,
            "transcribe-bench: unknown mode '%s' (kernels, frontend, model, batch, llm-batch, "
            "stream, vad, server or fallback); run "
            "'transcribe-bench --help'\n",
            cmd);
    return 2;
}
