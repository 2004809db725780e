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

bool tr_cli_bundled_model(char *out, size_t cap) {
    const char *dir = tr_cli_bundled_model_dir();
    DIR *d = opendir(dir);
    if (!d) return false;
    char best[256] = "";
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 6 || n >= sizeof best || strcmp(e->d_name + n - 5, ".gguf") != 0) continue;
        if (strncmp(e->d_name, "silero-vad", 10) == 0) continue; /* the VAD model (--vad) */
        if (!best[0] || strcmp(e->d_name, best) < 0) memcpy(best, e->d_name, n + 1);
    }
    closedir(d);
    if (!best[0]) return false;
    int w = snprintf(out, cap, "%s/%s", dir, best);
    return w > 0 && (size_t)w < cap;
}
