/* The result as the formats read it, the format dispatch and plain text.
 * Times are clamped here, once for every format, so that no row printed
 * runs past the audio (a model's timestamps can). */
#include <math.h>
#include <string.h>

#include "output/output_internal.h"

bool tr_out_is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

const char *tr_out_trim(const char *s, size_t *n) {
    if (!s) s = "";
    while (tr_out_is_space(*s)) s++;
    size_t len = strlen(s);
    while (len > 0 && tr_out_is_space(s[len - 1])) len--;
    *n = len;
    return s;
}

int tr_out_n_segs(const tr_out_view *v) {
    return v->r ? v->r->n_segs : 0;
}

int tr_out_n_words(const tr_out_view *v) {
    return v->r ? v->r->n_words : 0;
}

int tr_out_n_toks(const tr_out_view *v) {
    return v->r ? v->r->n_toks : 0;
}

static void clamp(const tr_out_view *v, int64_t a, int64_t b, int64_t *t0, int64_t *t1) {
    if (a < 0) a = 0;
    if (a > v->end_ms) a = v->end_ms;
    if (b > v->end_ms) b = v->end_ms;
    if (b < a) b = a;
    *t0 = a;
    *t1 = b;
}

void tr_out_seg(const tr_out_view *v, int i, int64_t *t0, int64_t *t1, const char **text) {
    const tr_result_segment *s = &v->r->segs[i];
    clamp(v, s->t0_ms, s->t1_ms, t0, t1);
    if (text) *text = tr_result_str(v->r, s->text_off);
}

void tr_out_word(const tr_out_view *v, int i, int64_t *t0, int64_t *t1, const char **text) {
    const tr_result_word *w = &v->r->words[i];
    clamp(v, w->t0_ms, w->t1_ms, t0, t1);
    if (text) *text = tr_result_str(v->r, w->text_off);
}

const char *tr_out_full_text(const tr_out_view *v, size_t *n) {
    return tr_out_trim(v->r ? tr_result_full_text(v->r) : "", n);
}

transcribe_timestamp_kind tr_out_kind(const tr_out_view *v) {
    return v->r ? v->r->ts_kind : TRANSCRIBE_TIMESTAMPS_NONE;
}

int32_t tr_out_speaker(const tr_out_view *v, int seg) {
    int32_t id = v->r->segs[seg].speaker_id;
    return id > 0 ? id : 0;
}

int32_t tr_out_word_speaker(const tr_out_view *v, int i) {
    int32_t id = v->r->words[i].speaker_id;
    return id > 0 ? id : 0;
}

/* true when some segment is attributed to a speaker (diarized runs). */
bool tr_out_has_speakers(const tr_out_view *v) {
    for (int i = 0; i < tr_out_n_segs(v); i++)
        if (tr_out_speaker(v, i) > 0) return true;
    return false;
}

/* Segment seg as one line per run of words of one speaker, when its
 * diarized words change speaker inside it (a diarizer labels words, and a
 * segment takes its main speaker); false when they do not. */
static bool txt_word_turns(tr_out_view *v, int seg) {
    const tr_result_segment *s = &v->r->segs[seg];
    if (s->n_words < 2 || s->first_word < 0 || s->first_word + s->n_words > tr_out_n_words(v))
        return false;
    const int32_t seg_spk = tr_out_speaker(v, seg);
    int32_t first = 0;
    bool mixed = false;
    for (int i = s->first_word; i < s->first_word + s->n_words; i++) {
        const int32_t w = tr_out_word_speaker(v, i) ? tr_out_word_speaker(v, i) : seg_spk;
        if (i == s->first_word) first = w;
        mixed |= w != first;
    }
    if (!mixed) return false;
    tr_strbuf *b = v->out;
    int32_t spk = -1;
    for (int i = s->first_word; i < s->first_word + s->n_words; i++) {
        int64_t t0, t1;
        const char *t;
        tr_out_word(v, i, &t0, &t1, &t);
        size_t n;
        t = tr_out_trim(t, &n);
        if (!n) continue;
        const int32_t w = tr_out_word_speaker(v, i) ? tr_out_word_speaker(v, i) : seg_spk;
        if (w != spk) {
            if (spk >= 0) tr_strbuf_append(b, "\n", 1);
            if (w > 0) tr_strbuf_appendf(b, "[S%d] ", (int)w);
            spk = w;
        } else {
            tr_strbuf_append(b, " ", 1);
        }
        tr_strbuf_append(b, t, n);
    }
    if (spk >= 0) tr_strbuf_append(b, "\n", 1);
    return true;
}

/* Plain text: the transcript on one line; a diarized result one line per
 * speaker turn, "[S1] text" (turns without a speaker unlabelled): the
 * segments, cut where their words change speaker. */
void tr_out_txt(tr_out_view *v) {
    tr_strbuf *b = v->out;
    if (v->o->header) tr_strbuf_appendf(b, "# %s\n", v->o->file ? v->o->file : "");
    size_t n;
    if (!tr_out_has_speakers(v)) {
        const char *t = tr_out_full_text(v, &n);
        tr_strbuf_append(b, t, n);
        tr_strbuf_append(b, "\n", 1);
        return;
    }
    for (int i = 0; i < tr_out_n_segs(v); i++) {
        if (txt_word_turns(v, i)) continue;
        const char *text;
        int64_t t0, t1;
        tr_out_seg(v, i, &t0, &t1, &text);
        int32_t spk = tr_out_speaker(v, i);
        if (spk > 0) tr_strbuf_appendf(b, "[S%d] ", (int)spk);
        text = tr_out_trim(text, &n);
        tr_strbuf_append(b, text, n);
        tr_strbuf_append(b, "\n", 1);
    }
}

bool tr_output_render(const tr_result *r, const tr_output_opts *o, tr_strbuf *out) {
    double ms = o->duration_s * 1000.0;
    tr_out_view v = {r, o, ms > 0 ? (int64_t)llround(ms) : 0, out};
    /* Without a result only JSON prints: it carries the error. */
    if (!r && o->format != TRANSCRIBE_FORMAT_JSON) return !out->oom;
    switch (o->format) {
    case TRANSCRIBE_FORMAT_TXT:
        tr_out_txt(&v);
        break;
    case TRANSCRIBE_FORMAT_JSON:
        tr_out_json(&v);
        break;
    case TRANSCRIBE_FORMAT_SRT:
        tr_out_srt(&v);
        break;
    case TRANSCRIBE_FORMAT_VTT:
        tr_out_vtt(&v);
        break;
    }
    return !out->oom;
}
