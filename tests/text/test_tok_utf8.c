/* UTF-8 repair and streaming helpers: parity with Python's
 * bytes.decode("utf-8", "replace") on invalid sequences, and the
 * complete-prefix rule used to stream decoded tokens. */
#include <string.h>

#include "tok_data.h"
#include "test_util.h"
#include "text/tok_internal.h"
#include "text/tokenizer.h"

static void test_sanitize_parity(void) {
    tok_lines l;
    CHECK(tok_lines_read("utf8_cases.txt", &l) == 0);
    int same = 0;
    for (int i = 0; i < l.n; i++) {
        const char *end;
        size_t n_in, n_exp;
        char *in = tok_unhex(l.lines[i], &n_in, &end);
        char *exp = tok_unhex(end + 1, &n_exp, NULL);
        char *got = tr_utf8_sanitize(in, n_in);
        /* compare by length: the input may hold NUL bytes */
        bool ok = got && memcmp(got, exp, n_exp) == 0 && got[n_exp] == '\0';
        CHECK_MSG(ok, "utf8 case %d (%s)", i, l.lines[i]);
        same += ok;
        free(in);
        free(exp);
        free(got);
    }
    printf("utf8 sanitize: %d/%d identical to Python\n", same, l.n);
    CHECK(l.n > 300);
    tok_lines_free(&l);
}

static void test_complete_prefix(void) {
    CHECK(tr_utf8_complete_prefix("", 0) == 0);
    CHECK(tr_utf8_complete_prefix("abc", 3) == 3);
    CHECK(tr_utf8_complete_prefix("a\xC3", 2) == 1); /* é cut after lead */
    CHECK(tr_utf8_complete_prefix("a\xC3\xA9", 3) == 3);
    CHECK(tr_utf8_complete_prefix("a\xE2\x82", 3) == 1);    /* € cut */
    CHECK(tr_utf8_complete_prefix("\xF0\x9F\x98", 3) == 0); /* 😀 cut */
    CHECK(tr_utf8_complete_prefix("\xF0\x9F\x98\x80", 4) == 4);
    CHECK(tr_utf8_complete_prefix("a\xFF", 2) == 2);     /* invalid is final */
    CHECK(tr_utf8_complete_prefix("a\x80", 2) == 2);     /* stray continuation */
    CHECK(tr_utf8_complete_prefix("a\xE0\x80", 3) == 3); /* overlong: invalid */
    CHECK(tr_utf8_complete_prefix("a\xED\xA0", 3) == 3); /* surrogate: invalid */
    CHECK(tr_utf8_complete_prefix("\x80\x80\x80\x80", 4) == 4);

    /* Streaming: feed a string one byte at a time and emit only complete
     * prefixes; the concatenation must equal the input. */
    const char *s = "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80!";
    char out[64] = {0}, pend[16];
    size_t np = 0, no = 0;
    for (size_t i = 0; s[i]; i++) {
        pend[np++] = s[i];
        size_t k = tr_utf8_complete_prefix(pend, np);
        memcpy(out + no, pend, k);
        no += k;
        memmove(pend, pend + k, np - k);
        np -= k;
        CHECK(np < 4);
    }
    CHECK(np == 0 && strcmp(out, s) == 0);
}

static void test_decode_step(void) {
    uint32_t cp;
    CHECK(tr_utf8_decode((const unsigned char *)"A", 1, &cp) == 1 && cp == 'A');
    CHECK(tr_utf8_decode((const unsigned char *)"\xC3\xA9", 2, &cp) == 2 && cp == 0xE9);
    CHECK(tr_utf8_decode((const unsigned char *)"\xC3\xA9", 1, &cp) == 0);
    CHECK(tr_utf8_decode((const unsigned char *)"\xC0\x80", 2, &cp) == 0);
    CHECK(tr_utf8_decode((const unsigned char *)"\xF4\x8F\xBF\xBF", 4, &cp) == 4 && cp == 0x10FFFF);
    CHECK(tr_utf8_decode((const unsigned char *)"\xF4\x90\x80\x80", 4, &cp) == 0);
    CHECK(tr_uni_flags('a') == TR_UNI_L && tr_uni_flags('7') == TR_UNI_N);
    CHECK(tr_uni_flags(' ') == TR_UNI_WS && tr_uni_flags(0x3000) == TR_UNI_WS);
    CHECK(tr_uni_flags(0x4E2D) == TR_UNI_L && tr_uni_flags(0x0661) == TR_UNI_N);
    CHECK(tr_uni_flags(0x301) == 0 && tr_uni_flags('!') == 0 && tr_uni_flags(0x1F600) == 0);
    CHECK(tr_uni_flags(0x10FFFF) == 0 && tr_uni_flags(0x1C) == 0);
    char *s = tr_utf8_sanitize(NULL, 0);
    CHECK(s && s[0] == '\0');
    free(s);
}

int main(void) {
    test_sanitize_parity();
    test_complete_prefix();
    test_decode_step();
    return TEST_DONE();
}
