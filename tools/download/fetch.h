/* One file from a URL into the cache, over libcurl: resumed from FILE.part,
 * size and sha256 checked, then renamed into place. */
#ifndef TDL_FETCH_H
#define TDL_FETCH_H

#include <stdbool.h>

typedef struct {
    const char *url;   /* <base>/<repository>/resolve/main/<file> */
    const char *final; /* the cache path; FILE.part beside it while it comes */
    const char *token; /* bearer token for the first host only (HF_TOKEN), or NULL */
    int retries;       /* further tries after a dropped connection or a 5xx */
    int stall_s;       /* a transfer slower than 1 byte/s this long is dropped */
    bool progress;     /* draw a bar on stderr (a terminal) */
    bool quiet;        /* no notes on stderr, errors only */
} tdl_fetch_opts;

/* 0 when final is in place and verified; 1 on an error, said on stderr. */
int tdl_fetch(const tdl_fetch_opts *o);

#endif
