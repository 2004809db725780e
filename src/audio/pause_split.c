/* Pause detection and chunk planning (pause_split.h). */
#include "audio/pause_split.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Analysis constants. Frames of 10 ms; detection looks at the log power
 * smoothed over 30 ms. The noise floor is a low percentile (FLOOR_PCT) of the
 * power smoothed over 210 ms (a pause-sized window, so single quiet frames
 * between syllables do not count) within ±10 s, recomputed every 100 ms: it
 * follows a floor that changes across the file, needs only 0.6 s of pause
 * in the window, and a dropout shorter than that cannot drag it down. The pause threshold sits
 * MARGIN_MIN dB above the floor, or a share of the distance from the floor
 * to the loud frames (SPREAD_PCT) when that is larger, at most MARGIN_MAX;
 * leaving a pause takes HYSTERESIS dB more, so a wavering tail does not
 * flicker. */
#define FRAME_PER_S  100
#define SMOOTH_FR    10 /* floor smoothing: 2 * 10 + 1 frames */
#define WINDOW_FR    1000
#define BLOCK_FR     10
#define DB_MIN       (-100.0f)
#define DB_MAX       40.0f
#define BIN_DB       0.5f
#define N_BINS       281 /* (DB_MAX - DB_MIN) / BIN_DB + 1 */
#define FLOOR_PCT    0.03
#define SPREAD_PCT   0.90
#define MARGIN_MIN   6.0f
#define MARGIN_MAX   20.0f
#define MARGIN_SHARE 0.3f
#define HYSTERESIS   3.0f
/* Audio whose frames never leave the noise floor yet is this loud (median,
 * dBFS) is stationary sound, not silence: it is kept whole and cut by force. */
#define LOUD_FLAT_DB (-50.0f)

/* Planning constants. A cut goes at the quietest point of its pause,
 * pulled towards the middle (CENTRE_DB at the pause's edges), because a soft
 * word ending or onset can sit under the threshold at either end. Silence is
 * dropped only beyond KEEP_MS from speech on either side (a pause longer than
 * twice that, and before the first and after the last speech). Candidate
 * pauses score by length up to LEN_CAP_MS, depth up to DEPTH_CAP_DB, and
 * lateness (longer pieces mean fewer cuts). */
#define KEEP_MS      1000
#define CENTRE_DB    6.0
#define LEN_CAP_MS   1500.0
#define DEPTH_CAP_DB 20.0
#define W_DEPTH      0.5
#define W_LATE       0.75

static int bin_of(float db) {
    int b = (int)((db - DB_MIN) / BIN_DB);
    return b < 0 ? 0 : b >= N_BINS ? N_BINS - 1 : b;
}

/* The dB value below which a share q of the window's count lies. */
static float percentile(const int32_t *hist, int64_t count, double q) {
    int64_t want = (int64_t)ceil(q * (double)count);
    if (want < 1) want = 1;
    int64_t acc = 0;
    for (int b = 0; b < N_BINS; b++) {
        acc += hist[b];
        if (acc >= want) return DB_MIN + ((float)b + 0.5f) * BIN_DB;
    }
    return DB_MAX;
}

/* Mean power of frame f. Non-finite samples count as 0 (NaN) or full
 * scale (±Inf), as the run path treats them. */
static double frame_power(const float *pcm, int64_t n, int hop, int64_t f) {
    int64_t a = f * hop, b = a + hop < n ? a + hop : n;
    double acc = 0;
    for (int64_t i = a; i < b; i++) {
        double x = pcm[i];
        if (!isfinite(x)) x = isnan(x) ? 0.0 : 1.0;
        acc += x * x;
    }
    return acc / (double)(b - a);
}

static float to_db(double p) {
    double db = 10.0 * log10(p + 1e-10);
    return db < DB_MIN ? DB_MIN : db > DB_MAX ? DB_MAX : (float)db;
}

/* Log power per frame averaged over the frame and r neighbours each side
 * (fewer at the ends), from per-frame powers pw. */
static void smooth_db(const double *pw, int64_t nf, int64_t r, float *out) {
    double acc = 0;
    int64_t lo = 0, hi = 0; /* pw[lo, hi) summed in acc */
    for (int64_t f = 0; f < nf; f++) {
        int64_t want_lo = f - r < 0 ? 0 : f - r, want_hi = f + r + 1 > nf ? nf : f + r + 1;
        while (hi < want_hi) acc += pw[hi++];
        while (lo < want_lo) acc -= pw[lo++];
        out[f] = to_db(acc > 0 ? acc / (double)(hi - lo) : 0.0);
    }
}

/* A histogram of e over a sliding frame range [lo, hi). */
typedef struct {
    int32_t bins[N_BINS];
    int64_t lo, hi;
} slide_hist;

static void slide_to(slide_hist *h, const float *e, int64_t lo, int64_t hi) {
    while (h->hi < hi) h->bins[bin_of(e[h->hi++])]++;
    while (h->lo < lo) h->bins[bin_of(e[h->lo++])]--;
}

/* Per-block pause thresholds (enter a pause below them) from the sliding
 * histogram of the frames within WINDOW_FR of each block's centre. After a
 * step up in the floor (a fan starts), pauses are found again once the
 * louder side fills all but FLOOR_PCT of the window (about 9 s). */
static void block_thresholds(const float *e, int64_t nf, float *thr, int64_t n_blocks) {
    slide_hist h;
    memset(&h, 0, sizeof h);
    for (int64_t k = 0; k < n_blocks; k++) {
        int64_t c = k * BLOCK_FR + BLOCK_FR / 2;
        slide_to(&h, e, c - WINDOW_FR < 0 ? 0 : c - WINDOW_FR,
                 c + WINDOW_FR + 1 > nf ? nf : c + WINDOW_FR + 1);
        int64_t count = h.hi - h.lo;
        float floor_db = percentile(h.bins, count, FLOOR_PCT);
        float top_db = percentile(h.bins, count, SPREAD_PCT);
        float margin = MARGIN_SHARE * (top_db - floor_db);
        margin = margin < MARGIN_MIN ? MARGIN_MIN : margin > MARGIN_MAX ? MARGIN_MAX : margin;
        thr[k] = floor_db + margin;
    }
}

static bool push_pause(tr_pause_track *t, int *cap, int64_t start, int64_t end, float depth) {
    if (t->n_pauses == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        tr_pause *p = realloc(t->pauses, (size_t)nc * sizeof *p);
        if (!p) return false;
        t->pauses = p;
        *cap = nc;
    }
    t->pauses[t->n_pauses++] = (tr_pause){start, end, depth};
    return true;
}

transcribe_status tr_pause_find(const float *pcm, int64_t n, int rate, int64_t min_pause_ms,
                                tr_pause_track *out) {
    memset(out, 0, sizeof *out);
    int hop = rate / FRAME_PER_S;
    int64_t nf = (n + hop - 1) / hop;
    int64_t n_blocks = (nf + BLOCK_FR - 1) / BLOCK_FR;
    out->hop = hop;
    out->n_frames = nf;
    out->energy_db = malloc((size_t)nf * sizeof *out->energy_db);
    float *thr = malloc((size_t)n_blocks * sizeof *thr);
    uint8_t *quiet = malloc((size_t)nf);
    double *pw = calloc((size_t)nf, sizeof *pw);
    float *slow = malloc((size_t)nf * sizeof *slow);
    if (!out->energy_db || !thr || !quiet || !pw || !slow) {
        free(thr), free(quiet), free(pw), free(slow), tr_pause_track_free(out);
        return TRANSCRIBE_ERR_OOM;
    }
    float *e = out->energy_db;
    for (int64_t f = 0; f < nf; f++) pw[f] = frame_power(pcm, n, hop, f);
    smooth_db(pw, nf, 1, e);
    smooth_db(pw, nf, SMOOTH_FR, slow);
    block_thresholds(slow, nf, thr, n_blocks);
    free(pw);
    free(slow);

    /* Hysteresis: a frame is quiet until the energy passes thr + HYSTERESIS,
     * and stays speech until it drops under thr. */
    bool in_speech = false;
    for (int64_t f = 0; f < nf; f++) {
        float lo = thr[f / BLOCK_FR];
        if (in_speech ? e[f] < lo : e[f] > lo + HYSTERESIS) in_speech = !in_speech;
        quiet[f] = !in_speech;
    }
    /* Flat but loud: stationary sound with no pauses to find. */
    bool any_speech = false;
    for (int64_t f = 0; f < nf && !any_speech; f++) any_speech = !quiet[f];
    if (!any_speech) {
        int32_t hist[N_BINS];
        memset(hist, 0, sizeof hist);
        for (int64_t f = 0; f < nf; f++) hist[bin_of(e[f])]++;
        if (percentile(hist, nf, 0.5) > LOUD_FLAT_DB) memset(quiet, 0, (size_t)nf);
    }

    /* Quiet runs: pauses when long enough, or at either end of the signal;
     * shorter ones are gaps inside speech. */
    int64_t min_fr = (min_pause_ms * FRAME_PER_S + 999) / 1000;
    int cap = 0;
    out->speech_start = -1;
    for (int64_t f = 0; f < nf;) {
        int64_t g = f;
        while (g < nf && quiet[g] == quiet[f]) g++;
        bool pause = quiet[f] && (g - f >= min_fr || f == 0 || g == nf);
        if (pause) {
            double depth = 0;
            for (int64_t i = f; i < g; i++) depth += thr[i / BLOCK_FR] - e[i];
            depth /= (double)(g - f);
            int64_t s0 = f * hop, s1 = g * hop > n ? n : g * hop;
            if (!push_pause(out, &cap, s0, s1, (float)depth)) {
                free(thr), free(quiet), tr_pause_track_free(out);
                return TRANSCRIBE_ERR_OOM;
            }
        } else {
            if (out->speech_start < 0) out->speech_start = f * hop;
            out->speech_end = g * hop > n ? n : g * hop;
            out->has_speech = true;
        }
        f = g;
    }
    if (!out->has_speech) out->speech_start = out->speech_end = 0;
    free(thr), free(quiet);
    return TRANSCRIBE_OK;
}

transcribe_status tr_pause_track_set_speech(tr_pause_track *t, int64_t n, const int64_t *regions,
                                            int n_regions, int64_t min_pause_samples) {
    /* how far a gap's energy sits below the mean energy of the speech */
    double speech_db = 0;
    int64_t n_speech = 0;
    for (int r = 0; r < n_regions; r++) {
        for (int64_t f = regions[2 * r] / t->hop; f * t->hop < regions[2 * r + 1]; f++) {
            if (f >= t->n_frames) break;
            speech_db += t->energy_db[f];
            n_speech++;
        }
    }
    speech_db = n_speech ? speech_db / (double)n_speech : 0;
    free(t->pauses);
    t->pauses = NULL;
    t->n_pauses = 0;
    int cap = 0;
    int64_t prev_end = 0;
    for (int r = 0; r <= n_regions; r++) {
        int64_t a = prev_end, b = r < n_regions ? regions[2 * r] : n;
        bool edge = r == 0 || r == n_regions;
        if (b > a && (edge || b - a >= min_pause_samples)) {
            double depth = 0;
            int64_t cnt = 0;
            for (int64_t f = a / t->hop; f * t->hop < b && f < t->n_frames; f++, cnt++)
                depth += speech_db - t->energy_db[f];
            depth = cnt ? depth / (double)cnt : 0;
            if (!push_pause(t, &cap, a, b, (float)(depth > 0.1 ? depth : 0.1))) {
                tr_pause_track_free(t);
                return TRANSCRIBE_ERR_OOM;
            }
        }
        if (r < n_regions) prev_end = regions[2 * r + 1];
    }
    t->has_speech = n_regions > 0;
    t->speech_start = n_regions ? regions[0] : 0;
    t->speech_end = n_regions ? regions[2 * n_regions - 1] : 0;
    return TRANSCRIBE_OK;
}

void tr_pause_track_free(tr_pause_track *t) {
    if (!t) return;
    free(t->energy_db);
    free(t->pauses);
    memset(t, 0, sizeof *t);
}

static bool push_span(struct transcribe_audio_span **v, int *n, int *cap, int64_t a, int64_t b,
                      int kind) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        struct transcribe_audio_span *p = realloc(*v, (size_t)nc * sizeof *p);
        if (!p) return false;
        *v = p;
        *cap = nc;
    }
    (*v)[(*n)++] = (struct transcribe_audio_span){a, b, kind};
    return true;
}

/* The sample in [a, b) (b > a) at the centre of the quietest frame, each
 * frame's energy raised by up to centre_db with its distance from the
 * middle of [a, b). */
static int64_t quietest_cut(const tr_pause_track *t, int64_t a, int64_t b, double centre_db) {
    int64_t f0 = (a + t->hop - 1) / t->hop, f1 = b / t->hop;
    if (f1 > t->n_frames) f1 = t->n_frames;
    if (f1 <= f0) return (a + b) / 2;
    double c = 0.5 * (double)(f0 + f1 - 1), h = 0.5 * (double)(f1 - f0) + 1e-9;
    int64_t best = f0;
    double best_e = 1e30;
    for (int64_t f = f0; f < f1; f++) {
        double d = (double)f - c;
        double e = t->energy_db[f] + centre_db * (d < 0 ? -d : d) / h;
        if (e < best_e) best_e = e, best = f;
    }
    int64_t cut = best * t->hop + t->hop / 2;
    return cut < a ? a : cut >= b ? b - 1 : cut;
}

transcribe_status tr_pause_plan(const tr_pause_track *t, int64_t n, int rate, int64_t target_ms,
                                int64_t max_ms, struct transcribe_audio_span **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    if (!t->has_speech) return TRANSCRIBE_OK;
    int64_t target = target_ms * rate / 1000, max = max_ms * rate / 1000;
    int64_t pad = (int64_t)KEEP_MS * rate / 1000, min_len = target / 4;
    int64_t s = t->speech_start - pad < 0 ? 0 : t->speech_start - pad;
    int64_t stop = t->speech_end + pad > n ? n : t->speech_end + pad;
    int cap = 0, k0 = 0;
    while (stop - s > max) {
        /* Best interior pause whose middle falls in [s + min_len, s + max]:
         * first those ending the piece by target, then the rest. */
        int best = -1, best_tier = 2;
        double best_score = 0;
        for (int k = k0; k < t->n_pauses; k++) {
            const tr_pause *p = &t->pauses[k];
            if (p->start <= t->speech_start || p->end >= t->speech_end) continue; /* edges */
            int64_t mid = (p->start + p->end) / 2;
            /* a long pause is cut pad into it (below), so that is where it
             * counts: one far longer than max_ms is still found */
            if (p->end - p->start > 2 * pad && p->start + pad < mid) mid = p->start + pad;
            if (mid > s + max) break;
            if (mid < s + min_len) {
                if (p->end <= s) k0 = k + 1; /* behind us for good */
                continue;
            }
            int tier = mid <= s + target ? 0 : 1;
            double len = (double)(p->end - p->start) * 1000.0 / rate;
            double score =
                (len < LEN_CAP_MS ? len : LEN_CAP_MS) / LEN_CAP_MS +
                W_DEPTH * (p->depth_db < DEPTH_CAP_DB ? p->depth_db : DEPTH_CAP_DB) / DEPTH_CAP_DB +
                W_LATE * (double)(mid - s) / (double)target;
            if (tier < best_tier || (tier == best_tier && score > best_score)) {
                best = k, best_tier = tier, best_score = score;
            }
        }
        int64_t end, next;
        int kind;
        if (best >= 0) {
            const tr_pause *p = &t->pauses[best];
            int64_t p0 = p->start <= s ? s + 1 : p->start;
            int64_t p1 = p->end > s + max ? s + max + 1 : p->end;
            if (p->end - p->start > 2 * pad && p0 + pad <= s + max) {
                end = p0 + pad; /* a long silence: drop its middle */
                next = p->end - pad;
            } else {
                end = next = quietest_cut(t, p0, p1, CENTRE_DB);
            }
            kind = TRANSCRIBE_SPAN_END_PAUSE;
        } else {
            end = next = quietest_cut(t, s + target / 2, s + max, 0.0);
            kind = TRANSCRIBE_SPAN_END_FORCED;
        }
        if (!push_span(out, n_out, &cap, s, end, kind)) goto oom;
        s = next;
    }
    if (!push_span(out, n_out, &cap, s, stop, TRANSCRIBE_SPAN_END_SPEECH)) goto oom;
    return TRANSCRIBE_OK;
oom:
    free(*out);
    *out = NULL;
    *n_out = 0;
    return TRANSCRIBE_ERR_OOM;
}
