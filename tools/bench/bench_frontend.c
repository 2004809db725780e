/* Placeholder: the frontend benchmark is written by its module's owner. */
#include <stdio.h>

#include "bench.h"

int bench_frontend(int argc, char **argv) {
    (void)argc, (void)argv;
    printf("{\"bench\":\"frontend\",\"error\":\"not implemented\"}\n");
    return 1;
}
