/* Placeholder: the model benchmark is written by its module's owner. */
#include <stdio.h>

#include "bench.h"

int bench_model(int argc, char **argv) {
    (void)argc, (void)argv;
    printf("{\"bench\":\"model\",\"error\":\"not implemented\"}\n");
    return 1;
}
