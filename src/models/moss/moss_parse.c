/* The docs/formats/moss.md §10 scanner and turn post-processing. Text outside recognised
 * constructs is appended, in order, to one buffer; a turn remembers where
 * its text starts, so turn k's text runs up to turn k+1's start (a turn
 * stays open until the next one opens, or a final TIME closes the last). */
#include "models/moss/moss_parse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/strbuf.h"
#include "util/vec.h"

#define UNKNOWN_MS INT64_MIN

typedef struct turn {
    int64_t t0, t1;
    int32_t spk;
    size_t text_at; /* offset of the turn's first text byte in the buffer */
} turn;

typedef struct scan {
    const char *s;
    size_t n;
    tr_strbuf text;
    turn *turns;
    size_t n_turns, cap_turns;
    bool open; /* the last turn is still open */
    bool oom;
} scan;

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* TIME := '[' digit+ ('.' digit+)? ']' at i: ms rounded on the 4th
 * fraction digit; returns the length, 0 when not a TIME (also for
 * more than 12 significant integer digits: no timestamp). */
static size_t try_time(const scan *sc, size_t i, int64_t *ms) {
    const char *s = sc->s;
    const size_t n = sc->n;
    if (i >= n || s[i] != '[') return 0;
    size_t j = i + 1;
    if (j >= n || !is_digit(s[j])) return 0;
    int64_t whole = 0;
    for (; j < n && is_digit(s[j]); j++) {
        if (whole > 99999999999LL) return 0; /* 13+ significant digits */
        whole = whole * 10 + (s[j] - '0');
    }
    int64_t frac = 0;
    int n_frac = 0;
    bool up = false;
    if (j < n && s[j] == '.') {
        j++;
        if (j >= n || !is_digit(s[j])) return 0;
        for (; j < n && is_digit(s[j]); j++, n_frac++) {
            if (n_frac < 3) frac = frac * 10 + (s[j] - '0');
            if (n_frac == 3) up = s[j] >= '5';
        }
    }
    if (j >= n || s[j] != ']') return 0;
    for (int k = n_frac; k < 3; k++) frac *= 10;
    *ms = whole * 1000 + frac + (up ? 1 : 0);
    return j + 1 - i;
}

/* SPK := '[S' digit+ ']' with 1 <= id <= INT32_MAX at i; length or 0. */
static size_t try_spk(const scan *sc, size_t i, int32_t *id) {
    const char *s = sc->s;
    const size_t n = sc->n;
    if (i + 2 >= n || s[i] != '[' || s[i + 1] != 'S' || !is_digit(s[i + 2])) return 0;
    int64_t v = 0;
    size_t j = i + 2;
    for (; j < n && is_digit(s[j]); j++) {
        v = v * 10 + (s[j] - '0');
        if (v > INT32_MAX) return 0;
    }
    if (j >= n || s[j] != ']' || v < 1) return 0;
    *id = (int32_t)v;
    return j + 1 - i;
}

static void put_text(scan *sc, const char *p, size_t n) {
    if (!tr_strbuf_append(&sc->text, p, n)) sc->oom = true;
}

/* Closes the open turn (if any) at t1. */
static void close_turn(scan *sc, int64_t t1) {
    if (sc->open) sc->turns[sc->n_turns - 1].t1 = t1;
    sc->open = false;
}

static void open_turn(scan *sc, int64_t t0, int32_t spk) {
    turn *t = tr_grow(sc->turns, &sc->cap_turns, sc->n_turns + 1, sizeof *t, 16);
    if (!t) {
        sc->oom = true;
        return;
    }
    sc->turns = t;
    sc->turns[sc->n_turns++] = (turn){t0, UNKNOWN_MS, spk, sc->text.len};
    sc->open = true;
}

static void run_scan(scan *sc) {
    size_t i = 0;
    while (i < sc->n && !sc->oom) {
        if (sc->s[i] != '[') {
            size_t j = i;
            while (j < sc->n && sc->s[j] != '[') j++;
            put_text(sc, sc->s + i, j - i);
            i = j;
            continue;
        }
        int64_t t, t2;
        int32_t spk;
        size_t lt = try_time(sc, i, &t);
        if (lt) {
            size_t j = i + lt, ls, lt2;
            if ((ls = try_spk(sc, j, &spk))) { /* TIME SPK */
                close_turn(sc, t);
                open_turn(sc, t, spk);
                i = j + ls;
            } else if ((lt2 = try_time(sc, j, &t2)) && (ls = try_spk(sc, j + lt2, &spk)) &&
                       sc->open) { /* TIME TIME' SPK with a turn open */
                close_turn(sc, t);
                open_turn(sc, t2, spk);
                i = j + lt2 + ls;
            } else if (j == sc->n && sc->open) { /* final TIME */
                close_turn(sc, t);
                i = j;
            } else { /* literal TIME (rescan after it) */
                put_text(sc, sc->s + i, lt);
                i = j;
            }
            continue;
        }
        size_t ls = try_spk(sc, i, &spk);
        if (ls) { /* bare SPK: unknown times */
            close_turn(sc, UNKNOWN_MS);
            open_turn(sc, UNKNOWN_MS, spk);
            i += ls;
            continue;
        }
        put_text(sc, "[", 1);
        i++;
    }
}

/* docs/formats/moss.md §10.2: fill unknown starts forward, unknown ends backward, t1 >= t0. */
static void patch_times(turn *t, size_t n, int64_t audio_ms) {
    for (size_t k = 0; k < n; k++) {
        if (t[k].t0 == UNKNOWN_MS) {
            if (k == 0)
                t[k].t0 = 0;
            else
                t[k].t0 = t[k - 1].t1 != UNKNOWN_MS ? t[k - 1].t1 : t[k - 1].t0;
        }
        if (t[k].t0 < 0) t[k].t0 = 0;
    }
    for (size_t k = n; k-- > 0;) {
        if (t[k].t1 == UNKNOWN_MS) t[k].t1 = k + 1 < n ? t[k + 1].t0 : audio_ms;
        if (t[k].t1 < t[k].t0) t[k].t1 = t[k].t0;
    }
}

static bool is_trim(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Copies [a, b) of src, trimmed and NUL-terminated, to dst; returns the
 * bytes used (length + 1). */
static size_t put_trimmed(char *dst, const char *src, size_t a, size_t b) {
    while (a < b && is_trim(src[a])) a++;
    while (b > a && is_trim(src[b - 1])) b--;
    memcpy(dst, src + a, b - a);
    dst[b - a] = '\0';
    return b - a + 1;
}

static transcribe_status fallback(const char *raw, size_t n, int64_t audio_ms, tr_result *res) {
    char *copy = malloc(n + 1);
    if (!copy) return TRANSCRIBE_ERR_OOM;
    memcpy(copy, raw, n);
    copy[n] = '\0';
    tr_result_set_raw_text(res, copy);
    tr_result_set_full_text(res, copy);
    tr_result_add_segment(res, 0, audio_ms, copy);
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    free(copy);
    return res->oom ? TRANSCRIBE_ERR_OOM : TRANSCRIBE_OK;
}

/* Segments, speaker rows and full text from the patched turns. The text
 * buffer is cut in place (each piece is NUL-terminated after trimming). */
static transcribe_status emit(scan *sc, const moss_out_policy *pol, tr_result *res) {
    tr_strbuf full;
    tr_strbuf_init(&full);
    const char *text = tr_strbuf_cstr(&sc->text);
    const size_t len = sc->text.len, n_pieces = sc->n_turns + 1;
    /* piece 0 is the leading text, piece k + 1 turn k's */
    char **piece = calloc(n_pieces, sizeof *piece);
    char *store = malloc(len + n_pieces);
    if (!piece || !store) {
        free(piece);
        free(store);
        tr_strbuf_free(&full);
        return TRANSCRIBE_ERR_OOM;
    }
    size_t used = 0;
    for (size_t k = 0; k < n_pieces; k++) {
        size_t a = k == 0 ? 0 : sc->turns[k - 1].text_at;
        size_t b = k < sc->n_turns ? sc->turns[k].text_at : len;
        piece[k] = store + used;
        used += put_trimmed(store + used, text, a, b);
    }
    const bool ts = pol->timestamps, spk = pol->diarize;
    if (piece[0][0]) {
        tr_result_add_segment(res, 0, ts ? sc->turns[0].t0 : 0, piece[0]);
        tr_strbuf_appends(&full, piece[0]);
    }
    for (size_t k = 0; k < sc->n_turns; k++) {
        const turn *t = &sc->turns[k];
        const char *p = piece[k + 1];
        int seg = tr_result_add_segment(res, ts ? t->t0 : 0, ts ? t->t1 : 0, p);
        if (seg >= 0 && spk) tr_result_set_segment_speaker(res, seg, t->spk);
        if (spk) tr_result_add_speaker(res, ts ? t->t0 : 0, ts ? t->t1 : 0, t->spk, NAN);
        if (p[0]) {
            if (full.len) tr_strbuf_append(&full, " ", 1);
            tr_strbuf_appends(&full, p);
        }
    }
    free(piece);
    free(store);
    tr_result_set_full_text(res, tr_strbuf_cstr(&full));
    tr_result_set_timestamp_kind(res,
                                 ts ? TRANSCRIBE_TIMESTAMPS_SEGMENT : TRANSCRIBE_TIMESTAMPS_NONE);
    bool oom = full.oom || res->oom;
    tr_strbuf_free(&full);
    return oom ? TRANSCRIBE_ERR_OOM : TRANSCRIBE_OK;
}

transcribe_status tr_moss_fill_result(const char *raw, size_t n, int64_t audio_ms,
                                      const moss_out_policy *pol, tr_result *res) {
    if (!raw) n = 0;
    scan sc = {.s = raw ? raw : "", .n = n};
    tr_strbuf_init(&sc.text);
    run_scan(&sc);
    transcribe_status st;
    if (sc.oom || sc.text.oom) {
        TR_ERROR("moss: out of memory parsing the output (%zu bytes)", n);
        st = TRANSCRIBE_ERR_OOM;
    } else if (sc.n_turns == 0) {
        st = fallback(sc.s, n, audio_ms, res);
    } else {
        close_turn(&sc, UNKNOWN_MS);
        patch_times(sc.turns, sc.n_turns, audio_ms);
        char *copy = malloc(n + 1);
        if (!copy) {
            st = TRANSCRIBE_ERR_OOM;
        } else {
            memcpy(copy, sc.s, n);
            copy[n] = '\0';
            tr_result_set_raw_text(res, copy);
            free(copy);
            st = emit(&sc, pol, res);
        }
    }
    tr_strbuf_free(&sc.text);
    free(sc.turns);
    return st;
}
