/* One file's transcript as the output formats see it (cli.h): rows copied
 * out of the session (a long file the library split at pauses included:
 * its rows are already on the file's clock, its pieces listed). */
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

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Sets the text, trimmed. */
static bool text_set(cli_result *r, const char *s) {
    if (!s) s = "";
    while (is_space(*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1])) n--;
    char *p = realloc(r->text, n + 1);
    if (!p) return false;
    memcpy(p, s, n);
    p[n] = '\0';
    r->text = p;
    r->text_len = n;
    r->text_cap = n + 1;
    return true;
}

/* The session accessors for the single run (i < 0) or batch row i. */
static const char *full_text(const struct transcribe_session *s, int i) {
    return i < 0 ? transcribe_full_text(s) : transcribe_batch_full_text(s, i);
}

void cli_result_copy(cli_result *r, const struct transcribe_session *s, int i) {
    bool single = i < 0;
    if (!text_set(r, full_text(s, i))) r->oom = true;
    const char *lang =
        single ? transcribe_detected_language(s) : transcribe_batch_detected_language(s, i);
    if (lang && *lang) snprintf(r->language, sizeof r->language, "%s", lang);
    const char *emo =
        single ? transcribe_detected_emotion(s) : transcribe_batch_detected_emotion(s, i);
    const char *ev =
        single ? transcribe_detected_audio_event(s) : transcribe_batch_detected_audio_event(s, i);
    if (emo && *emo) snprintf(r->emotion, sizeof r->emotion, "%s", emo);
    if (ev && *ev) snprintf(r->audio_event, sizeof r->audio_event, "%s", ev);
    r->kind = single ? transcribe_returned_timestamp_kind(s)
                     : transcribe_batch_returned_timestamp_kind(s, i);
    if (single && transcribe_was_truncated(s)) r->truncated = true;
    r->n_speaker_segments =
        single ? transcribe_n_speaker_segments(s) : transcribe_batch_n_speaker_segments(s, i);
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
        r->segs[r->n_segs++] = g;
    }
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
        r->words[r->n_words++] = w;
    }
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
        r->toks[r->n_toks++] = t;
    }
    /* Long audio the library split at pauses: its pieces. */
    r->chunked = single ? transcribe_was_chunked(s) : transcribe_batch_was_chunked(s, i);
    int np = single ? transcribe_n_pieces(s) : transcribe_batch_n_pieces(s, i);
    for (int j = 0; j < np; j++) {
        struct transcribe_piece pc;
        transcribe_piece_init(&pc);
        transcribe_status st =
            single ? transcribe_get_piece(s, j, &pc) : transcribe_batch_get_piece(s, i, j, &pc);
        if (st == TRANSCRIBE_OK)
            cli_result_add_chunk(r, pc.t0_ms, pc.t1_ms, pc.end_kind, pc.status);
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
