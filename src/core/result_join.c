/* Long audio: the result of one piece of a longer input appended to the
 * result of the whole input, on the input's clock (result.h,
 * tr_result_join_piece). The dispatcher's chunked runs (src/api/chunk.c)
 * call it once per piece, in time order. */
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "util/log.h"
#include "util/vec.h"

void tr_result_joiner_init(tr_result_joiner *j) {
    memset(j, 0, sizeof *j);
    tr_strbuf_init(&j->text);
    tr_strbuf_init(&j->raw);
}

void tr_result_joiner_free(tr_result_joiner *j) {
    tr_strbuf_free(&j->text);
    tr_strbuf_free(&j->raw);
    memset(j, 0, sizeof *j);
}

/* Grows a row array to hold at least need elements. */
static bool grow(tr_result *r, void **p, int *cap, int need, size_t elem) {
    void *q = need > (1 << 28) ? NULL : tr_grow_int(*p, cap, need, elem, 64);
    if (!q) {
        r->oom = true;
        TR_ERROR("result: out of memory joining a piece");
        return false;
    }
    *p = q;
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
static void text_join(tr_strbuf *b, const char *s) {
    while (is_space(*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1])) n--;
    if (n == 0) return;
    if (b->len > 0) {
        size_t k = b->len;
        while (k > 0 && ((unsigned char)b->data[k - 1] & 0xC0) == 0x80) k--; /* last char */
        if (k > 0) k--;
        bool cjk = unspaced(utf8_at((const unsigned char *)b->data + k)) &&
                   unspaced(utf8_at((const unsigned char *)s));
        if (!cjk) tr_strbuf_append(b, " ", 1);
    }
    tr_strbuf_append(b, s, n);
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

/* Copies src's string at off into dst's arena; false on OOM (oom set). */
static bool copy_str(tr_result *dst, const tr_result *src, uint64_t off, uint64_t *out) {
    return tr_result_store(dst, tr_result_str(src, off), out);
}

bool tr_result_join_piece(tr_result *dst, tr_result_joiner *j, const tr_result *src, int64_t lo_ms,
                          int64_t hi_ms) {
    int seg0 = dst->n_segs, word0 = dst->n_words, tok0 = dst->n_toks;
    const char *text = tr_result_full_text(src);
    text_join(&j->text, text);
    if (src->has_raw_text && *tr_result_raw_text(src)) {
        if (j->raw.len > 0) tr_strbuf_append(&j->raw, "\n", 1);
        tr_strbuf_appends(&j->raw, tr_result_raw_text(src));
    }
    if (j->text.oom || j->raw.oom) dst->oom = true;
    if (!dst->has_language && *tr_result_language(src)) {
        if (!tr_result_set_language(dst, tr_result_language(src))) return false;
    }
    /* audio tags: the first piece that has them (like the language) */
    if (!dst->has_emotion && *tr_result_emotion(src) &&
        !tr_result_set_emotion(dst, tr_result_emotion(src)))
        return false;
    if (!dst->has_event && *tr_result_audio_event(src) &&
        !tr_result_set_audio_event(dst, tr_result_audio_event(src)))
        return false;
    if (dst->ts_kind == TRANSCRIBE_TIMESTAMPS_NONE) dst->ts_kind = src->ts_kind; /* first timed */
    /* A piece without times: its rows get the piece's span. */
    bool untimed = src->ts_kind == TRANSCRIBE_TIMESTAMPS_NONE;
    int64_t off = lo_ms;

    /* Speakers of a split run: a family numbers the speakers of each piece
     * from 1 on its own, with nothing that ties "speaker 1" of one piece to
     * "speaker 1" of the next (no voice embedding, and the prompt carries no
     * earlier turns). Rather than claim an identity it cannot know, the
     * join keeps every piece's speakers apart: piece k's speaker n becomes
     * speaker_base + n, where speaker_base counts the ids earlier pieces
     * took. Turns inside a piece keep their identity. */
    int32_t spk_base = j->speaker_base, spk_max = 0;
    int64_t p0 = seg0 ? dst->segs[seg0 - 1].t0_ms : 0, p1 = seg0 ? dst->segs[seg0 - 1].t1_ms : 0;
    if (!grow(dst, (void **)&dst->segs, &dst->cap_segs, seg0 + src->n_segs + 1,
              sizeof *dst->segs)) {
        return false;
    }
    for (int i = 0; i < src->n_segs; i++) {
        tr_result_segment g = src->segs[i];
        if (!copy_str(dst, src, g.text_off, &g.text_off)) return false;
        if (untimed) g.t0_ms = 0, g.t1_ms = hi_ms - lo_ms;
        place(&g.t0_ms, &g.t1_ms, off, lo_ms, hi_ms, &p0, &p1);
        g.first_word += word0;
        g.first_token += tok0;
        if (g.speaker_id > 0) {
            if (g.speaker_id > spk_max) spk_max = g.speaker_id;
            g.speaker_id += spk_base;
        }
        dst->segs[dst->n_segs++] = g;
    }
    if (src->n_segs == 0 && *text) {
        /* A piece whose family gives no rows still has its place in time. */
        tr_result_segment g = {0};
        g.t0_ms = lo_ms;
        g.t1_ms = hi_ms;
        g.first_word = word0;
        g.first_token = tok0;
        if (!tr_result_store(dst, text, &g.text_off)) return false;
        place(&g.t0_ms, &g.t1_ms, 0, lo_ms, hi_ms, &p0, &p1);
        dst->segs[dst->n_segs++] = g;
    }
    p0 = word0 ? dst->words[word0 - 1].t0_ms : 0, p1 = word0 ? dst->words[word0 - 1].t1_ms : 0;
    if (!grow(dst, (void **)&dst->words, &dst->cap_words, word0 + src->n_words,
              sizeof *dst->words)) {
        return false;
    }
    for (int i = 0; i < src->n_words; i++) {
        tr_result_word w = src->words[i];
        if (!copy_str(dst, src, w.text_off, &w.text_off)) return false;
        if (untimed) w.t0_ms = 0, w.t1_ms = hi_ms - lo_ms;
        place(&w.t0_ms, &w.t1_ms, off, lo_ms, hi_ms, &p0, &p1);
        w.seg_index += seg0;
        w.first_token += tok0;
        dst->words[dst->n_words++] = w;
    }
    p0 = tok0 ? dst->toks[tok0 - 1].t0_ms : 0, p1 = tok0 ? dst->toks[tok0 - 1].t1_ms : 0;
    if (!grow(dst, (void **)&dst->toks, &dst->cap_toks, tok0 + src->n_toks, sizeof *dst->toks)) {
        return false;
    }
    for (int i = 0; i < src->n_toks; i++) {
        tr_result_token t = src->toks[i];
        if (!copy_str(dst, src, t.text_off, &t.text_off)) return false;
        if (untimed) t.t0_ms = 0, t.t1_ms = hi_ms - lo_ms;
        place(&t.t0_ms, &t.t1_ms, off, lo_ms, hi_ms, &p0, &p1);
        t.seg_index += seg0;
        if (t.word_index >= 0) t.word_index += word0;
        dst->toks[dst->n_toks++] = t;
    }
    int spk0 = dst->n_spk;
    p0 = spk0 ? dst->spk[spk0 - 1].t0_ms : 0, p1 = spk0 ? dst->spk[spk0 - 1].t1_ms : 0;
    if (!grow(dst, (void **)&dst->spk, &dst->cap_spk, spk0 + src->n_spk, sizeof *dst->spk)) {
        return false;
    }
    for (int i = 0; i < src->n_spk; i++) {
        tr_result_speaker t = src->spk[i];
        if (untimed) t.t0_ms = 0, t.t1_ms = hi_ms - lo_ms;
        place(&t.t0_ms, &t.t1_ms, off, lo_ms, hi_ms, &p0, &p1);
        if (t.speaker_id > spk_max) spk_max = t.speaker_id;
        t.speaker_id += spk_base;
        dst->spk[dst->n_spk++] = t;
    }
    j->speaker_base += spk_max;
    return !dst->oom;
}

bool tr_result_joiner_finish(tr_result *dst, const tr_result_joiner *j) {
    if (j->text.oom || j->raw.oom) {
        dst->oom = true;
        return false;
    }
    if (j->raw.len > 0 && !tr_result_set_raw_text(dst, tr_strbuf_cstr(&j->raw))) return false;
    return tr_result_set_full_text(dst, tr_strbuf_cstr(&j->text));
}

void tr_result_clamp(tr_result *r, int64_t end_ms) {
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
    CLAMP_ROWS(r->spk, r->n_spk)
#undef CLAMP_ROWS
}
