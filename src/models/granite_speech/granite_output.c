/* Granite Speech output parsing (docs/formats/granite_speech.md §10): word rows from "[T:N]"
 * end-time markers (centiseconds modulo 1000, so a smaller N is a 10 s rollover), speaker turns
 * from "[Speaker N]:" markers, else the plain text. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/granite_speech/granite.h"
#include "text/tokenizer.h"

static bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* Trimmed copy of [a, b) into buf (NUL-terminated). */
static char *trim_copy(const char *a, const char *b, char *buf) {
    while (a < b && is_ws(*a)) a++;
    while (b > a && is_ws(b[-1])) b--;
    memcpy(buf, a, (size_t)(b - a));
    buf[b - a] = 0;
    return buf;
}

/* "[T:" spaces digits spaces "]" at s: its value and the end, or NULL. */
static const char *time_marker(const char *s, long *val) {
    if (strncmp(s, "[T:", 3) != 0) return NULL;
    const char *p = s + 3;
    while (*p == ' ') p++;
    if (!is_digit(*p)) return NULL;
    long v = 0;
    while (is_digit(*p)) {
        if (v < 100000000) v = v * 10 + (*p - '0');
        p++;
    }
    while (*p == ' ') p++;
    if (*p != ']') return NULL;
    *val = v;
    return p + 1;
}

/* The pending text is raw minus the markers: gathered into buf. */
static bool parse_words(const char *raw, int64_t audio_ms, tr_result *res, char *pend, char *w) {
    long last = -1, rollover = 0;
    int64_t prev_end = 0;
    size_t np = 0;
    int n_words = 0;
    int64_t first_t0 = 0, last_t1 = 0;
    /* rows are added after one segment, so gather first */
    typedef struct row {
        int64_t t0, t1;
        size_t off;
    } row;
    size_t len = strlen(raw);
    row *rows = malloc((len / 2 + 2) * sizeof *rows);
    char *texts = malloc(len + 1);
    size_t nt = 0;
    if (!rows || !texts) {
        free(rows);
        free(texts);
        return false;
    }
    for (const char *s = raw;;) {
        long v;
        const char *e = *s ? time_marker(s, &v) : NULL;
        if (e || !*s) {
            int64_t end_ms;
            if (e) {
                if (last >= 0 && v < last) rollover++;
                last = v;
                end_ms = (v + 1000 * (int64_t)rollover) * 10;
            } else {
                end_ms = audio_ms > prev_end ? audio_ms : prev_end;
            }
            trim_copy(pend, pend + np, w);
            if (*w && strcmp(w, "_") != 0) {
                rows[n_words] = (row){prev_end, end_ms, nt};
                size_t l = strlen(w);
                memcpy(texts + nt, w, l + 1);
                nt += l + 1;
                if (n_words == 0) first_t0 = prev_end;
                last_t1 = end_ms;
                n_words++;
            }
            prev_end = end_ms;
            np = 0;
            if (!e) break;
            s = e;
        } else {
            pend[np++] = *s++;
        }
    }
    bool ok = true;
    if (n_words > 0) {
        size_t tl = 0;
        char *full = malloc(nt + 1);
        ok = full != NULL;
        for (int i = 0; ok && i < n_words; i++) {
            if (i) full[tl++] = ' ';
            size_t l = strlen(texts + rows[i].off);
            memcpy(full + tl, texts + rows[i].off, l);
            tl += l;
        }
        if (ok) {
            full[tl] = 0;
            int seg = tr_result_add_segment(res, first_t0, last_t1, full);
            ok = seg >= 0 && tr_result_set_full_text(res, full);
            for (int i = 0; ok && i < n_words; i++)
                ok = tr_result_add_word(res, rows[i].t0, rows[i].t1, seg, texts + rows[i].off) >= 0;
            if (ok) tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_WORD);
        }
        free(full);
    }
    free(rows);
    free(texts);
    return ok && n_words > 0;
}

/* "[Speaker N]" with N >= 1, then an optional ':' and one optional space. */
static const char *speaker_marker(const char *s, long *id) {
    if (strncmp(s, "[Speaker ", 9) != 0) return NULL;
    const char *p = s + 9;
    if (!is_digit(*p)) return NULL;
    long v = 0;
    while (is_digit(*p)) {
        if (v < 100000000) v = v * 10 + (*p - '0');
        p++;
    }
    if (*p != ']' || v < 1) return NULL;
    p++;
    if (*p == ':') p++;
    if (*p == ' ') p++;
    *id = v;
    return p;
}

static bool parse_speakers(const char *raw, tr_result *res, char *buf, char *full) {
    long cur = 0, id;
    bool any = false;
    const char *turn = raw;
    for (const char *s = raw; *s; s++)
        if (speaker_marker(s, &id)) any = true;
    if (!any) return false;
    size_t fl = 0;
    bool ok = true;
    for (const char *s = raw;;) {
        const char *e = *s ? speaker_marker(s, &id) : NULL;
        if (e || !*s) {
            trim_copy(turn, s, buf);
            if (*buf || cur != 0) {
                int seg = tr_result_add_segment(res, 0, 0, buf);
                ok = ok && seg >= 0;
                if (seg >= 0) res->segs[seg].speaker_id = (int32_t)cur;
                if (cur != 0) ok = ok && tr_result_add_speaker(res, 0, 0, (int32_t)cur, NAN) >= 0;
                if (*buf) {
                    if (fl) full[fl++] = ' ';
                    size_t l = strlen(buf);
                    memcpy(full + fl, buf, l);
                    fl += l;
                }
            }
            if (!e) break;
            cur = id;
            s = turn = e;
        } else {
            s++;
        }
    }
    full[fl] = 0;
    return ok && tr_result_set_full_text(res, full);
}

transcribe_status tr_gs_parse_text(const char *raw, bool words, bool speakers, int64_t audio_ms,
                                   tr_result *res) {
    size_t len = strlen(raw);
    char *a = malloc(len + 1), *b = malloc(len + 1);
    transcribe_status st = TRANSCRIBE_OK;
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    if (!a || !b || !tr_result_set_raw_text(res, raw)) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    if (words && parse_words(raw, audio_ms, res, a, b)) goto done;
    if (res->oom) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    if (speakers && parse_speakers(raw, res, a, b)) goto done;
    if (res->oom) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    if (!tr_result_set_full_text(res, raw) || tr_result_add_segment(res, 0, audio_ms, raw) < 0)
        st = TRANSCRIBE_ERR_OOM;
done:
    free(a);
    free(b);
    return st;
}

transcribe_status tr_gs_fill_result(const gs_model *m, const struct transcribe_run_params *p,
                                    const int32_t *ids, int n, int n_samples, tr_result *res) {
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    if (!raw) return TRANSCRIBE_ERR_OOM;
    const bool words = p->timestamps == TRANSCRIBE_TIMESTAMPS_WORD && m->word_ts;
    const bool speakers = p->diarize == TRANSCRIBE_DIARIZE_MODE_ON && m->diarize;
    const int64_t audio_ms = (int64_t)n_samples * 1000 / m->mel.sample_rate;
    transcribe_status st = tr_gs_parse_text(raw, words, speakers, audio_ms, res);
    free(raw);
    return st;
}
