/* The server's own multipart/form-data reader (tools/server/multipart.c):
 *  - a form of text fields and a binary file whose bytes hold delimiter
 *    look-alikes ("--B" without a CRLF before it, "\r\n--" then other
 *    bytes) reads back exactly, fed whole, byte by byte and in random
 *    pieces, for one-character and 70-character boundaries, quoted or not,
 *    "BOUNDARY=" in upper case, parameters after it, an epilogue;
 *  - an empty value is one call of size 0; a part without a name, part
 *    headers over 8 KB and bytes after a delimiter that are neither "--"
 *    nor CRLF are refused; a form cut short is not done;
 *  - 20 000 random bodies (random bytes, and valid forms with random bytes
 *    flipped) never crash (the sanitizer build checks the memory) and
 *    never hand out a piece outside the input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multipart.h"
#include "test_util.h"

typedef struct {
    char names[8][64];
    char *vals[8];
    size_t lens[8];
    int n, calls;
    bool bad;
} got_t;

static bool collect(void *cls, const char *name, const char *filename, const char *data,
                    uint64_t off, size_t size) {
    got_t *g = cls;
    (void)filename;
    g->calls++;
    if (off == 0) {
        if (g->n == 8) return false;
        snprintf(g->names[g->n], sizeof g->names[0], "%s", name);
        g->vals[g->n] = NULL;
        g->lens[g->n] = 0;
        g->n++;
    }
    int i = g->n - 1;
    if (i < 0 || g->lens[i] != off) {
        g->bad = true;
        return false;
    }
    char *v = realloc(g->vals[i], g->lens[i] + size + 1);
    if (!v) return false;
    memcpy(v + g->lens[i], data, size);
    g->vals[i] = v;
    g->lens[i] += size;
    return true;
}

static void got_free(got_t *g) {
    for (int i = 0; i < g->n; i++) free(g->vals[i]);
    memset(g, 0, sizeof *g);
}

/* Appends printf-formatted text or raw bytes to a growing buffer. */
typedef struct {
    char *p;
    size_t n, cap;
} buf_t;

static void put(buf_t *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void puts_(buf_t *b, const char *s) {
    put(b, s, strlen(s));
}

/* A form: model=tiny, an empty prompt, and file = data. */
static void make_form(buf_t *b, const char *bd, const char *data, size_t n, bool epilogue) {
    char line[256];
    snprintf(line, sizeof line,
             "--%s\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n"
             "tiny\r\n",
             bd);
    puts_(b, line);
    snprintf(line, sizeof line, "--%s\r\ncontent-disposition: form-data; name=prompt\r\n\r\n\r\n",
             bd);
    puts_(b, line);
    snprintf(line, sizeof line,
             "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a \\\"b\\\".wav\""
             "\r\nContent-Type: audio/wav\r\n\r\n",
             bd);
    puts_(b, line);
    put(b, data, n);
    snprintf(line, sizeof line, "\r\n--%s--", bd);
    puts_(b, line);
    if (epilogue) puts_(b, "\r\nthe end\r\n--not-a-delimiter\r\n");
}

/* Feeds body in pieces of `piece` bytes (0: random sizes). */
static bool feed(srv_multipart *mp, const buf_t *b, size_t piece, got_t *g, unsigned *seed) {
    size_t pos = 0;
    while (pos < b->n) {
        size_t k = piece ? piece : 1 + (size_t)(rand_r(seed) % 5000);
        if (k > b->n - pos) k = b->n - pos;
        if (!srv_mp_feed(mp, b->p + pos, k, collect, g)) return false;
        pos += k;
    }
    return true;
}

static void check_form(const char *ct, const char *bd, const char *data, size_t n) {
    buf_t b = {0};
    make_form(&b, bd, data, n, true);
    static const size_t pieces[] = {0, 1, 2, 7, 64, 4096, 1 << 20};
    unsigned seed = 7;
    for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
        srv_multipart *mp = srv_mp_new(ct);
        CHECK_MSG(mp != NULL, "%s", ct);
        if (!mp) break;
        got_t g = {0};
        bool ok = feed(mp, &b, pieces[p], &g, &seed);
        CHECK_MSG(ok && srv_mp_done(mp) && !g.bad, "%s piece %zu", ct, pieces[p]);
        CHECK_MSG(g.n == 3, "%s piece %zu: %d parts", ct, pieces[p], g.n);
        if (g.n == 3) {
            CHECK(!strcmp(g.names[0], "model") && g.lens[0] == 4 && !memcmp(g.vals[0], "tiny", 4));
            CHECK(!strcmp(g.names[1], "prompt") && g.lens[1] == 0);
            CHECK(!strcmp(g.names[2], "file") && g.lens[2] == n);
            CHECK_MSG(g.lens[2] == n && !memcmp(g.vals[2], data, n), "%s piece %zu: file bytes", ct,
                      pieces[p]);
        }
        got_free(&g);
        srv_mp_free(mp);
    }
    /* cut short (inside the closing delimiter): not done */
    buf_t whole = {0};
    make_form(&whole, bd, data, n, false);
    srv_multipart *mp = srv_mp_new(ct);
    got_t g = {0};
    buf_t cut = {whole.p, whole.n - 1, whole.n};
    CHECK(mp && feed(mp, &cut, 100, &g, &seed) && !srv_mp_done(mp));
    got_free(&g);
    srv_mp_free(mp);
    free(whole.p);
    free(b.p);
}

static bool parse_all(const char *ct, const char *body, size_t n, got_t *g) {
    srv_multipart *mp = srv_mp_new(ct);
    if (!mp) return false;
    unsigned seed = 1;
    buf_t b = {(char *)body, n, n};
    bool ok = feed(mp, &b, 3, g, &seed) && srv_mp_done(mp);
    srv_mp_free(mp);
    return ok;
}

static void test_refusals(void) {
    got_t g = {0};
    const char *noname = "--q\r\nContent-Type: text/plain\r\n\r\nv\r\n--q--\r\n";
    CHECK(!parse_all("multipart/form-data; boundary=q", noname, strlen(noname), &g));
    got_free(&g);
    buf_t big = {0};
    puts_(&big, "--q\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: ");
    for (int i = 0; i < 9000; i++) puts_(&big, "a");
    puts_(&big, "\r\n\r\nv\r\n--q--");
    CHECK(!parse_all("multipart/form-data; boundary=q", big.p, big.n, &g));
    got_free(&g);
    free(big.p);
    const char *junk = "--q\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--qX";
    CHECK(!parse_all("multipart/form-data; boundary=q", junk, strlen(junk), &g));
    got_free(&g);
    CHECK(srv_mp_new("multipart/form-data") == NULL);
    CHECK(srv_mp_new("multipart/form-data; boundary=") == NULL);
    CHECK(srv_mp_new("multipart/form-data; boundary=\"open") == NULL);
    char long_b[128] = "multipart/form-data; boundary=";
    memset(long_b + strlen(long_b), 'x', 71);
    CHECK(srv_mp_new(long_b) == NULL);
    /* a form of no parts is just the closing delimiter */
    CHECK(parse_all("multipart/form-data; boundary=q", "--q--\r\n", 7, &g) && g.n == 0);
    got_free(&g);
}

static void test_random(const char *data, size_t n) {
    unsigned seed = 42;
    buf_t form = {0};
    make_form(&form, "q", data, n < 3000 ? n : 3000, false);
    char *body = malloc(form.n);
    for (int it = 0; it < 20000; it++) {
        size_t len;
        if (it % 2) {
            len = (size_t)(rand_r(&seed) % 2000);
            for (size_t i = 0; i < len; i++) body[i] = "-q\r\nab=\""[rand_r(&seed) % 8];
        } else {
            len = form.n;
            memcpy(body, form.p, len);
            for (int f = 0; f < 1 + it % 7; f++) body[rand_r(&seed) % len] = (char)rand_r(&seed);
            len -= (size_t)(rand_r(&seed) % 50);
        }
        srv_multipart *mp = srv_mp_new("multipart/form-data; BOUNDARY=\"q\"; x=y");
        got_t g = {0};
        buf_t b = {body, len, len};
        (void)feed(mp, &b, 0, &g, &seed);
        CHECK_MSG(!g.bad, "iteration %d: a piece out of order", it);
        for (int i = 0; i < g.n; i++) CHECK(g.lens[i] <= len);
        got_free(&g);
        srv_mp_free(mp);
    }
    free(body);
    free(form.p);
}

int main(void) {
    /* binary data with look-alikes of every boundary used below */
    enum { N = 100000 };
    char *data = malloc(N);
    unsigned seed = 3;
    for (int i = 0; i < N; i++) data[i] = (char)rand_r(&seed);
    const char *looks[] = {"--q--", "x\r\n-q", "\r\n--", "--Bound--", "\r\n--Boun", "\r\n-"};
    for (int i = 0; i < 6; i++) {
        memcpy(data + 1000 * (i + 1), looks[i], strlen(looks[i]));
        data[1000 * (i + 1) + strlen(looks[i])] = 'x'; /* never completes a delimiter */
    }
    memcpy(data + N - 3, "\r\n-", 3); /* a delimiter's start at the very end of the value */
    check_form("multipart/form-data; boundary=q", "q", data, N);
    check_form("multipart/form-data; BOUNDARY=q; charset=utf-8", "q", data, N);
    check_form("multipart/form-data; boundary=\"q\"", "q", data, N);
    char ct[160], bd[71];
    memset(bd, 'B', 70);
    bd[70] = '\0';
    snprintf(ct, sizeof ct, "multipart/form-data; Boundary=%s; x=1", bd);
    check_form(ct, bd, data, N);
    check_form("multipart/form-data; boundary=Bound", "Bound", data, 0);
    test_refusals();
    test_random(data, N);
    free(data);
    return TEST_DONE();
}
