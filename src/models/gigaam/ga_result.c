/* Result rows (docs/formats/gigaam.md §6.3, §7): the raw text of every emitted id, the full
 * text without its one leading space, token times from the emitting encoder
 * frame (40 ms each). Beyond upstream (which stops at tokens): words —
 * SentencePiece pieces opening with U+2581 start one, charwise words are
 * the runs between space tokens — and one segment over them, so SRT / VTT
 * cues and word timing work as with the other CTC / transducer families. */
#include <stdlib.h>
#include <string.h>

#include "models/gigaam/gigaam.h"
#include "text/tokenizer.h"

#define WORD_MARK "\xE2\x96\x81" /* U+2581 */

static int64_t t0_of(const ga_tok *t) {
    return (int64_t)GA_FRAME_MS * t->frame;
}

static bool is_space(const ga_model *m, int id) {
    const char *p = tr_tokenizer_piece(m->tok, id);
    return !m->spm && p && !strcmp(p, " ");
}

static bool opens_word(const ga_model *m, int id) {
    const char *p = tr_tokenizer_piece(m->tok, id);
    return m->spm && p && !strncmp(p, WORD_MARK, 3);
}

/* Words over toks[0..n) into seg, with their tokens when want_tokens
 * (charwise space tokens belong to no word). */
static bool add_rows(const ga_model *m, const ga_tok *toks, int n, int seg, bool want_words,
                     bool want_tokens, tr_result *res, int32_t *ids) {
    for (int a = 0; a < n;) {
        if (is_space(m, toks[a].id)) {
            const char *p = tr_tokenizer_piece(m->tok, toks[a].id);
            if (want_tokens && tr_result_add_token(res, toks[a].id, 0.0f, t0_of(&toks[a]),
                                                   t0_of(&toks[a]) + GA_FRAME_MS, seg, -1, p) < 0)
                return false;
            a++;
            continue;
        }
        int b = a + 1;
        while (b < n && !is_space(m, toks[b].id) && !opens_word(m, toks[b].id)) b++;
        int word = -1;
        if (want_words) {
            for (int i = a; i < b; i++) ids[i - a] = toks[i].id;
            char *wt = tr_tokenizer_decode(m->tok, ids, b - a, false);
            if (!wt) return false;
            const char *w = wt[0] == ' ' ? wt + 1 : wt;
            word =
                tr_result_add_word(res, t0_of(&toks[a]), t0_of(&toks[b - 1]) + GA_FRAME_MS, seg, w);
            free(wt);
            if (word < 0) return false;
        }
        for (int i = a; want_tokens && i < b; i++) {
            /* the raw piece, U+2581 kept (docs/formats/gigaam.md §6.3) */
            const char *p = tr_tokenizer_piece(m->tok, toks[i].id);
            if (tr_result_add_token(res, toks[i].id, 0.0f, t0_of(&toks[i]),
                                    t0_of(&toks[i]) + GA_FRAME_MS, seg, word, p ? p : "") < 0)
                return false;
        }
        a = b;
    }
    return true;
}

transcribe_status tr_ga_build_result(const ga_model *m, const ga_tok *toks, int n,
                                     const struct transcribe_run_params *p, tr_result *res) {
    transcribe_timestamp_kind kind = p->timestamps;
    if (kind == TRANSCRIBE_TIMESTAMPS_AUTO) kind = TRANSCRIBE_TIMESTAMPS_TOKEN;
    tr_result_set_timestamp_kind(res, kind);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    if (!ids) return TRANSCRIBE_ERR_OOM;
    for (int i = 0; i < n; i++) ids[i] = toks[i].id;
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (!raw) goto done;
    /* one leading space removed, no other clean-up (docs/formats/gigaam.md §6.3) */
    const char *text = raw[0] == ' ' ? raw + 1 : raw;
    if (!tr_result_set_raw_text(res, raw) || !tr_result_set_full_text(res, text)) goto done;
    st = TRANSCRIBE_OK;
    if (n == 0) goto done; /* no text, no segment */
    const bool timed = kind != TRANSCRIBE_TIMESTAMPS_NONE;
    const int seg = tr_result_add_segment(res, timed ? t0_of(&toks[0]) : 0,
                                          timed ? t0_of(&toks[n - 1]) + GA_FRAME_MS : 0, text);
    if (seg < 0 || !add_rows(m, toks, n, seg, kind >= TRANSCRIBE_TIMESTAMPS_WORD,
                             kind >= TRANSCRIBE_TIMESTAMPS_TOKEN, res, ids))
        st = TRANSCRIBE_ERR_OOM;
done:
    free(raw);
    free(ids);
    return res->oom ? TRANSCRIBE_ERR_OOM : st;
}
