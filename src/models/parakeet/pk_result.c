/* Result rows of docs/formats/parakeet.md §9: filtering, token / word / segment
 * times from encoder frames, full and raw text, granularity. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/parakeet/parakeet.h"
#include "text/tokenizer.h"

/* Runs of ASCII spaces become one; leading / trailing spaces go (docs/formats/parakeet.md §9.5). */
static void collapse_spaces(char *s) {
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r == ' ' && (w == s || w[-1] == ' ')) continue;
        *w++ = *r;
    }
    while (w > s && w[-1] == ' ') w--;
    *w = '\0';
}

static int64_t ms_at(const pk_model *m, long frame) {
    return (int64_t)llround(m->frame_ms * (double)frame);
}

typedef struct rows_ctx {
    const pk_model *m;
    tr_result *res;
    const pk_tok *toks;
    const int32_t *ids; /* kept ids */
    const int *src;     /* kept index → toks index */
    int n;
    bool want_words, want_tokens;
} rows_ctx;

/* Words open at the first kept token and at every raw piece starting with
 * U+2581; word text drops one leading space (docs/formats/parakeet.md §9.3). */
static bool add_words(const rows_ctx *c, int seg) {
    const pk_model *m = c->m;
    for (int a = 0; a < c->n;) {
        int b = a + 1;
        while (b < c->n && !(c->ids[b] < m->n_tok_pieces && m->word_start[c->ids[b]])) b++;
        const pk_tok *ft = &c->toks[c->src[a]], *lt = &c->toks[c->src[b - 1]];
        char *wt = tr_tokenizer_decode(m->tok, c->ids + a, b - a, false);
        if (!wt) return false;
        int word =
            tr_result_add_word(c->res, ms_at(m, ft->frame), ms_at(m, (long)lt->frame + lt->dur),
                               seg, wt[0] == ' ' ? wt + 1 : wt);
        free(wt);
        if (word < 0) return false;
        for (int k = a; c->want_tokens && k < b; k++) {
            const pk_tok *t = &c->toks[c->src[k]];
            char *tt = tr_tokenizer_decode(m->tok, &c->ids[k], 1, false);
            if (!tt) return false;
            int ti = tr_result_add_token(c->res, t->id, t->p, ms_at(m, t->frame),
                                         ms_at(m, (long)t->frame + t->dur), seg, word, tt);
            free(tt);
            if (ti < 0) return false;
        }
        a = b;
    }
    return true;
}

static transcribe_status build(const pk_model *m, const pk_tok *toks, int n,
                               const struct transcribe_run_params *p, tr_result *res, int32_t *all,
                               int32_t *ids, int *src) {
    int nk = 0;
    for (int i = 0; i < n; i++) {
        int id = toks[i].id;
        all[i] = id;
        bool drop = id < 0 || id >= m->n_tok_pieces || m->drop[id];
        if (drop && !(p->keep_special_tags && id >= 0 && id < m->n_tok_pieces)) continue;
        ids[nk] = id;
        src[nk++] = i;
    }
    char *raw = tr_tokenizer_decode(m->tok, all, n, false);
    char *full = tr_tokenizer_decode(m->tok, ids, nk, false);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (!raw || !full) goto done;
    collapse_spaces(full);
    if (!tr_result_set_raw_text(res, raw) || !tr_result_set_full_text(res, full)) goto done;

    transcribe_timestamp_kind kind = p->timestamps;
    if (kind == TRANSCRIBE_TIMESTAMPS_AUTO) kind = TRANSCRIBE_TIMESTAMPS_TOKEN;
    tr_result_set_timestamp_kind(res, kind);
    st = TRANSCRIBE_OK;
    if (nk == 0) goto done; /* docs/formats/parakeet.md §9.6: no segment, empty text */

    bool timed = kind != TRANSCRIBE_TIMESTAMPS_NONE;
    const pk_tok *ft = &toks[src[0]], *lt = &toks[src[nk - 1]];
    int64_t t0 = timed ? ms_at(m, ft->frame) : 0;
    int64_t t1 = timed ? ms_at(m, (long)lt->frame + lt->dur) : 0;
    int seg = tr_result_add_segment(res, t0, t1, full);
    rows_ctx c = {m,
                  res,
                  toks,
                  ids,
                  src,
                  nk,
                  kind >= TRANSCRIBE_TIMESTAMPS_WORD,
                  kind >= TRANSCRIBE_TIMESTAMPS_TOKEN};
    if (seg < 0 || (c.want_words && !add_words(&c, seg))) st = TRANSCRIBE_ERR_OOM;
done:
    free(raw);
    free(full);
    return res->oom ? TRANSCRIBE_ERR_OOM : st;
}

transcribe_status tr_pk_build_result(const pk_model *m, const pk_tok *toks, int n,
                                     const struct transcribe_run_params *p, tr_result *res) {
    size_t cnt = n > 0 ? (size_t)n : 1;
    int32_t *all = malloc(cnt * sizeof *all), *ids = malloc(cnt * sizeof *ids);
    int *src = malloc(cnt * sizeof *src);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (all && ids && src) st = build(m, toks, n, p, res, all, ids, src);
    free(all);
    free(ids);
    free(src);
    return st;
}
