/* One file's transcript as the output formats see it (cli.h): rows copied
 * out of the session, so that pieces of a long file, each transcribed by its
 * own call, print as one result on the file's clock. */
#include <stdlib.h>
#include <string.h>

#include "output.h"

void cli_result_init(cli_result *r) {
    memset(r, 0, sizeof *r);
    r->kind = TRANSCRIBE_TIMESTAMPS_NONE;
    r->text = calloc(1, 1);
    if (!r->text) r->oom = true;
}

void cli_result_free(cli_result *r) {
    for (int i = 0; i < r->n_segs; i++) free((char *)r->segs[i].text);
    for (int i = 0; i < r->n_words; i++) free((char *)r->words[i].text);
    for (int i = 0; i < r->n_toks; i++) free((char *)r->toks[i].text);
    free(r->segs), free(r->words), free(r->toks), free(r->chunks), free(r->text);
    memset(r, 0, sizeof *r);
}

static char *dup_text(const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s ? s : "", n);
    return d;
}

/* Makes room for one more element of size sz in *v (count n, capacity *cap). */
static bool grow(void **v, int n, int *cap, size_t sz) {
    if (n < *cap) return true;
    int nc = *cap ? *cap * 2 : 64;
    void *p = realloc(*v, (size_t)nc * sz);
    if (!p) return false;
    *v = p;
    *cap = nc;
    return true;
}

static bool text_put(cli_result *r, const char *s, size_t n) {
    if (r->text_len + n + 1 > r->text_cap) {
        size_t nc = r->text_cap ? r->text_cap : 256;
        while (nc < r->text_len + n + 1) nc *= 2;
        char *p = realloc(r->text, nc);
        if (!p) return false;
        r->text = p;
        r->text_cap = nc;
    }
    memcpy(r->text + r->text_len, s, n);
    r->text_len += n;
    r->text[r->text_len] = '\0';
    return true;
}

/* The code point of the UTF-8 sequence at s (0 if malformed). */
static uint32_t utf8_at(const unsigned char *s) {
    if (s[0] < 0x80) return s[0];
    if ((s[0] & 0xE0) == 0xC0 && s[1]) return ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    if ((s[0] & 0xF0) == 0xE0 && s[1] && s[2]) {
        return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    return 0;
}

/* Scripts written without spaces between words: CJK punctuation, kana,
 * ideographs, full-width forms. */
static bool unspaced(uint32_t c) {
    return (c >= 0x3000 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x9FFF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFF00 && c <= 0xFFEF);
}

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Joins a piece's text: trimmed, one space between pieces unless both
 * sides of the join are in an unspaced script. */
static bool text_join(cli_result *r, const char *s) {
    while (is_space(*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1])) n--;
    if (n == 0) return true;
    if (r->text_len > 0) {
        size_t k = r->text_len;
        while (k > 0 && ((unsigned char)r->text[k - 1] & 0xC0) == 0x80) k--; /* last char */
        if (k > 0) k--;
        bool cjk = unspaced(utf8_at((const unsigned char *)r->text + k)) &&
                   unspaced(utf8_at((const unsigned char *)s));
        if (!cjk && !text_put(r, " ", 1)) return false;
    }
    return text_put(r, s, n);
}

/* Moves [*t0, *t1] by off, into [lo, hi], and not before *prev0 / *prev1. */
static void place(int64_t *t0, int64_t *t1, int64_t off, int64_t lo, int64_t hi, int64_t *prev0,
                  int64_t *prev1) {
    int64_t a = *t0 + off, b = *t1 + off;
    a = a < lo ? lo : a > hi ? hi : a;
    b = b < lo ? lo : b > hi ? hi : b;
    if (a < *prev0) a = *prev0;
    if (b < a) b = a;
    if (b < *prev1) b = *prev1;
    *t0 = *prev0 = a;
    *t1 = *prev1 = b;
}

/* The session accessors for the single run (i < 0) or batch row i. */
static const char *full_text(const struct transcribe_session *s, int i) {
    return i < 0 ? transcribe_full_text(s) : transcribe_batch_full_text(s, i);
}

void cli_result_append(cli_result *r, const struct transcribe_session *s, int i, bool shift,
                       int64_t offset_ms, int64_t lo_ms, int64_t hi_ms) {
    int seg0 = r->n_segs, word0 = r->n_words, tok0 = r->n_toks;
    bool single = i < 0;
    const char *text = full_text(s, i);
    if (!text_join(r, text)) r->oom = true;
    const char *lang =
        single ? transcribe_detected_language(s) : transcribe_batch_detected_language(s, i);
    if (!r->language[0] && lang && *lang) snprintf(r->language, sizeof r->language, "%s", lang);
    transcribe_timestamp_kind kind = single ? transcribe_returned_timestamp_kind(s)
                                            : transcribe_batch_returned_timestamp_kind(s, i);
    if (r->kind == TRANSCRIBE_TIMESTAMPS_NONE) r->kind = kind; /* the first piece with times */
    /* A piece without times: its rows get the piece's span. */
    bool untimed = shift && kind == TRANSCRIBE_TIMESTAMPS_NONE;
    if (single && transcribe_was_truncated(s)) r->truncated = true;
    r->n_speaker_segments +=
        single ? transcribe_n_speaker_segments(s) : transcribe_batch_n_speaker_segments(s, i);

    /* Speakers of a split run: a family numbers the speakers of each piece
     * from 1 on its own, with nothing that ties "speaker 1" of one piece to
     * "speaker 1" of the next (no voice embedding, and the prompt carries no
     * earlier turns). Rather than claim an identity it cannot know, the
     * stitch keeps every piece's speakers apart: piece k's speaker n becomes
     * speaker_base + n, where speaker_base counts the ids earlier pieces
     * took. Turns inside a piece keep their identity. */
    int32_t spk_base = shift ? r->speaker_base : 0, spk_max = 0;
    int64_t p0 = seg0 ? r->segs[seg0 - 1].t0_ms : 0, p1 = seg0 ? r->segs[seg0 - 1].t1_ms : 0;
    int ns = single ? transcribe_n_segments(s) : transcribe_batch_n_segments(s, i);
    for (int j = 0; j < ns; j++) {
        struct transcribe_segment g;
        transcribe_segment_init(&g);
        transcribe_status st =
            single ? transcribe_get_segment(s, j, &g) : transcribe_batch_get_segment(s, i, j, &g);
        if (st != TRANSCRIBE_OK) continue;
        if (!grow((void **)&r->segs, r->n_segs, &r->cap_segs, sizeof g) ||
            !(g.text = dup_text(g.text))) {
            r->oom = true;
            return;
        }
        if (untimed) g.t0_ms = 0, g.t1_ms = hi_ms - lo_ms;
        if (shift) place(&g.t0_ms, &g.t1_ms, offset_ms, lo_ms, hi_ms, &p0, &p1);
        g.first_word += word0;
        g.first_token += tok0;
        if (g.speaker_id > 0) {
            if (g.speaker_id > spk_max) spk_max = g.speaker_id;
            g.speaker_id += spk_base;
        }
        r->segs[r->n_segs++] = g;
    }
    if (shift) r->speaker_base += spk_max;
    if (shift && ns == 0 && text && *text) {
        /* A piece whose family gives no rows still has its place in time. */
        struct transcribe_segment g;
        transcribe_segment_init(&g);
        g.t0_ms = lo_ms;
        g.t1_ms = hi_ms;
        g.first_word = word0;
        g.first_token = tok0;
        if (!grow((void **)&r->segs, r->n_segs, &r->cap_segs, sizeof g) ||
            !(g.text = dup_text(text))) {
            r->oom = true;
            return;
        }
        place(&g.t0_ms, &g.t1_ms, 0, lo_ms, hi_ms, &p0, &p1);
        r->segs[r->n_segs++] = g;
    }
    p0 = word0 ? r->words[word0 - 1].t0_ms : 0, p1 = word0 ? r->words[word0 - 1].t1_ms : 0;
    int nw = single ? transcribe_n_words(s) : transcribe_batch_n_words(s, i);
    for (int j = 0; j < nw; j++) {
        struct transcribe_word w;
        transcribe_word_init(&w);
        transcribe_status st =
            single ? transcribe_get_word(s, j, &w) : transcribe_batch_get_word(s, i, j, &w);
        if (st != TRANSCRIBE_OK) continue;
        if (!grow((void **)&r->words, r->n_words, &r->cap_words, sizeof w) ||
            !(w.text = dup_text(w.text))) {
            r->oom = true;
            return;
        }
        if (untimed) w.t0_ms = 0, w.t1_ms = hi_ms - lo_ms;
        if (shift) place(&w.t0_ms, &w.t1_ms, offset_ms, lo_ms, hi_ms, &p0, &p1);
        w.seg_index += seg0;
        w.first_token += tok0;
        r->words[r->n_words++] = w;
    }
    p0 = tok0 ? r->toks[tok0 - 1].t0_ms : 0, p1 = tok0 ? r->toks[tok0 - 1].t1_ms : 0;
    int nt = single ? transcribe_n_tokens(s) : transcribe_batch_n_tokens(s, i);
    for (int j = 0; j < nt; j++) {
        struct transcribe_token t;
        transcribe_token_init(&t);
        transcribe_status st =
            single ? transcribe_get_token(s, j, &t) : transcribe_batch_get_token(s, i, j, &t);
        if (st != TRANSCRIBE_OK) continue;
        if (!grow((void **)&r->toks, r->n_toks, &r->cap_toks, sizeof t) ||
            !(t.text = dup_text(t.text))) {
            r->oom = true;
            return;
        }
        if (untimed) t.t0_ms = 0, t.t1_ms = hi_ms - lo_ms;
        if (shift) place(&t.t0_ms, &t.t1_ms, offset_ms, lo_ms, hi_ms, &p0, &p1);
        t.seg_index += seg0;
        if (t.word_index >= 0) t.word_index += word0;
        r->toks[r->n_toks++] = t;
    }
}

void cli_result_add_chunk(cli_result *r, int64_t t0_ms, int64_t t1_ms, int end_kind,
                          transcribe_status st) {
    if (!grow((void **)&r->chunks, r->n_chunks, &r->cap_chunks, sizeof *r->chunks)) {
        r->oom = true;
        return;
    }
    r->chunks[r->n_chunks++] = (cli_chunk){t0_ms, t1_ms, end_kind, st};
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) r->truncated = true;
}

void cli_result_clamp(cli_result *r, int64_t end_ms) {
    if (end_ms < 0) end_ms = 0;
#define CLAMP_ROWS(rows, n)                                                                        \
    for (int i = 0; i < (n); i++) {                                                                \
        if ((rows)[i].t0_ms < 0) (rows)[i].t0_ms = 0;                                              \
        if ((rows)[i].t0_ms > end_ms) (rows)[i].t0_ms = end_ms;                                    \
        if ((rows)[i].t1_ms > end_ms) (rows)[i].t1_ms = end_ms;                                    \
        if ((rows)[i].t1_ms < (rows)[i].t0_ms) (rows)[i].t1_ms = (rows)[i].t0_ms;                  \
    }
    CLAMP_ROWS(r->segs, r->n_segs)
    CLAMP_ROWS(r->words, r->n_words)
    CLAMP_ROWS(r->toks, r->n_toks)
#undef CLAMP_ROWS
}
