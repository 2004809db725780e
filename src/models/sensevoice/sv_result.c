/* Result rows of docs/formats/sensevoice.md §6.3: the tags the model emits
 * first (language, emotion, audio event, ITN mode) are CONTROL pieces and
 * never reach the text; the language tag becomes the detected language,
 * the emotion and event tags the result's audio tags (an addition). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/sensevoice/sensevoice.h"
#include "text/tokenizer.h"

/* The name inside a CONTROL tag "<|name|>" (a leading U+2581 dropped)
 * into buf, or NULL when id is no such tag. */
static const char *tag_name(const sv_model *m, int id, char *buf, size_t cap) {
    if (!tr_tokenizer_is_control(m->tok, id)) return NULL;
    const char *p = tr_tokenizer_piece(m->tok, id);
    if (!p) return NULL;
    if (!strncmp(p, "\xE2\x96\x81", 3)) p += 3;
    size_t n = strlen(p);
    if (n < 5 || strncmp(p, "<|", 2) != 0 || strcmp(p + n - 2, "|>") != 0 || n - 4 >= cap)
        return NULL;
    memcpy(buf, p + 2, n - 4);
    buf[n - 4] = '\0';
    return buf;
}

static bool in_set(const char *s, const char *const *set, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, set[i])) return true;
    return false;
}

#define IN(s, set) in_set((s), (set), sizeof(set) / sizeof((set)[0]))

/* The languages whose tag is a detection (docs/formats/sensevoice.md §6.3),
 * and the emotion / audio-event tags of SenseVoiceSmall's vocabulary. The
 * model emits them in no fixed order (the published model: language,
 * emotion, event, ITN; the reference's tiny model: language, event,
 * emotion, ITN), so they are told apart by name. */
static const char *const k_langs[] = {"zh", "en", "yue", "ja", "ko"};
static const char *const k_emotions[] = {"HAPPY",   "SAD",       "ANGRY",     "NEUTRAL",
                                         "FEARFUL", "DISGUSTED", "SURPRISED", "EMO_UNKNOWN"};
static const char *const k_events[] = {"Speech", "BGM",    "Applause", "Laughter", "Cry",
                                       "Sneeze", "Breath", "Cough",    "Event_UNK"};

/* Language (only the first id, only without a hint), emotion and audio
 * event (the first of each among the leading tags) into res. */
static bool set_tags(const sv_model *m, const int32_t *ids, int n, const char *hint,
                     tr_result *res) {
    char name[64];
    bool no_hint = !hint || !*hint || !strcmp(hint, "auto");
    if (no_hint && tag_name(m, ids[0], name, sizeof name) && IN(name, k_langs) &&
        !tr_result_set_language(res, name))
        return false;
    for (int i = 0; i < n && tag_name(m, ids[i], name, sizeof name); i++) {
        if (!res->has_emotion && IN(name, k_emotions) && !tr_result_set_emotion(res, name))
            return false;
        if (!res->has_event && IN(name, k_events) && !tr_result_set_audio_event(res, name))
            return false;
    }
    return true;
}

transcribe_status tr_sv_build_result(const sv_model *m, const int32_t *ids, int n,
                                     const struct transcribe_run_params *p, int64_t n_samples,
                                     tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    if (n == 0) return TRANSCRIBE_OK; /* no text, no segment */
    if (!set_tags(m, ids, n, p->language, res)) return TRANSCRIBE_ERR_OOM;
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
