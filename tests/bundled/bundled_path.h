/* Test helper: the bundled model's path, chosen as the CLI chooses it (the
 * first .gguf file in models/ by name). */
#ifndef TR_TESTS_BUNDLED_PATH_H
#define TR_TESTS_BUNDLED_PATH_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>

static inline int tr_bundled_model_path(char *buf, size_t n) {
    DIR *d = opendir(TR_SOURCE_DIR "/models");
    if (!d) return 0;
    char best[256] = "";
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || len >= sizeof best || strcmp(e->d_name + len - 5, ".gguf") != 0) continue;
        if (!best[0] || strcmp(e->d_name, best) < 0) memcpy(best, e->d_name, len + 1);
    }
    closedir(d);
    if (!best[0]) return 0;
    snprintf(buf, n, "%s/models/%s", TR_SOURCE_DIR, best);
    return 1;
}

#endif
