/* Subcommands of transcribe-bench. Each prints one JSON object per line on
 * stdout and returns a process exit code. argv[0] is the subcommand. */
#ifndef TR_TOOLS_BENCH_H
#define TR_TOOLS_BENCH_H

int bench_kernels(int argc, char **argv);
int bench_frontend(int argc, char **argv);
int bench_model(int argc, char **argv);

#endif
