/* Speaker attribution of transcript rows (speaker_label.h). */
#include "core/speaker_label.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline float act_at(const tr_speaker_activity *a, int t, int s) {
    return a->act[(size_t)t * (size_t)a->n_spk + (size_t)s];
}

/* The speaker of the active frame nearest to time ms (ties: the earlier
 * frame), or 0. */
static int32_t nearest_active(const tr_speaker_activity *a, double ms) {
    int best_t = -1;
    double best_d = INFINITY;
    for (int t = 0; t < a->n_frames; t++) {
        bool any = false;
        for (int s = 0; s < a->n_spk && !any; s++) any = act_at(a, t, s) > 0.5f;
        if (!any) continue;
        const double c = (t + 0.5) * a->frame_ms, dist = fabs(c - ms);
        if (dist < best_d) best_d = dist, best_t = t;
    }
    if (best_t < 0) return 0;
    int best_s = 0;
    for (int s = 1; s < a->n_spk; s++)
        if (act_at(a, best_t, s) > act_at(a, best_t, best_s)) best_s = s;
    return best_s + 1;
}

int32_t tr_speaker_for_span(const tr_speaker_activity *a, int64_t t0_ms, int64_t t1_ms) {
    if (!a || !a->act || a->n_frames <= 0 || a->n_spk <= 0 || !(a->frame_ms > 0)) return 0;
    if (t1_ms < t0_ms) {
        int64_t x = t0_ms;
        t0_ms = t1_ms;
        t1_ms = x;
    }
    const double fm = a->frame_ms;
    double score[64] = {0};
    const int S = a->n_spk < 64 ? a->n_spk : 64;
    if (t1_ms == t0_ms) { /* a point: the frame holding it */
        const int t = (int)floor((double)t0_ms / fm);
        if (t >= 0 && t < a->n_frames)
            for (int s = 0; s < S; s++) {
                const float p = act_at(a, t, s);
                if (p > 0.5f) score[s] = p;
            }
    } else {
        int ta = (int)floor((double)t0_ms / fm), tb = (int)ceil((double)t1_ms / fm);
        if (ta < 0) ta = 0;
        if (tb > a->n_frames) tb = a->n_frames;
        for (int t = ta; t < tb; t++) {
            const double lo = fmax((double)t0_ms, t * fm), hi = fmin((double)t1_ms, (t + 1) * fm);
            if (hi <= lo) continue;
            for (int s = 0; s < S; s++) {
                const float p = act_at(a, t, s);
                if (p > 0.5f) score[s] += (hi - lo) * p;
            }
        }
    }
    int best = -1;
    for (int s = 0; s < S; s++)
        if (score[s] > 0 && (best < 0 || score[s] > score[best])) best = s;
    if (best >= 0) return best + 1;
    return nearest_active(a, 0.5 * ((double)t0_ms + (double)t1_ms));
}

bool tr_speaker_activity_from_rows(const tr_result_speaker *rows, int n, double frame_ms,
                                   float **act, int *n_frames, int *n_spk) {
    *act = NULL;
    *n_frames = *n_spk = 0;
    int64_t end = 0;
    int S = 0;
    for (int i = 0; i < n; i++) {
        if (rows[i].t1_ms > end) end = rows[i].t1_ms;
        if (rows[i].speaker_id > S) S = rows[i].speaker_id;
    }
    if (S > 64) S = 64;
    if (n <= 0 || S <= 0 || end <= 0 || !(frame_ms > 0)) return true;
    const int T = (int)ceil((double)end / frame_ms);
    float *m = calloc((size_t)T * (size_t)S, sizeof *m);
    if (!m) return false;
    for (int i = 0; i < n; i++) {
        const int s = rows[i].speaker_id - 1;
        if (s < 0 || s >= S) continue;
        for (int t = 0; t < T; t++) {
            const double mid = (t + 0.5) * frame_ms;
            if (mid >= (double)rows[i].t0_ms && mid < (double)rows[i].t1_ms)
                m[(size_t)t * S + s] = 1.0f;
        }
    }
    *act = m;
    *n_frames = T;
    *n_spk = S;
    return true;
}

void tr_speaker_label_result(tr_result *r, const tr_speaker_activity *a) {
    for (int i = 0; i < r->n_words; i++)
        r->words[i].speaker_id = tr_speaker_for_span(a, r->words[i].t0_ms, r->words[i].t1_ms);
    for (int j = 0; j < r->n_segs; j++) {
        tr_result_segment *g = &r->segs[j];
        double w[65] = {0};
        int best = 0;
        for (int k = g->first_word; g->n_words > 0 && k < g->first_word + g->n_words; k++) {
            if (k < 0 || k >= r->n_words) break;
            const int32_t s = r->words[k].speaker_id;
            if (s < 1 || s > 64) continue;
            /* a zero-length word still counts */
            w[s] += (double)(r->words[k].t1_ms - r->words[k].t0_ms) + 1.0;
            if (best == 0 || w[s] > w[best] || (w[s] == w[best] && s < best)) best = s;
        }
        g->speaker_id = best > 0 ? best : tr_speaker_for_span(a, g->t0_ms, g->t1_ms);
    }
}
