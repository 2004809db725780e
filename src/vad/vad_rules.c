/* Silero's get_speech_timestamps rules (v4), one probability at a time.
 *
 * Window i covers samples [win·i, win·(i+1)). A region opens at the first
 * window >= threshold; it closes at the first window below neg_threshold
 * once the quiet run has lasted min_silence (its end is where the quiet run
 * began); regions no longer than min_speech are dropped; a region longer
 * than max_speech is cut at the start of the last quiet run longer than
 * 98 ms (or where it stands, if it had none). Padding happens per pair of
 * neighbours: speech_pad on each side, or half the gap when two regions are
 * closer than twice the pad. The zero-means-unset conventions of the
 * original are kept on purpose: they decide ties the same way. */
#include <math.h>
#include <stdlib.h>

#include "util/vec.h"
#include "vad/vad.h"

void tr_vad_rules_init(tr_vad_rules *r, const struct transcribe_vad_params *p, int rate, int win) {
    free(r->raw);
    *r = (tr_vad_rules){0};
    r->threshold = p->threshold;
    r->neg_threshold =
        p->neg_threshold >= 0.0f ? p->neg_threshold : fmax((double)p->threshold - 0.15, 0.01);
    r->win = win;
    r->pad = (int64_t)rate * p->speech_pad_ms / 1000;
    r->min_speech = (double)rate * p->min_speech_ms / 1000.0;
    r->min_silence = (double)rate * p->min_silence_ms / 1000.0;
    r->min_silence_at_max = (double)rate * 98 / 1000.0;
    r->max_speech = p->max_speech_s > 0.0f
                        ? (double)rate * p->max_speech_s - win - 2.0 * (double)r->pad
                        : INFINITY;
}

void tr_vad_rules_free(tr_vad_rules *r) {
    free(r->raw);
    r->raw = NULL;
    r->n_raw = r->cap_raw = 0;
}

static bool append(tr_vad_rules *r, int64_t start, int64_t end) {
    int64_t *v = tr_grow(r->raw, &r->cap_raw, 2 * (r->n_raw + 1), sizeof *v, 32);
    if (!v) return false;
    r->raw = v;
    v[2 * r->n_raw] = start;
    v[2 * r->n_raw + 1] = end;
    r->n_raw++;
    return true;
}

bool tr_vad_rules_push(tr_vad_rules *r, float prob) {
    const int64_t pos = r->win * r->n_probs++;
    const double p = prob;
    bool ok = true;
    if (p >= r->threshold && r->temp_end) {
        r->temp_end = 0;
        if (r->next_start < r->prev_end) r->next_start = pos;
    }
    if (p >= r->threshold && !r->triggered) {
        r->triggered = true;
        r->cur_start = pos;
        return true;
    }
    if (r->triggered && (double)(pos - r->cur_start) > r->max_speech) {
        if (r->prev_end) {
            ok = append(r, r->cur_start, r->prev_end);
            if (r->next_start < r->prev_end)
                r->triggered = false;
            else
                r->cur_start = r->next_start;
            r->prev_end = r->next_start = r->temp_end = 0;
        } else {
            ok = append(r, r->cur_start, pos);
            r->prev_end = r->next_start = r->temp_end = 0;
            r->triggered = false;
            return ok;
        }
    }
    if (p < r->neg_threshold && r->triggered) {
        if (!r->temp_end) r->temp_end = pos;
        if ((double)(pos - r->temp_end) > r->min_silence_at_max) r->prev_end = r->temp_end;
        if ((double)(pos - r->temp_end) < r->min_silence) return ok;
        if ((double)(r->temp_end - r->cur_start) > r->min_speech)
            ok = append(r, r->cur_start, r->temp_end) && ok;
        r->prev_end = r->next_start = r->temp_end = 0;
        r->triggered = false;
    }
    return ok;
}

bool tr_vad_rules_finish(tr_vad_rules *r, int64_t n_samples) {
    bool ok = true;
    if (r->triggered && (double)(n_samples - r->cur_start) > r->min_speech)
        ok = append(r, r->cur_start, n_samples);
    r->triggered = false;
    r->prev_end = r->next_start = r->temp_end = 0;
    return ok;
}

size_t tr_vad_rules_n_final(const tr_vad_rules *r, int64_t n_seen, bool finished) {
    if (finished || r->n_raw == 0) return r->n_raw;
    /* The last closed region's end padding waits for its successor unless
     * none can start within 2·pad of it any more (nor is open there). */
    int64_t e = r->raw[2 * r->n_raw - 1];
    int64_t next = r->win * r->n_probs;
    if (r->triggered && r->cur_start < next) next = r->cur_start;
    bool last_final = next - e >= 2 * r->pad && e + r->pad <= n_seen;
    return last_final ? r->n_raw : r->n_raw - 1;
}

void tr_vad_rules_padded(const tr_vad_rules *r, size_t i, int64_t n_samples, int64_t *start,
                         int64_t *end) {
    const int64_t *v = r->raw;
    int64_t s = v[2 * i], e = v[2 * i + 1];
    if (i == 0) {
        s = s - r->pad > 0 ? s - r->pad : 0;
    } else {
        int64_t gap = v[2 * i] - v[2 * i - 1];
        int64_t d = gap < 2 * r->pad ? gap / 2 : r->pad;
        s = s - d > 0 ? s - d : 0;
    }
    if (i + 1 < r->n_raw) {
        int64_t gap = v[2 * i + 2] - e;
        if (gap < 2 * r->pad)
            e += gap / 2;
        else
            e = e + r->pad < n_samples ? e + r->pad : n_samples;
    } else {
        e = e + r->pad < n_samples ? e + r->pad : n_samples;
    }
    *start = s;
    *end = e;
}
