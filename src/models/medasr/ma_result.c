/* Result rows (docs/formats/medasr.md §6.3, §7): the SentencePiece text with one leading space
 * removed, the same as raw text, one token row per emitted id at 40 ms per encoder frame with
 * the raw piece as its text (U+2581 kept, as upstream); and, an addition upstream lacks, one
 * segment over the tokens and word rows (a word opens at every piece that starts with U+2581),
 * so SRT / VTT / JSON words work as for Parakeet. */
#include <stdlib.h>
#include <string.h>

#include "models/medasr/medasr.h"
#include "text/tokenizer.h"

static bool word_start(const ma_model *m, int id) {
    const char *p = id < m->hp.n_pieces ? tr_tokenizer_piece(m->tok, id) : NULL;
    return p && !strncmp(p, "\xE2\x96\x81", 3);
}

static const char *drop_space(const char *s) {
    return s[0] == ' ' ? s + 1 : s;
}

static bool add_rows(const ma_model *m, const int32_t *ids, const int32_t *frames, int n, int seg,
                     tr_result *res) {
    for (int a = 0; a < n;) {
        int b = a + 1;
        while (b < n && !word_start(m, ids[b])) b++;
        char *wt = tr_tokenizer_decode(m->tok, ids + a, b - a, false);
        if (!wt) return false;
        int word =
            tr_result_add_word(res, (int64_t)frames[a] * MA_FRAME_MS,
                               (int64_t)(frames[b - 1] + 1) * MA_FRAME_MS, seg, drop_space(wt));
        free(wt);
        if (word < 0) return false;
        for (int k = a; k < b; k++) {
            const char *piece = ids[k] < m->hp.n_pieces ? tr_tokenizer_piece(m->tok, ids[k]) : "";
            int64_t t0 = (int64_t)frames[k] * MA_FRAME_MS;
            if (tr_result_add_token(res, ids[k], 0.0f, t0, t0 + MA_FRAME_MS, seg, word,
                                    piece ? piece : "") < 0)
                return false;
        }
        a = b;
    }
    return true;
}

transcribe_status tr_ma_build_result(const ma_model *m, const int32_t *ids, const int32_t *frames,
                                     int n, const struct transcribe_run_params *p, tr_result *res) {
    (void)p; /* docs/formats/medasr.md §7: every granularity gets the token-kind result */
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_TOKEN);
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    if (!raw) return TRANSCRIBE_ERR_OOM;
    const char *text = drop_space(raw);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (!tr_result_set_raw_text(res, raw) || !tr_result_set_full_text(res, text)) goto done;
    st = TRANSCRIBE_OK;
    if (n == 0) goto done; /* empty text, no segment */
    int seg = tr_result_add_segment(res, (int64_t)frames[0] * MA_FRAME_MS,
                                    (int64_t)(frames[n - 1] + 1) * MA_FRAME_MS, text);
    if (seg < 0 || !add_rows(m, ids, frames, n, seg, res)) st = TRANSCRIBE_ERR_OOM;
done:
    free(raw);
    return res->oom ? TRANSCRIBE_ERR_OOM : st;
}
