/* The stream commit policy (c-api.md §14.2): which prefix of a stream's
 * raw hypothesis is committed, by a family's native boundary or by the
 * agreement of the last hypotheses, and the final commit. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "text/tokenizer.h"

#define DEFAULT_AGREE_N 3

static char *dup_or_null(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void tr_stream_forget_hypotheses(tr_stream_state *st) {
    for (int i = 0; i < st->n_hist; i++) free(st->hist[i]);
    st->n_hist = 0;
}

static size_t common_prefix(const char *a, const char *b) {
    size_t n = 0;
    while (a[n] && a[n] == b[n]) n++;
    return n;
}

bool tr_stream_commit(struct transcribe_session *s, const char *full, int native_toks) {
    tr_stream_state *st = &s->stream;
    if (st->policy == TRANSCRIBE_STREAM_COMMIT_ON_FINALIZE) return false;
    size_t full_len = strlen(full);
    size_t cand = 0;
    const tr_result *r = &s->results[0];
    if (native_toks >= 0 && native_toks <= r->n_toks) {
        /* Native boundary: the text of the committed token rows. A family
         * that only appends leaves the rows counted before unchanged, so
         * only the new ones are read (flat cost however long the stream). */
        int from = 0;
        if (st->native_grows && native_toks >= st->native_counted) {
            from = st->native_counted;
            cand = st->native_bytes;
        }
        for (int i = from; i < native_toks; i++)
            cand += strlen(tr_result_str(r, r->toks[i].text_off));
        st->native_counted = native_toks;
        st->native_bytes = cand;
        if (cand > full_len) cand = full_len;
        if (native_toks > st->n_committed_toks) st->n_committed_toks = native_toks;
    } else {
        uint32_t n = st->agree_n ? st->agree_n : DEFAULT_AGREE_N;
        if (n <= 1) {
            cand = full_len;
        } else {
            char *copy = dup_or_null(full);
            if (!copy) return false;
            if (st->n_hist == (int)n) {
                free(st->hist[0]);
                memmove(st->hist, st->hist + 1, (size_t)(st->n_hist - 1) * sizeof st->hist[0]);
                st->n_hist--;
            }
            st->hist[st->n_hist++] = copy;
            if (st->n_hist < (int)n) return false;
            cand = strlen(st->hist[0]);
            for (int i = 1; i < st->n_hist; i++) {
                size_t c = common_prefix(st->hist[0], st->hist[i]);
                if (c < cand) cand = c;
            }
        }
    }
    cand = tr_utf8_complete_prefix(full, cand);
    size_t have = st->committed.len;
    if (cand <= have) return false;
    /* Committed bytes must still be a prefix of the hypothesis (they are,
     * by construction, when the hypothesis only grows). */
    if (have > 0 && !st->native_grows && memcmp(tr_strbuf_cstr(&st->committed), full, have) != 0)
        return false;
    tr_strbuf_append(&st->committed, full + have, cand - have);
    return true;
}

void tr_stream_commit_final(struct transcribe_session *s, const char *full) {
    tr_stream_state *st = &s->stream;
    size_t have = st->committed.len, full_len = strlen(full);
    if (st->policy == TRANSCRIBE_STREAM_COMMIT_ON_FINALIZE || have == 0) {
        tr_strbuf_clear(&st->committed);
        tr_strbuf_append(&st->committed, full, full_len);
    } else if (full_len >= have && memcmp(tr_strbuf_cstr(&st->committed), full, have) == 0) {
        tr_strbuf_append(&st->committed, full + have, full_len - have);
    }
    st->tentative_start = full_len;
    const tr_result *r = &s->results[0];
    if (r->n_segs > st->n_committed_segs) st->n_committed_segs = r->n_segs;
    if (r->n_words > st->n_committed_words) st->n_committed_words = r->n_words;
    if (r->n_toks > st->n_committed_toks) st->n_committed_toks = r->n_toks;
}
