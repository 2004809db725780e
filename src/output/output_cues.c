/* Subtitle cues (SubRip, WebVTT and JSON's "cues"): the segments when they
 * carry times, else one cue over the whole file. A segment longer than
 * CUE_MAX_MS (or max_cue_ms) or with more text than CUE_MAX_CHARS (or
 * max_line_chars) whose word rows carry their own times (Parakeet: one
 * segment per utterance, even for an hour of audio) is cut into readable
 * cues at word boundaries:
 * a cue ends after a pause of CUE_GAP_MS, after sentence punctuation once it
 * is CUE_MIN_MS long, or before it would pass CUE_MAX_MS or CUE_MAX_CHARS
 * (or the options' values); a single word longer than that is a cue of its
 * own. A diarized segment's cues carry its speaker: "[S1] " in SubRip, a
 * voice span "<v S1>" in WebVTT. */
#include <math.h>
#include <string.h>

#include "output/output_internal.h"

#define CUE_MAX_MS    7000
#define CUE_MIN_MS    1500
#define CUE_GAP_MS    800
#define CUE_MAX_CHARS 84

static bool ends_sentence(const char *w) {
    size_t n = strlen(w);
    while (n > 0 && tr_out_is_space(w[n - 1])) n--;
    return n > 0 && (w[n - 1] == '.' || w[n - 1] == '?' || w[n - 1] == '!');
}

/* The cues in order, each from where the last one ended at the earliest:
 * segments stitched from overlapping windows (a stream's) may overlap by
 * a few tens of ms, and subtitle players show overlapping cues stacked. */
typedef struct cue_seq {
    tr_out_cue_fn fn;
    int idx;         /* the next cue's number, from 1 */
    int64_t end;     /* where the last cue ended */
    int32_t speaker; /* the last cue's */
} cue_seq;

static void emit(tr_out_view *v, cue_seq *q, int64_t t0, int64_t t1, const char *text,
                 int32_t speaker) {
    /* two speakers may talk at once (a diarizer's overlapping turns):
     * only one voice's cues are kept from overlapping */
    if (speaker == q->speaker && t0 < q->end) t0 = q->end;
    if (t1 < t0) t1 = t0;
    q->fn(v, q->idx++, t0, t1, text, speaker);
    q->end = t1;
    q->speaker = speaker;
}

/* Segment seg's words as cues; false when they do not carry their own
 * times (Whisper's word rows repeat the segment's) or the segment is short
 * enough to be one cue. */
static bool word_cues(tr_out_view *v, int seg, cue_seq *q, tr_strbuf *text) {
    const tr_output_opts *o = v->o;
    const tr_result_segment *s = &v->r->segs[seg];
    int64_t s0, s1;
    const char *stext;
    tr_out_seg(v, seg, &s0, &s1, &stext);
    /* max_cue_ms / max_line_chars replace the defaults and split every
     * segment that passes them. */
    int64_t max_ms = o->max_cue_ms > 0 ? o->max_cue_ms : CUE_MAX_MS;
    size_t max_chars = o->max_line_chars > 0 ? (size_t)o->max_line_chars : CUE_MAX_CHARS;
    bool long_text = strlen(stext) > max_chars;
    if (s->n_words < 2 || s->first_word < 0 || s->first_word + s->n_words > tr_out_n_words(v))
        return false;
    /* a word's own speaker (diarized words), else the segment's */
    const int32_t seg_spk = tr_out_speaker(v, seg);
#define WORD_SPK(i) (tr_out_word_speaker(v, (i)) ? tr_out_word_speaker(v, (i)) : seg_spk)
    bool mixed = false; /* words of more than one speaker: cut where it changes */
    for (int i = s->first_word + 1; i < s->first_word + s->n_words && !mixed; i++)
        mixed = WORD_SPK(i) != WORD_SPK(s->first_word);
    if (s1 - s0 <= max_ms && !long_text && !mixed) return false;
    int64_t w0, w1;
    const char *t;
    tr_out_word(v, s->first_word, &w0, &w1, &t);
    if (w0 == s0 && w1 == s1) return false;
    int32_t spk = 0;
    int64_t c0 = 0, c1 = 0;
    bool open = false, sentence = false;
    for (int i = s->first_word; i < s->first_word + s->n_words; i++) {
        tr_out_word(v, i, &w0, &w1, &t);
        while (tr_out_is_space(*t)) t++;
        size_t wl = strlen(t);
        if (!wl) continue;
        const int32_t ws = WORD_SPK(i);
        if (open && (ws != spk || w0 - c1 >= CUE_GAP_MS || w1 - c0 > max_ms ||
                     text->len + 1 + wl > max_chars || (sentence && c1 - c0 >= CUE_MIN_MS))) {
            emit(v, q, c0, c1, tr_strbuf_cstr(text), spk);
            open = false;
        }
        if (!open) {
            tr_strbuf_clear(text);
            c0 = w0;
            spk = ws;
            open = true;
        }
        if (text->len) tr_strbuf_append(text, " ", 1);
        tr_strbuf_append(text, t, wl);
        c1 = w1 > c1 ? w1 : c1;
        sentence = ends_sentence(t);
    }
    if (open) emit(v, q, c0, c1, tr_strbuf_cstr(text), spk);
#undef WORD_SPK
    return true;
}

void tr_out_for_each_cue(tr_out_view *v, tr_out_cue_fn fn) {
    if (tr_out_kind(v) == TRANSCRIBE_TIMESTAMPS_NONE || tr_out_n_segs(v) == 0) {
        size_t n;
        const char *full = tr_out_full_text(v, &n);
        if (n) fn(v, 1, 0, v->end_ms, full, 0);
        return;
    }
    tr_strbuf text;
    tr_strbuf_init(&text);
    cue_seq q = {fn, 1, 0, 0};
    for (int i = 0; i < tr_out_n_segs(v); i++) {
        int64_t t0, t1;
        const char *t;
        tr_out_seg(v, i, &t0, &t1, &t);
        size_t n;
        tr_out_trim(t, &n);
        if (!n) continue;
        if (word_cues(v, i, &q, &text)) continue;
        emit(v, &q, t0, t1, t, tr_out_speaker(v, i));
    }
    if (text.oom) v->out->oom = true;
    tr_strbuf_free(&text);
}

static void clock_time(tr_strbuf *b, int64_t ms, char frac_sep) {
    if (ms < 0) ms = 0;
    tr_strbuf_appendf(b, "%02lld:%02lld:%02lld%c%03lld", (long long)(ms / 3600000),
                      (long long)(ms / 60000 % 60), (long long)(ms / 1000 % 60), frac_sep,
                      (long long)(ms % 1000));
}

static void cue_times(tr_strbuf *b, int64_t t0, int64_t t1, char frac_sep) {
    clock_time(b, t0, frac_sep);
    tr_strbuf_appends(b, " --> ");
    clock_time(b, t1, frac_sep);
    tr_strbuf_append(b, "\n", 1);
}

static void cue_text(tr_strbuf *b, const char *text) {
    size_t n;
    text = tr_out_trim(text, &n);
    tr_strbuf_append(b, text, n);
    tr_strbuf_appends(b, "\n\n");
}

static void srt_cue(tr_out_view *v, int index, int64_t t0, int64_t t1, const char *text,
                    int32_t speaker) {
    tr_strbuf_appendf(v->out, "%d\n", index);
    cue_times(v->out, t0, t1, ',');
    if (speaker > 0) tr_strbuf_appendf(v->out, "[S%d] ", (int)speaker);
    cue_text(v->out, text);
}

static void vtt_cue(tr_out_view *v, int index, int64_t t0, int64_t t1, const char *text,
                    int32_t speaker) {
    (void)index;
    cue_times(v->out, t0, t1, '.');
    if (speaker > 0) tr_strbuf_appendf(v->out, "<v S%d>", (int)speaker);
    cue_text(v->out, text);
}

/* Untimed speaker turns (a diarized result without times): one cue over
 * the file (after head, the cue's index line where the format has one), a
 * line per turn with its speaker marked as the format marks one ("<v S1>"
 * in VTT, "[S1] " in SRT); false where that is not the result's shape. */
static bool untimed_turns(tr_out_view *v, bool vtt, const char *head) {
    if (!tr_out_has_speakers(v) || tr_out_kind(v) != TRANSCRIBE_TIMESTAMPS_NONE) return false;
    tr_strbuf_appends(v->out, head);
    cue_times(v->out, 0, v->end_ms, vtt ? '.' : ',');
    for (int i = 0; i < tr_out_n_segs(v); i++) {
        int64_t t0, t1;
        const char *t;
        tr_out_seg(v, i, &t0, &t1, &t);
        int32_t spk = tr_out_speaker(v, i);
        if (spk > 0) tr_strbuf_appendf(v->out, vtt ? "<v S%d>" : "[S%d] ", (int)spk);
        size_t n;
        t = tr_out_trim(t, &n);
        tr_strbuf_append(v->out, t, n);
        tr_strbuf_append(v->out, "\n", 1);
    }
    tr_strbuf_append(v->out, "\n", 1);
    return true;
}

void tr_out_srt(tr_out_view *v) {
    if (untimed_turns(v, false, "1\n")) return;
    tr_out_for_each_cue(v, srt_cue);
}

void tr_out_vtt(tr_out_view *v) {
    tr_strbuf_appends(v->out, "WEBVTT\n\n");
    if (untimed_turns(v, true, "")) return;
    tr_out_for_each_cue(v, vtt_cue);
}
