/* Result rows of docs/formats/sensevoice.md §6.3: the tags the model emits
 * first (language, emotion, audio event, ITN mode) are CONTROL pieces and
 * never reach the text; the language tag becomes the detected language. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/sensevoice/sensevoice.h"
#include "text/tokenizer.h"

/* "<|xx|>" for one of the five languages the model names → xx, else NULL. */
static const char *lang_of_tag(const sv_model *m, int id, char *buf, size_t cap) {
    if (!tr_tokenizer_is_control(m->tok, id)) return NULL;
    const char *p = tr_tokenizer_piece(m->tok, id);
    if (!p) return NULL;
    if (!strncmp(p, "\xE2\x96\x81", 3)) p += 3; /* a leading space piece mark is dropped */
    size_t n = strlen(p);
    if (n < 5 || strncmp(p, "<|", 2) != 0 || strcmp(p + n - 2, "|>") != 0 || n - 4 >= cap)
        return NULL;
    memcpy(buf, p + 2, n - 4);
    buf[n - 4] = '\0';
    static const char *const five[] = {"zh", "en", "yue", "ja", "ko"};
    for (size_t i = 0; i < sizeof five / sizeof five[0]; i++)
        if (!strcmp(buf, five[i])) return buf;
    return NULL;
}

transcribe_status tr_sv_build_result(const sv_model *m, const int32_t *ids, int n,
                                     const struct transcribe_run_params *p, int64_t n_samples,
                                     tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    if (n == 0) return TRANSCRIBE_OK; /* no text, no segment */
    const char *hint = p->language;
    char lang[16];
    if ((!hint || !*hint || !strcmp(hint, "auto")) && lang_of_tag(m, ids[0], lang, sizeof lang) &&
        !tr_result_set_language(res, lang))
        return TRANSCRIBE_ERR_OOM;
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    char *full = tr_tokenizer_decode(m->tok, ids, n, !p->keep_special_tags);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (!raw || !full) goto done;
    const char *text = full[0] == ' ' ? full + 1 : full; /* one leading space, no other clean-up */
    if (!tr_result_set_raw_text(res, raw) || !tr_result_set_full_text(res, text)) goto done;
    int64_t t1 = llround(1000.0 * (double)n_samples / m->mel.sample_rate);
    int seg = tr_result_add_segment(res, 0, t1, text);
    if (seg < 0) goto done;
    /* one untimed token row per emitted id, tags included (docs/formats/sensevoice.md §6.3) */
    for (int i = 0; i < n; i++) {
        char *tt = tr_tokenizer_decode(m->tok, &ids[i], 1, false);
        int k = tt ? tr_result_add_token(res, ids[i], 0.0f, 0, 0, seg, -1, tt) : -1;
        free(tt);
        if (k < 0) goto done;
    }
    st = TRANSCRIBE_OK;
done:
    free(raw);
    free(full);
    return res->oom ? TRANSCRIBE_ERR_OOM : st;
}
