/* The result rows of a native stream (docs/formats/parakeet.md §9), extended in
 * place as tokens arrive, so a feed costs what its new tokens cost however
 * long the stream has run (the whole-list rebuild of tr_pk_build_result
 * grows with the stream). Every decoded token is final, so rows only ever
 * grow; what changes is the open word (its text and end while tokens
 * extend it), the segment's end, and the three whole-hypothesis texts.
 *
 * Why the rows and texts equal tr_pk_build_result's over the same tokens:
 * a word opens at the first kept token and at every kept piece starting
 * with U+2581, as there; the full text is the concatenation of the words'
 * decodes with ASCII space runs collapsed and the ends trimmed, and the raw
 * text the concatenation of the decodes of groups opened at U+2581 pieces.
 * Decoding concatenates the pieces' bytes and then repairs invalid UTF-8
 * locally, and a group boundary is an ASCII space byte, so decoding group
 * by group gives the bytes of decoding everything at once.
 *
 * The three texts (full, raw, segment) are stored last in the result's
 * arena and dropped (arena rewind) before the next call adds rows: the
 * arena holds one copy of them, not one per feed. Copying them in is the
 * one step whose cost follows the transcript's length: a memcpy of a few
 * bytes per word, microseconds for an hour of speech. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/parakeet/parakeet.h"
#include "text/tokenizer.h"

static int64_t ms_at(const pk_model *m, long frame) {
    return (int64_t)llround(m->frame_ms * (double)frame);
}

void tr_pk_rows_init(pk_rows *r) {
    memset(r, 0, sizeof *r);
    r->seg = r->word = -1;
    tr_strbuf_init(&r->full);
    tr_strbuf_init(&r->raw);
    tr_strbuf_init(&r->scratch);
}

void tr_pk_rows_free(pk_rows *r) {
    free(r->wids);
    free(r->rids);
    tr_strbuf_free(&r->full);
    tr_strbuf_free(&r->raw);
    tr_strbuf_free(&r->scratch);
    tr_pk_rows_init(r);
}

void tr_pk_rows_clear(pk_rows *r) {
    r->done = 0;
    r->seg = r->word = -1;
    r->wn = r->rn = 0;
    r->has_tail = false;
    tr_strbuf_clear(&r->full);
    tr_strbuf_clear(&r->raw);
}

static bool push_id(int32_t **v, int *n, int *cap, int32_t id) {
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 16;
        int32_t *p = realloc(*v, sizeof(int32_t) * (size_t)c);
        if (!p) return false;
        *v = p;
        *cap = c;
    }
    (*v)[(*n)++] = id;
    return true;
}

/* Appends s to b collapsing ASCII space runs and dropping leading spaces
 * (the trailing one, if any, stays until the text is read). */
static bool append_collapsed(tr_strbuf *b, const char *s) {
    for (const char *p = s; *p;) {
        const char *q = p;
        if (*p == ' ') {
            if (b->len == 0 || tr_strbuf_cstr(b)[b->len - 1] == ' ') {
                p++;
                continue;
            }
            q = p + 1;
        } else {
            while (*q && *q != ' ') q++;
        }
        if (!tr_strbuf_append(b, p, (size_t)(q - p))) return false;
        p = q;
    }
    return true;
}

static bool is_word_start(const pk_model *m, int id) {
    return id >= 0 && id < m->n_tok_pieces && m->word_start[id];
}

/* Closes the open word: its text joins the full text, its row (if any)
 * gets its final text. */
static bool close_word(pk_rows *r, const pk_model *m, tr_result *res) {
    if (r->wn == 0) return true;
    char *t = tr_tokenizer_decode(m->tok, r->wids, r->wn, false);
    bool ok = t && append_collapsed(&r->full, t);
    if (ok && r->word >= 0) ok = tr_result_set_word_text(res, r->word, t[0] == ' ' ? t + 1 : t);
    free(t);
    r->wn = 0;
    return ok;
}

static bool close_raw(pk_rows *r, const pk_model *m) {
    if (r->rn == 0) return true;
    char *t = tr_tokenizer_decode(m->tok, r->rids, r->rn, false);
    bool ok = t && tr_strbuf_appends(&r->raw, t);
    free(t);
    r->rn = 0;
    return ok;
}

/* One new token into the rows. */
static bool add_tok(pk_rows *r, const pk_model *m, const struct transcribe_run_params *p,
                    transcribe_timestamp_kind kind, const pk_tok *t, tr_result *res) {
    const int id = t->id;
    if (is_word_start(m, id) && !close_raw(r, m)) return false;
    if (!push_id(&r->rids, &r->rn, &r->rcap, id)) return false;
    const bool valid = id >= 0 && id < m->n_tok_pieces;
    if (!valid || (m->drop[id] && !p->keep_special_tags)) return true;
    const bool timed = kind != TRANSCRIBE_TIMESTAMPS_NONE;
    const bool want_words = kind >= TRANSCRIBE_TIMESTAMPS_WORD;
    const bool want_tokens = kind >= TRANSCRIBE_TIMESTAMPS_TOKEN;
    const int64_t t0 = ms_at(m, t->frame), t1 = ms_at(m, (long)t->frame + t->dur);
    if (r->seg < 0) {
        r->seg = tr_result_add_segment(res, timed ? t0 : 0, 0, "");
        if (r->seg < 0) return false;
    }
    if (timed) res->segs[r->seg].t1_ms = t1;
    if (r->wn == 0 || is_word_start(m, id)) {
        if (!close_word(r, m, res)) return false;
        r->word = -1;
        if (want_words && (r->word = tr_result_add_word(res, t0, t1, r->seg, "")) < 0) return false;
    }
    if (!push_id(&r->wids, &r->wn, &r->wcap, id)) return false;
    if (r->word >= 0) res->words[r->word].t1_ms = t1;
    if (want_tokens) {
        char *tt = tr_tokenizer_decode(m->tok, &id, 1, false);
        int ti = tt ? tr_result_add_token(res, id, t->p, t0, t1, r->seg, r->word, tt) : -1;
        free(tt);
        if (ti < 0) return false;
    }
    return true;
}

transcribe_status tr_pk_rows_update(pk_rows *r, const pk_model *m, const pk_tok *toks, int n,
                                    const struct transcribe_run_params *p, tr_result *res,
                                    bool *changed) {
    *changed = n > r->done || !r->has_tail;
    if (!*changed) return TRANSCRIBE_OK;
    transcribe_timestamp_kind kind = p->timestamps;
    if (kind == TRANSCRIBE_TIMESTAMPS_AUTO) kind = TRANSCRIBE_TIMESTAMPS_TOKEN;
    tr_result_set_timestamp_kind(res, kind);
    /* last call's texts go; the open word's row text is re-set below */
    if (r->has_tail) tr_result_arena_rewind(res, r->tail);
    bool ok = true;
    for (; ok && r->done < n; r->done++) ok = add_tok(r, m, p, kind, &toks[r->done], res);
    r->tail = tr_result_arena_mark(res);
    r->has_tail = true;
    /* the texts of this moment: the closed words' plus the open word's */
    char *open = NULL, *open_raw = NULL;
    if (ok && r->wn > 0) ok = (open = tr_tokenizer_decode(m->tok, r->wids, r->wn, false)) != NULL;
    if (ok && r->rn > 0) ok = (open_raw = tr_tokenizer_decode(m->tok, r->rids, r->rn, false));
    if (ok && open && r->word >= 0)
        ok = tr_result_set_word_text(res, r->word, open[0] == ' ' ? open + 1 : open);
    tr_strbuf *full = &r->scratch;
    tr_strbuf_clear(full);
    ok = ok && tr_strbuf_append(full, tr_strbuf_cstr(&r->full), r->full.len) &&
         (!open || append_collapsed(full, open));
    if (ok) {
        size_t len = full->len;
        while (len > 0 && tr_strbuf_cstr(full)[len - 1] == ' ') len--;
        full->len = len;
        ok = tr_strbuf_append(full, "", 0); /* re-terminates at the new length */
    }
    if (ok && r->seg >= 0) ok = tr_result_set_segment_text(res, r->seg, tr_strbuf_cstr(full));
    ok = ok && tr_result_set_full_text(res, tr_strbuf_cstr(full));
    if (ok) {
        /* raw: closed groups then the open one, joined in the scratch */
        tr_strbuf_clear(full);
        ok = tr_strbuf_append(full, tr_strbuf_cstr(&r->raw), r->raw.len) &&
             (!open_raw || tr_strbuf_appends(full, open_raw)) &&
             tr_result_set_raw_text(res, tr_strbuf_cstr(full));
    }
    free(open);
    free(open_raw);
    return ok && !res->oom ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}
