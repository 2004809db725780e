/* Per-step decoding rules of docs/formats/whisper.md §8.5–§8.8: logit
 * suppression and timestamp constraints, greedy / temperature selection,
 * segment retrieval and the seek advance. Pure functions of their inputs. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "models/whisper/whisper_decode.h"

void tr_wh_opts_from_params(const struct transcribe_run_params *p, wh_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_prev = 223;
    o->t0 = 0.0f;
    o->t_inc = 0.2f;
    o->cr_thold = 2.4f;
    o->lp_thold = -1.0f;
    o->ns_thold = 0.6f;
    o->max_initial_ts = 1.0f;
    if (p && p->n_vocabulary > 0) {
        o->vocabulary = p->vocabulary;
        o->n_vocabulary = p->n_vocabulary;
    }
    const struct transcribe_ext *e = p ? p->family : NULL;
    if (!e || e->kind != TRANSCRIBE_EXT_KIND_WHISPER_RUN ||
        e->size < sizeof(struct transcribe_whisper_run_ext))
        return;
    const struct transcribe_whisper_run_ext *x = (const struct transcribe_whisper_run_ext *)e;
    o->initial_prompt = x->initial_prompt;
    o->prompt_tokens = x->prompt_tokens;
    o->n_prompt_tokens = x->prompt_tokens ? x->n_prompt_tokens : 0;
    o->prompt_condition = (int)x->prompt_condition;
    o->cond_prev = x->condition_on_prev_tokens;
    o->max_prev = x->max_prev_context_tokens;
    o->t0 = x->temperature;
    o->t_inc = x->temperature_inc;
    o->cr_thold = x->compression_ratio_thold;
    o->lp_thold = x->logprob_thold;
    o->ns_thold = x->no_speech_thold;
    o->seed = x->seed;
    o->max_initial_ts = x->max_initial_timestamp;
}

/* ---- mt19937 ---- */

void tr_wh_rng_seed(wh_rng *r, uint32_t seed) {
    r->mt[0] = seed;
    for (int i = 1; i < 624; i++)
        r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
    r->idx = 624;
}

static uint32_t rng_next(wh_rng *r) {
    if (r->idx >= 624) {
        for (int i = 0; i < 624; i++) {
            uint32_t y = (r->mt[i] & 0x80000000u) | (r->mt[(i + 1) % 624] & 0x7fffffffu);
            r->mt[i] = r->mt[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        }
        r->idx = 0;
    }
    uint32_t y = r->mt[r->idx++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double tr_wh_rng_uniform(wh_rng *r) {
    uint64_t a = rng_next(r) >> 5, b = rng_next(r) >> 6;
    return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

/* ---- docs/formats/whisper.md §8.5 ---- */

static void mask_range(float *l, int a, int b) {
    for (int i = a; i < b; i++) l[i] = -INFINITY;
}

void tr_wh_process_logits(const wh_proc *pc, float *l, const int32_t *G, int n_g) {
    const wh_model *m = pc->m;
    const int V = m->hp.n_vocab, TB = m->ts_begin;
    for (int i = 0; i < m->n_suppress; i++) l[m->suppress[i]] = -INFINITY;
    if (n_g == 0)
        for (int i = 0; i < m->n_begin_suppress; i++) l[m->begin_suppress[i]] = -INFINITY;
    if (!pc->want_ts) return;

    l[m->no_ts] = -INFINITY;
    bool last_ts = n_g > 0 && G[n_g - 1] >= TB;
    bool penult_ts = n_g < 2 || G[n_g - 2] >= TB;
    if (last_ts) {
        if (penult_ts)
            mask_range(l, TB, V);
        else
            mask_range(l, 0, m->eot < V ? m->eot : V);
    }
    for (int i = n_g - 1; i >= 0; i--) {
        if (G[i] >= TB) {
            int end = (last_ts && !penult_ts) ? G[i] : G[i] + 1;
            mask_range(l, TB, end < V ? end : V);
            break;
        }
    }
    if (n_g == 0) {
        mask_range(l, 0, TB);
        if (pc->max_init_idx >= 0 && (long)TB + pc->max_init_idx + 1 < V)
            mask_range(l, TB + pc->max_init_idx + 1, V);
    }
    /* timestamp probability mass vs best text token */
    float mx = -INFINITY;
    for (int i = TB; i < V; i++)
        if (l[i] > mx) mx = l[i];
    if (mx == -INFINITY) return;
    double s = 0.0;
    for (int i = TB; i < V; i++)
        if (l[i] != -INFINITY) s += exp((double)l[i] - mx);
    double lse = mx + log(s);
    float mt = -INFINITY;
    for (int i = 0; i < TB; i++)
        if (l[i] > mt) mt = l[i];
    if (lse > (double)mt) mask_range(l, 0, TB);
}

/* ---- docs/formats/whisper.md §8.6 ---- */

int tr_wh_select(const float *l, int V, float T, wh_rng *rng, float *logprob, float *p) {
    return tr_wh_select_ts(l, V, V, T, rng, logprob, p, NULL);
}

int tr_wh_select_ts(const float *l, int V, int ts_begin, float T, wh_rng *rng, float *logprob,
                    float *p, wh_tsp *ts) {
    if (ts) *ts = (wh_tsp){-1, 0.0f, 0.0f};
    int best = -1;
    float mx = -INFINITY;
    for (int i = 0; i < V; i++) {
        if (l[i] > mx) {
            mx = l[i];
            best = i;
        }
    }
    if (best < 0) { /* everything masked: cannot happen with EOS unmasked; be safe */
        *logprob = -INFINITY;
        *p = 0.0f;
        return 0;
    }
    /* expf keeps the per-step softmax cheap (V ~ 52k); sums in double */
    double s = 0.0;
    for (int i = 0; i < V; i++) s += (double)expf(l[i] - mx); /* expf(-inf) = 0 */
    double lse = mx + log(s);
    if (ts && ts_begin >= 0) { /* docs/formats/whisper.md §13.1 */
        double sum = 0.0, top = 0.0;
        for (int i = ts_begin; i < V; i++) {
            if (l[i] == -INFINITY) continue;
            double q = (double)expf(l[i] - mx) / s;
            sum += q;
            if (q > top) {
                top = q;
                ts->tid = i;
            }
        }
        ts->ptsum = (float)sum;
        ts->pt = sum > 0.0 ? (float)(top / sum) : 0.0f;
    }
    int id = best;
    if (T > 0.0f) {
        double tot = 0.0;
        for (int i = 0; i < V; i++)
            if (l[i] != -INFINITY) tot += exp(((double)l[i] - mx) / T);
        double u = tr_wh_rng_uniform(rng) * tot, acc = 0.0;
        id = -1;
        for (int i = 0; i < V; i++) {
            if (l[i] == -INFINITY) continue;
            acc += exp(((double)l[i] - mx) / T);
            id = i;
            if (acc > u) break;
        }
        if (id < 0) id = best;
        /* upstream's avg_logprob at T > 0: log_softmax(T * logits)[id] (docs/formats/whisper.md §12
         * item 3) */
        double s2 = 0.0;
        for (int i = 0; i < V; i++)
            if (l[i] != -INFINITY) s2 += exp((double)T * ((double)l[i] - mx));
        *logprob = (float)((double)T * ((double)l[id] - mx) - log(s2));
    } else {
        *logprob = (float)((double)l[id] - lse);
    }
    *p = (float)exp((double)l[id] - lse);
    return id;
}

/* ---- docs/formats/whisper.md §8.8 ---- */

int tr_wh_retrieve_segments(const wh_model *m, const int32_t *G, int n_g, int64_t offset_ms,
                            int n_real, bool want_ts, wh_seg *segs, int *advance) {
    const int TB = m->ts_begin;
#define IS_TS(x) ((x) >= TB)
    int n_seg = 0;
    int n_pairs = 0;
    for (int i = 0; i + 1 < n_g; i++)
        if (IS_TS(G[i]) && IS_TS(G[i + 1])) n_pairs++;
    bool single_end = n_g >= 2 && !IS_TS(G[n_g - 2]) && IS_TS(G[n_g - 1]);
    if (n_pairs > 0 && want_ts) {
        /* cuts: i+1 for each pair, then the end adjustment */
        int n_cuts = 0;
        int cuts_buf[1024];
        int *cuts = cuts_buf; /* n_g <= 256 + slack in practice */
        for (int i = 0; i + 1 < n_g && n_cuts < 1023; i++)
            if (IS_TS(G[i]) && IS_TS(G[i + 1])) cuts[n_cuts++] = i + 1;
        if (single_end)
            cuts[n_cuts++] = n_g;
        else
            cuts[n_cuts - 1] += 1;
        int start = 0;
        for (int k = 0; k < n_cuts; k++) {
            int c = cuts[k];
            bool last = k == n_cuts - 1;
            if (c <= start || !IS_TS(G[start])) {
                start = c;
                continue;
            }
            int end_idx = (!last || single_end) ? c - 1 : c - 2;
            if (end_idx < start || end_idx >= n_g || !IS_TS(G[end_idx])) {
                start = c;
                continue;
            }
            wh_seg *s = &segs[n_seg++];
            s->start = start;
            s->end = c < n_g ? c : n_g;
            s->t0_ms = offset_ms + 20 * (int64_t)(G[start] - TB);
            s->t1_ms = offset_ms + 20 * (int64_t)(G[end_idx] - TB);
            if (s->t1_ms < s->t0_ms) s->t1_ms = s->t0_ms;
            s->timed = true;
            start = c;
        }
        if (single_end)
            *advance = n_real;
        else if (start >= 2 && start - 2 < n_g && IS_TS(G[start - 2]))
            *advance = 2 * (G[start - 2] - TB);
        else
            *advance = n_real;
    } else {
        int last = -1;
        for (int i = n_g - 1; i >= 0; i--) {
            if (IS_TS(G[i]) && G[i] != TB) {
                last = G[i];
                break;
            }
        }
        if (n_g > 0) {
            wh_seg *s = &segs[n_seg++];
            s->start = 0;
            s->end = n_g;
            s->t0_ms = offset_ms;
            s->t1_ms = offset_ms + (last >= 0 ? 20 * (int64_t)(last - TB) : 10 * (int64_t)n_real);
            s->timed = false;
        }
        *advance = n_real;
    }
    if (*advance <= 0) *advance = n_real;
    return n_seg;
#undef IS_TS
}

/* ---- docs/formats/whisper.md §13 (our addition: word and token times) ---- */

#define WH_TS_MIN_PT    0.01f /* a timestamp must stand out among the timestamps */
#define WH_TS_MIN_PTSUM 0.01f /* and the timestamps together must be plausible */
#define WH_MIN_WEIGHT   0.25f

float tr_wh_token_weight(const char *b, size_t n) {
    float w = 0.0f;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)b[i];
        if ((c & 0xC0u) == 0x80u) continue; /* one character per UTF-8 lead byte */
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        else if (c >= '0' && c <= '9')
            w += 3.0f; /* a digit is said as a word */
        else if (c == '.' || c == ',' || c == '!' || c == '?' || c == ';' || c == ':')
            w += 2.0f; /* a pause follows */
        else
            w += 1.0f;
    }
    return w > WH_MIN_WEIGHT ? w : WH_MIN_WEIGHT;
}

void tr_wh_token_times(int ts_begin, const wh_tsp *ts, const float *w, int n, int64_t offset_ms,
                       int64_t seg_t0, int64_t seg_t1, int64_t *t0, int64_t *t1) {
    if (seg_t1 < seg_t0) seg_t1 = seg_t0;
    /* Pass 1: the start of each text token where the evidence is confident; INT64_MIN where
     * it is not. The first text token starts the segment; an anchor must move forward and
     * stay strictly inside the segment. */
    int64_t last = seg_t0;
    bool first = true;
    for (int i = 0; i < n; i++) {
        t0[i] = t1[i] = INT64_MIN;
        if (!(w[i] > 0.0f)) continue;
        if (first) {
            t0[i] = seg_t0;
            first = false;
            continue;
        }
        if (!ts || ts[i].tid < ts_begin || !(ts[i].pt > WH_TS_MIN_PT) ||
            !(ts[i].ptsum > WH_TS_MIN_PTSUM))
            continue;
        int64_t a = offset_ms + 20 * (int64_t)(ts[i].tid - ts_begin);
        if (a > last && a < seg_t1) {
            t0[i] = a;
            last = a;
        }
    }
    /* Pass 2: between two known starts (the segment's end closes the last run), the
     * unknown starts split the span in proportion to the weights of the tokens before
     * them. */
    int p = -1; /* the last text position with a known start */
    for (int i = 0; i <= n; i++) {
        bool text = i < n && w[i] > 0.0f;
        if (i < n && (!text || t0[i] == INT64_MIN)) continue;
        if (p >= 0) {
            int64_t a = t0[p], b = i < n ? t0[i] : seg_t1;
            double tot = 0.0, acc = 0.0;
            for (int k = p; k < i; k++)
                if (w[k] > 0.0f) tot += w[k];
            int prev = p;
            for (int k = p + 1; k < i; k++) {
                if (!(w[k] > 0.0f)) continue;
                acc += w[prev];
                int64_t t = a + (int64_t)llround((double)(b - a) * (acc / tot));
                t0[k] = t < a ? a : t > b ? b : t;
                prev = k;
            }
        }
        if (i < n) p = i;
    }
    /* Ends: each text token ends where the next one starts, the last at the segment's end;
     * a non-text position sits at the start of the text token after it. */
    int64_t next = seg_t1;
    for (int i = n - 1; i >= 0; i--) {
        if (w[i] > 0.0f) {
            t1[i] = next;
            next = t0[i];
        } else {
            t0[i] = t1[i] = next;
        }
    }
}
