/* Byte-level BPE ("gpt2" kind): parity with tools/ref/tok_ref.py for the
 * gpt2, qwen2 and granite pre-tokenizers on a multilingual case list, the
 * tiktoken-style rank-by-id mode over the real Whisper vocabulary, round
 * trips, edge cases and encode speed. */
#include <limits.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "text/tokenizer.h"
#include "tok_data.h"

#define MAX_IDS 8192

static tr_tokenizer *load_small(tr_pretok pre) {
    tok_lines v, m;
    if (tok_lines_read("bpe_vocab.txt", &v) || tok_lines_read("bpe_merges.txt", &m)) return NULL;
    char **pieces = malloc((size_t)v.n * sizeof(char *));
    int32_t *types = malloc((size_t)v.n * sizeof(int32_t));
    char **merges = malloc((size_t)m.n * sizeof(char *));
    for (int i = 0; i < v.n; i++) {
        const char *end;
        pieces[i] = tok_unhex(v.lines[i], NULL, &end);
        types[i] = atoi(end + 1);
    }
    for (int i = 0; i < m.n; i++) merges[i] = tok_unhex(m.lines[i], NULL, NULL);
    tr_tokenizer *t = NULL;
    transcribe_status st = tr_tokenizer_create(TR_TOK_GPT2, pre, (const char *const *)pieces, v.n,
                                               NULL, types, (const char *const *)merges, m.n, &t);
    CHECK(st == TRANSCRIBE_OK);
    for (int i = 0; i < v.n; i++) free(pieces[i]);
    for (int i = 0; i < m.n; i++) free(merges[i]);
    free(pieces);
    free(types);
    free(merges);
    tok_lines_free(&v);
    tok_lines_free(&m);
    return t;
}

/* Whisper vocabulary from the shared folder (docs/formats/gguf.md §11 layout). */
static tr_tokenizer *load_whisper(const char *file) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/vocab/%s", TR_CORPUS_DIR, file);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *d = malloc((size_t)size);
    size_t got = fread(d, 1, (size_t)size, f);
    fclose(f);
    tr_tokenizer *t = NULL;
    int32_t n_mel, n_fft, count;
    size_t off = 48;
    memcpy(&n_mel, d + off, 4);
    memcpy(&n_fft, d + off + 4, 4);
    off += 8 + 4 * (size_t)n_mel * (size_t)n_fft;
    memcpy(&count, d + off, 4);
    off += 4;
    const char **pieces = malloc((size_t)count * sizeof(char *));
    size_t *lens = malloc((size_t)count * sizeof(size_t));
    for (int i = 0; i < count && off + 4 <= got; i++) {
        uint32_t n;
        memcpy(&n, d + off, 4);
        pieces[i] = (const char *)d + off + 4;
        lens[i] = n;
        off += 4 + n;
    }
    CHECK(off == got);
    CHECK(tr_tokenizer_create_raw(pieces, lens, count, NULL, &t) == TRANSCRIBE_OK);
    free(pieces);
    free(lens);
    free(d);
    return t;
}

/* Encodes every case of `file` and compares with the expected ids; checks
 * that the token bytes reproduce the input exactly. */
static void run_cases(tr_tokenizer *t, const char *file, const char *label, bool need_round) {
    tok_lines l;
    if (tok_lines_read(file, &l)) {
        CHECK(0);
        return;
    }
    static int32_t exp[MAX_IDS], got[MAX_IDS];
    int same = 0, round = 0;
    for (int i = 0; i < l.n; i++) {
        const char *end;
        size_t n;
        char *text = tok_unhex(l.lines[i], &n, &end);
        int ne = tok_parse_ids(end, exp, MAX_IDS);
        int ng = tr_tokenizer_encode(t, text, got, MAX_IDS);
        bool ok = ng == ne && memcmp(got, exp, (size_t)ne * sizeof(int32_t)) == 0;
        if (!ok) {
            fprintf(stderr, "%s case %d: got %d ids, want %d\n  text %s\n  got ", label, i, ng, ne,
                    l.lines[i]);
            for (int k = 0; k < ng && k < 40; k++) fprintf(stderr, "%d ", got[k]);
            fprintf(stderr, "\n  want ");
            for (int k = 0; k < ne && k < 40; k++) fprintf(stderr, "%d ", exp[k]);
            fprintf(stderr, "\n");
        }
        same += ok;
        /* token bytes concatenate back to the input, invalid bytes included */
        char *cat = malloc(n + 1);
        size_t o = 0;
        bool fits = true;
        for (int k = 0; k < ng && ng > 0; k++) {
            size_t b = tr_tokenizer_token_bytes(t, got[k], cat + o, n - o);
            if (o + b > n) fits = false;
            o += b;
        }
        bool rt = fits && o == n && memcmp(cat, text, n) == 0;
        /* and decode returns the sanitized input */
        char *dec = tr_tokenizer_decode(t, got, ng > 0 ? ng : 0, false);
        char *san = tr_utf8_sanitize(text, n);
        rt = rt && dec && strcmp(dec, san) == 0;
        round += rt;
        free(dec);
        free(san);
        free(cat);
        free(text);
    }
    printf("%s: %d/%d cases identical to tok_ref.py, %d/%d round trips\n", label, same, l.n, round,
           l.n);
    CHECK(same == l.n);
    if (need_round) CHECK(round == l.n);
    tok_lines_free(&l);
}

static void test_edges(tr_tokenizer *t) {
    int32_t ids[64];
    CHECK(tr_tokenizer_encode(t, "", ids, 64) == 0);
    CHECK(tr_tokenizer_encode(t, "", NULL, 0) == 0);
    CHECK(tr_tokenizer_encode(t, NULL, ids, 64) == INT_MIN);
    CHECK(tr_tokenizer_encode(NULL, "a", ids, 64) == INT_MIN);
    int n = tr_tokenizer_encode(t, "hello world, hello world", ids, 64);
    CHECK(n > 2);
    CHECK(tr_tokenizer_encode(t, "hello world, hello world", ids, (size_t)n - 1) == -n);
    CHECK(tr_tokenizer_encode(t, "hello world, hello world", NULL, 0) == -n);
    CHECK(tr_tokenizer_encode(t, "   ", ids, 64) >= 1);
    /* invalid UTF-8: overlong, truncated, stray bytes — byte-wise, no crash */
    const char *bad[] = {"\xff",         "\xc0\xaf",         "\xe0\x80\xaf",
                         "\xed\xa0\x80", "\xf4\x90\x80\x80", "abc\xe2\x82",
                         "\x80\x80\x80", "\xf0\x9f\x98"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int k = tr_tokenizer_encode(t, bad[i], ids, 64);
        CHECK(k >= (int)strlen(bad[i]) / 2 && k <= (int)strlen(bad[i]));
        char *d = tr_tokenizer_decode(t, ids, k, false);
        CHECK(d != NULL && strstr(d, "\xEF\xBF\xBD") != NULL);
        free(d);
    }
    /* decode: out-of-range ids are dropped, control tokens optional */
    int eot = tr_tokenizer_find(t, "<|endoftext|>");
    CHECK(eot > 0 && tr_tokenizer_is_control(t, eot));
    int32_t seq[] = {-5, eot, 1 << 30, (int32_t)tr_tokenizer_find(t, "a")};
    char *d = tr_tokenizer_decode(t, seq, 4, false);
    CHECK(d && strcmp(d, "<|endoftext|>a") == 0);
    free(d);
    d = tr_tokenizer_decode(t, seq, 4, true);
    CHECK(d && strcmp(d, "a") == 0);
    free(d);
    d = tr_tokenizer_decode(t, NULL, 0, false);
    CHECK(d && d[0] == '\0');
    free(d);
    char b[8];
    CHECK(tr_tokenizer_token_bytes(t, -1, b, 8) == 0);
    CHECK(tr_tokenizer_token_bytes(t, 1 << 30, b, 8) == 0);
    CHECK(tr_tokenizer_piece(t, -1) == NULL && tr_tokenizer_piece(t, 1 << 30) == NULL);
    /* special-token literals are plain text */
    n = tr_tokenizer_encode(t, "<|endoftext|>", ids, 64);
    CHECK(n > 1);
    for (int i = 0; i < n; i++) CHECK(ids[i] != eot);
    /* token_bytes reports the full length even when cap is short */
    int g = tr_tokenizer_find(t, "\xC4\xA0"); /* "Ġ" = space */
    CHECK(g >= 0 && tr_tokenizer_token_bytes(t, g, b, 0) == 1);
    /* a multibyte character split across byte tokens: each token alone is
     * partial, decode of the pair is whole */
    int e1 = tr_tokenizer_find(t, "\xC3\xA6"); /* byte 0xE6 */
    int e2 = tr_tokenizer_find(t, "\xC2\xBC"); /* byte 0xBC */
    int e3 = tr_tokenizer_find(t, "\xC2\xA2"); /* byte 0xA2 */
    CHECK(e1 >= 0 && e2 >= 0 && e3 >= 0);
    int32_t split[] = {e1, e2, e3};
    d = tr_tokenizer_decode(t, split, 2, false);
    CHECK(d && strcmp(d, "\xEF\xBF\xBD") == 0);
    free(d);
    d = tr_tokenizer_decode(t, split, 3, false);
    CHECK(d && strcmp(d, "\xE6\xBC\xA2") == 0); /* 漢 */
    free(d);
    CHECK(tr_tokenizer_token_bytes(t, e1, b, 8) == 1 && (unsigned char)b[0] == 0xE6);
}

/* Random byte strings (ASCII, whitespace, stray and valid multibyte):
 * never crash, and the token bytes always spell the input back. */
static void test_random(tr_tokenizer *t) {
    uint32_t seed = 12345;
    const char *frags[] = {"a",
                           "Z",
                           " ",
                           "  ",
                           "\n",
                           "\t",
                           "'s",
                           "'LL",
                           "7",
                           "\xC3\xA9",
                           "\xE2\x82\xAC",
                           "\xF0\x9F\x98\x80",
                           "\xE2\x80\x8D",
                           "\xCC\x81",
                           "\xFF",
                           "\x80",
                           "\xC3",
                           "\xE2\x82",
                           "\xED\xA0\x80",
                           "\xE3\x80\x80",
                           "!",
                           "\r\n"};
    int good = 0, runs = 3000;
    for (int r = 0; r < runs; r++) {
        char s[256];
        size_t n = 0;
        int k = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 24;
        for (int i = 0; i < k; i++) {
            const char *f = frags[((seed = seed * 1103515245u + 12345u) >> 16) % 22];
            size_t fl = strlen(f);
            memcpy(s + n, f, fl);
            n += fl;
        }
        s[n] = '\0';
        int32_t ids[256];
        int m = tr_tokenizer_encode(t, s, ids, 256);
        char back[256];
        size_t o = 0;
        for (int i = 0; i < m && o < sizeof back; i++)
            o += tr_tokenizer_token_bytes(t, ids[i], back + o, sizeof back - o);
        good += m >= 0 && o == n && memcmp(back, s, n) == 0;
    }
    printf("random byte strings: %d/%d spelled back exactly\n", good, runs);
    CHECK(good == runs);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Long single words must not blow up (heap merging is O(n log n)). */
static void test_long_word(tr_tokenizer *t) {
    size_t n = 100000;
    char *w = malloc(n + 1);
    for (size_t i = 0; i < n; i++) w[i] = "abcdefghij"[(i * 7 + i / 13) % 10];
    w[n] = '\0';
    int32_t *ids = malloc(n * sizeof(int32_t));
    double t0 = now_s();
    int k = tr_tokenizer_encode(t, w, ids, n);
    double dt = now_s() - t0;
    CHECK(k > 0 && k <= (int)n);
    char *d = tr_tokenizer_decode(t, ids, k, false);
    CHECK(d && strcmp(d, w) == 0);
    printf("100 kB single word: %d tokens in %.3f s\n", k, dt);
    CHECK(dt < 5.0);
    /* same for a 100 kB run of one emoji and of spaces */
    for (size_t i = 0; i + 4 <= n; i += 4) memcpy(w + i, "\xF0\x9F\x98\x80", 4);
    k = tr_tokenizer_encode(t, w, ids, n);
    CHECK(k > 0);
    memset(w, ' ', n);
    k = tr_tokenizer_encode(t, w, ids, n);
    CHECK(k > 0);
    free(d);
    free(ids);
    free(w);
}

/* Encode throughput on ~1 MB of the multilingual cases. */
static void bench(tr_tokenizer *t, const char *label) {
    tok_lines l;
    if (tok_lines_read("bpe_cases_gpt2.txt", &l)) return;
    size_t cap = 1100000, n = 0;
    char *text = malloc(cap);
    for (int i = 0; n < 1000000; i = (i + 1) % l.n) {
        size_t k;
        char *c = tok_unhex(l.lines[i], &k, NULL);
        if (n + k + 1 < cap) {
            memcpy(text + n, c, k);
            n += k;
            text[n++] = '\n';
        }
        free(c);
    }
    text[n] = '\0';
    size_t max = n + 1;
    int32_t *ids = malloc(max * sizeof(int32_t));
    /* CPU time of the second of two runs: the machine is shared, and the
     * first run pays the page faults of the fresh buffers. */
    int k = 0;
    double dt = 0;
    for (int r = 0; r < 2; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
        k = tr_tokenizer_encode(t, text, ids, max);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
        dt = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    }
    CHECK(k > 0);
    printf("%s: encoded %.2f MB into %d tokens in %.3f s CPU = %.2f M tokens/s (%.1f MB/s)\n",
           label, (double)n / 1e6, k, dt, k / dt / 1e6, (double)n / 1e6 / dt);
    free(ids);
    free(text);
    tok_lines_free(&l);
}

int main(void) {
    const tr_pretok pres[] = {TR_PRE_GPT2, TR_PRE_QWEN2, TR_PRE_GRANITE};
    const char *files[] = {"bpe_cases_gpt2.txt", "bpe_cases_qwen2.txt", "bpe_cases_granite.txt"};
    for (int i = 0; i < 3; i++) {
        tr_tokenizer *t = load_small(pres[i]);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK(tr_tokenizer_kind(t) == TR_TOK_GPT2 && tr_tokenizer_can_encode(t));
        run_cases(t, files[i], files[i], true);
        if (i == 0) {
            test_edges(t);
            test_random(t);
            test_long_word(t);
            bench(t, "small BPE (2000 merges), gpt2 pre");
        }
        tr_tokenizer_free(t);
    }
    /* Known ids of the JFK sentence: GPT-2 (Whisper .en) and Whisper
     * multilingual tokenizers. */
    static const char jfk[] = " And so my fellow Americans, ask not what your country can do for "
                              "you, ask what you can do for your country.";
    static const int32_t jfk_en[] = {843, 523,  616, 5891, 3399, 11,   1265, 407,  644,
                                     534, 1499, 460, 466,  329,  345,  11,   1265, 644,
                                     345, 460,  466, 329,  534,  1499, 13};
    static const int32_t jfk_ml[] = {400, 370,  452, 7177, 6280, 11,   1029, 406,  437,
                                     428, 1941, 393, 360,  337,  291,  11,   1029, 437,
                                     291, 393,  360, 337,  428,  1941, 13};
    const struct {
        const char *file;
        const int32_t *ids;
    } real[] = {{"whisper-en-vocab.ggml.bin", jfk_en},
                {"whisper-multilingual-vocab.ggml.bin", jfk_ml}};
    for (int i = 0; i < 2; i++) {
        tr_tokenizer *v = load_whisper(real[i].file);
        if (!v) continue;
        int32_t ids[64];
        int n = tr_tokenizer_encode(v, jfk, ids, 64);
        CHECK_MSG(n == 25 && memcmp(ids, real[i].ids, sizeof(int32_t) * 25) == 0, "%s",
                  real[i].file);
        n = tr_tokenizer_encode(v, "Hello world", ids, 64);
        CHECK(n == 2 && (i == 1 || (ids[0] == 15496 && ids[1] == 995)));
        tr_tokenizer_free(v);
    }
    tr_tokenizer *w = load_whisper("whisper-multilingual-vocab.ggml.bin");
    if (w) {
        CHECK(tr_tokenizer_n_vocab(w) == 50257);
        /* The shared vocabulary is lossy (1480 pieces hold U+FFFD, 128 of
         * the 256 single bytes are missing), so text the pieces cannot
         * spell does not round trip; ids must still match the reference. */
        run_cases(w, "whisper_cases.txt", "whisper vocab (rank = id)", false);
        bench(w, "whisper vocab (50257 pieces), gpt2 pre");
        tr_tokenizer_free(w);
    } else {
        printf("whisper vocabulary not found under %s: skipped\n", TR_CORPUS_DIR);
    }
    return TEST_DONE();
}
