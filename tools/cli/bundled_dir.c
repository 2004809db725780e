/* The bundled-model folder of an installed or a build-tree `transcribe`. */
#include "bundled_dir.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef TR_BUILD_MODEL_DIR
#define TR_BUILD_MODEL_DIR "models"
#endif

static int is_dir(const char *path) {
    DIR *d = opendir(path);
    if (d) closedir(d);
    return d != NULL;
}

const char *tr_cli_bundled_model_dir(void) {
    /* Written once per call from the same inputs: the answer never changes
     * within a run. */
    static char dir[PATH_MAX + 32];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0; /* <prefix>/bin */
            int w = snprintf(dir, sizeof dir, "%s/../share/transcribe", exe);
            if (w > 0 && (size_t)w < sizeof dir && is_dir(dir)) return dir;
        }
    }
    return TR_BUILD_MODEL_DIR;
}
