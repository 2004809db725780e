/* transcribe-bench <kernels|frontend|model|llm-batch> [options] */
#include <stdio.h>
#include <string.h>

#include "bench.h"

static int usage(void) {
    fprintf(stderr, "usage: transcribe-bench <kernels|frontend|model|llm-batch> [options]\n"
                    "  kernels [--threads N] [--reps N]   GEMM / matrix-vector vs OpenBLAS and "
                    "memory bandwidth\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage();
    const char *cmd = argv[1];
    if (strcmp(cmd, "kernels") == 0) return bench_kernels(argc - 1, argv + 1);
    if (strcmp(cmd, "frontend") == 0) return bench_frontend(argc - 1, argv + 1);
    if (strcmp(cmd, "model") == 0) return bench_model(argc - 1, argv + 1);
    if (strcmp(cmd, "llm-batch") == 0) return bench_llm_batch(argc - 1, argv + 1);
    if (strcmp(cmd, "batch") == 0) return bench_batch(argc - 1, argv + 1);
    if (strcmp(cmd, "server") == 0) return bench_server(argc - 1, argv + 1);
    if (strcmp(cmd, "vad") == 0) return bench_vad(argc - 1, argv + 1);
    if (strcmp(cmd, "stream") == 0) return bench_stream(argc - 1, argv + 1);
    return usage();
}
