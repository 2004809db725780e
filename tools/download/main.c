/* transcribe-download: fetches a published model by name into the cache
 * (catalog.h for the names and the folder, fetch.h for the transfer) and
 * prints its path; --list shows the catalogue and what is cached. */
#include "catalog.h"
#include "fetch.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_BASE_URL "https://huggingface.co"

static void usage(FILE *f) {
    fprintf(f,
            "usage: transcribe-download NAME [--quant Q] [--dir DIR] [--base-url URL]\n"
            "       transcribe-download --list [--dir DIR]\n"
            "\n"
            "Fetches a model transcribe.cpp publishes into the model cache, checks it (size, and\n"
            "the sha256 the server gives), and prints its path on stdout. `transcribe -m NAME`\n"
            "and Python's Model(\"NAME\") then find it there, offline.\n"
            "\n"
            "  NAME                  a catalogue name (--list), also NAME-QUANT or the file name\n"
            "  --quant Q             quantization (default " TDL_DEFAULT_QUANT
            ", else F16, else the first\n"
            "                        published; --list shows those published)\n"
            "  --dir DIR             cache folder (default $TRANSCRIBE_MODEL_DIR, else\n"
            "                        $XDG_CACHE_HOME/transcribe, else ~/.cache/transcribe)\n"
            "  --base-url URL        where files are, as <URL>/<repository>/resolve/main/<file>\n"
            "                        (default $TRANSCRIBE_MODEL_BASE_URL, else " DEFAULT_BASE_URL
            ")\n"
            "  --list                the catalogue, with the quantizations cached marked *\n"
            "  --retries N           tries after a dropped connection or a 5xx (default 3);\n"
            "                        an interrupted download resumes on the next run\n"
            "  --force               fetch again even when the file is cached\n"
            "  -q, --quiet           errors only (no progress bar, no notes)\n"
            "  -h, --help            this text\n"
            "\n"
            "Environment: TRANSCRIBE_MODEL_DIR, TRANSCRIBE_MODEL_BASE_URL, HF_TOKEN (a bearer\n"
            "token for gated repositories, sent to the base URL's host only),\n"
            "TRANSCRIBE_CATALOGUE (a catalogue file of your own instead of the built-in one).\n"
            "Exit status: 0 when the file is in the cache, 1 on any error, 2 on a bad option.\n");
}

static bool mkdirs(const char *path) {
    char buf[TDL_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return false;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

static int list(const tdl_catalog *c, const char *dir) {
    printf("catalogue: %s, %d models; cache: %s (* = cached, + = partly downloaded)\n", c->source,
           c->n, dir);
    /* columns as wide as their longest entry (moonshine_streaming, ...) */
    int wn = 4, wf = 6;
    for (int i = 0; i < c->n; i++) {
        int a = (int)strlen(c->rows[i].name), b = (int)strlen(c->rows[i].family);
        wn = a > wn ? a : wn;
        wf = b > wf ? b : wf;
    }
    printf("%-*s %-*s %-46s %-9s %s\n", wn, "NAME", wf, "FAMILY", "QUANTIZATIONS", "SIZE Q8_0",
           "LICENCE");
    for (int i = 0; i < c->n; i++) {
        const tdl_model *m = &c->rows[i];
        char qs[256] = "", q[32], file[512], path[TDL_PATH_MAX + 600], size[32];
        size_t len = 0;
        for (int k = 0; tdl_model_quant_at(m, k, q, sizeof q); k++) {
            const char *mark = "";
            if (tdl_model_file(m, q, file, sizeof file)) {
                snprintf(path, sizeof path, "%s/%s", dir, file);
                if (tdl_file_present(path)) {
                    mark = "*";
                } else {
                    snprintf(path, sizeof path, "%s/%s.part", dir, file);
                    if (tdl_file_present(path)) mark = "+";
                }
            }
            int w = snprintf(qs + len, sizeof qs - len, "%s%s%s", k ? " " : "", q, mark);
            if (w < 0 || (size_t)w >= sizeof qs - len) break;
            len += (size_t)w;
        }
        tdl_model_size(m, TDL_DEFAULT_QUANT, size, sizeof size);
        printf("%-*s %-*s %-46s %-9s %s\n", wn, m->name, wf, m->family, qs, size, m->licence);
    }
    printf("sizes (of Q8_0) from the specs, in MB / GB of 10^6 / 10^9 bytes (? = not stated); "
           "the download checks the size the server sends\n");
    return 0;
}

int main(int argc, char **argv) {
    const char *name = NULL, *quant = NULL, *dir_opt = NULL, *base = NULL;
    bool do_list = false, force = false, quiet = false;
    int retries = 3, stall_s = 60;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        int *num = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list")) {
            do_list = true;
        } else if (!strcmp(a, "--force")) {
            force = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = true;
        } else if (!strcmp(a, "--quant")) {
            dst = &quant;
        } else if (!strcmp(a, "--dir")) {
            dst = &dir_opt;
        } else if (!strcmp(a, "--base-url")) {
            dst = &base;
        } else if (!strcmp(a, "--retries")) {
            num = &retries;
        } else if (!strcmp(a, "--stall-timeout")) {
            num = &stall_s;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "transcribe-download: unknown option %s (see --help)\n", a);
            return 2;
        } else if (!name) {
            name = a;
        } else {
            fprintf(stderr, "transcribe-download: one NAME at a time (got %s and %s)\n", name, a);
            return 2;
        }
        if (dst || num) {
            if (i + 1 >= argc || !*argv[i + 1]) {
                fprintf(stderr, "transcribe-download: %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (dst) {
                *dst = v;
            } else {
                char *end = NULL;
                errno = 0;
                long n = strtol(v, &end, 10);
                if (errno || !end || *end || n < 0 || n > 100) {
                    fprintf(stderr, "transcribe-download: %s takes 0..100 (got %s)\n", a, v);
                    return 2;
                }
                *num = (int)n;
            }
        }
    }
    if (!name && !do_list) {
        usage(stderr);
        return 2;
    }
    tdl_catalog cat;
    char err[600], dir[TDL_PATH_MAX];
    if (!tdl_catalog_load(&cat, err, sizeof err)) {
        fprintf(stderr, "transcribe-download: error: %s\n", err);
        return 1;
    }
    int ret = 1;
    if (!tdl_cache_dir(dir_opt, dir, sizeof dir)) {
        fprintf(stderr, "transcribe-download: error: no cache folder: pass --dir or set "
                        "TRANSCRIBE_MODEL_DIR, XDG_CACHE_HOME or HOME\n");
        goto done;
    }
    if (do_list) {
        ret = list(&cat, dir);
        goto done;
    }
    char q[32];
    const tdl_model *m = tdl_catalog_parse_ref(&cat, name, q, sizeof q);
    if (!m) {
        /* NAME-QUANT / NAME:QUANT whose NAME is known: the quantization is
         * what is wrong, so say that */
        char base[512];
        snprintf(base, sizeof base, "%s", name);
        const tdl_model *known = NULL;
        const char *bad_q = NULL;
        for (char *p = base + strlen(base); p > base && !known; p--) {
            if (*p != '-' && *p != ':') continue;
            const char keep = *p;
            *p = '\0';
            const tdl_model *k = tdl_catalog_parse_ref(&cat, base, q, sizeof q);
            if (k && !*q)
                known = k, bad_q = p + 1;
            else
                *p = keep;
        }
        if (known) {
            fprintf(stderr, "transcribe-download: error: %s is not published as %s; it is: %s\n",
                    known->name, bad_q, known->quants);
            goto done;
        }
        const tdl_model *near[3];
        int k = tdl_catalog_closest(&cat, name, near, 3);
        fprintf(stderr, "transcribe-download: error: no model named '%s' in the catalogue", name);
        for (int i = 0; i < k; i++)
            fprintf(stderr, "%s%s", i ? ", " : "; closest: ", near[i]->name);
        fprintf(stderr, " (--list shows them all)\n");
        goto done;
    }
    if (quant && *q && strcasecmp(quant, q) != 0) {
        fprintf(stderr, "transcribe-download: error: '%s' names %s, --quant says %s\n", name, q,
                quant);
        goto done;
    }
    if (!*q) {
        const char *want = quant ? quant : TDL_DEFAULT_QUANT;
        /* no --quant: Q8_0, else F16, else the first published */
        char first[32];
        if (!quant && !tdl_model_has_quant(m, want, q, sizeof q)) {
            want = tdl_model_has_quant(m, "F16", q, sizeof q)      ? "F16"
                   : tdl_model_quant_at(m, 0, first, sizeof first) ? first
                                                                   : want;
        }
        if (!tdl_model_has_quant(m, want, q, sizeof q)) {
            fprintf(stderr, "transcribe-download: error: %s is not published as %s; it is: %s\n",
                    m->name, want, m->quants);
            goto done;
        }
    }
    char file[512], final[TDL_PATH_MAX + 600], url[8192];
    if (!tdl_model_file(m, q, file, sizeof file)) {
        fprintf(stderr, "transcribe-download: error: bad file pattern for %s\n", m->name);
        goto done;
    }
    snprintf(final, sizeof final, "%s/%s", dir, file);
    if (!force && tdl_file_present(final)) {
        if (!quiet) fprintf(stderr, "transcribe-download: %s is cached\n", file);
        printf("%s\n", final);
        ret = 0;
        goto done;
    }
    if (!base || !*base) base = getenv("TRANSCRIBE_MODEL_BASE_URL");
    if (!base || !*base) base = DEFAULT_BASE_URL;
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/') bl--;
    if ((size_t)snprintf(url, sizeof url, "%.*s/%s/resolve/main/%s", (int)bl, base, m->repository,
                         file) >= sizeof url) {
        fprintf(stderr, "transcribe-download: error: --base-url too long\n");
        goto done;
    }
    if (!mkdirs(dir)) {
        fprintf(stderr, "transcribe-download: error: cannot create the cache folder %s: %s\n", dir,
                strerror(errno));
        goto done;
    }
    if (force) unlink(final);
    char size[32];
    tdl_model_size(m, q, size, sizeof size);
    if (!quiet)
        fprintf(stderr, "transcribe-download: %s %s (%s, %s, licence %s)\n  from %s\n  into %s\n",
                m->name, q, m->family, strcmp(size, "?") ? size : "size not catalogued", m->licence,
                url, final);
    /* a file size limit (ulimit -f) makes write() fail with EFBIG, reported
     * as a full cache, instead of killing the process */
    signal(SIGXFSZ, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "transcribe-download: error: cannot start libcurl\n");
        goto done;
    }
    const char *token = getenv("HF_TOKEN");
    tdl_fetch_opts fo = {url, final, token, retries, stall_s, !quiet && isatty(2), quiet};
    ret = tdl_fetch(&fo);
    curl_global_cleanup();
    if (ret == 0) {
        if (!quiet) fprintf(stderr, "transcribe-download: done: %s\n", final);
        printf("%s\n", final);
    }
done:
    tdl_catalog_free(&cat);
    return ret;
}
