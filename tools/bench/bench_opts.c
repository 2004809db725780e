/* The option loop and the model opening every transcribe-bench subcommand
 * shares (bench.h). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const bench_opt *find(const bench_opt *opts, int n_opts, const char *word) {
    for (int k = 0; k < n_opts; k++)
        if (!strcmp(word, opts[k].name) || (opts[k].alias && !strcmp(word, opts[k].alias)))
            return &opts[k];
    return NULL;
}

bool bench_parse_args(int argc, char **argv, const bench_opt *opts, int n_opts, const char **pos,
                      int max_pos, int *n_pos, const char **bad) {
    *n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const bench_opt *o = find(opts, n_opts, argv[i]);
        if (o && i + 1 < argc) {
            const char *v = argv[++i];
            if (o->kind == BENCH_OPT_STR)
                *(const char **)o->out = v;
            else if (o->kind == BENCH_OPT_INT)
                *(int *)o->out = atoi(v);
            else
                *(double *)o->out = atof(v);
        } else if (argv[i][0] != '-' && *n_pos < max_pos) {
            pos[(*n_pos)++] = argv[i];
        } else {
            *bad = argv[i];
            return false;
        }
    }
    return true;
}

transcribe_status bench_open(const char *model, int n_threads, struct transcribe_session **out) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = n_threads;
    *out = NULL;
    return transcribe_open(model, NULL, &sp, out);
}
