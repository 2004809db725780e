/* Runs with a VAD model (transcribe_run_params.vad_model): the family sees
 * only the speech regions, joined with short pauses between them, and every
 * time in its result is mapped back to the input's clock here, once for
 * every family. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "util/log.h"
#include "vad/vad.h"

/* Silence between two joined regions: long enough that a decoder sees a
 * pause (Whisper ends a segment there), short enough to cost nothing. */
#define TR_VAD_JOIN_GAP_MS 100

void tr_vad_join_free(tr_vad_join *j) {
    free(j->pcm);
    free(j->pieces);
    memset(j, 0, sizeof *j);
}

transcribe_status tr_vad_join_plan(const struct transcribe_vad_model *vm,
                                   const struct transcribe_vad_params *vp, int rate,
                                   const float *pcm, int n, tr_vad_join *out) {
    memset(out, 0, sizeof *out);
    out->rate = rate;
    struct transcribe_vad *v = NULL;
    transcribe_status st = tr_vad_create(vm, rate, vp, &v);
    if (st == TRANSCRIBE_OK) st = tr_vad_run(v, pcm, n);
    if (st != TRANSCRIBE_OK) {
        tr_vad_free(v);
        return st;
    }
    const int n_seg = tr_vad_n_segments(v);
    const int64_t gap = (int64_t)rate * TR_VAD_JOIN_GAP_MS / 1000;
    out->pieces = n_seg ? calloc((size_t)n_seg, sizeof *out->pieces) : NULL;
    /* Regions that overlap (each cut of a region longer than max_speech_s
     * keeps its padding) or lie closer than the pause the join would put
     * between them are one piece of the input's own audio: joined with a
     * pause they repeated the overlap and broke words in two, so a model
     * heard "and and fifty nine nine". */
    int ns = 0;
    for (int i = 0; i < n_seg && out->pieces; i++) {
        struct transcribe_vad_segment sg;
        tr_vad_get_segment(v, i, &sg);
        tr_vad_piece *last = ns > 0 ? &out->pieces[ns - 1] : NULL;
        if (last && sg.start - (last->orig + last->len) < gap) {
            if (sg.end > last->orig + last->len) last->len = sg.end - last->orig;
            continue;
        }
        out->pieces[ns++] = (tr_vad_piece){.orig = sg.start, .len = sg.end - sg.start};
    }
    tr_vad_free(v);
    if (n_seg && !out->pieces) return TRANSCRIBE_ERR_OOM;
    int64_t total = 0;
    for (int i = 0; i < ns; i++) {
        out->pieces[i].joined = total;
        total += out->pieces[i].len + (i + 1 < ns ? gap : 0);
    }
    out->n_pieces = ns;
    if (ns == 0) return TRANSCRIBE_OK;
    out->pcm = calloc((size_t)total, sizeof(float));
    if (!out->pcm) {
        tr_vad_join_free(out);
        return TRANSCRIBE_ERR_OOM;
    }
    for (int i = 0; i < ns; i++) {
        const tr_vad_piece *p = &out->pieces[i];
        memcpy(out->pcm + p->joined, pcm + p->orig, sizeof(float) * (size_t)p->len);
    }
    out->n = (int)total;
    TR_INFO("vad: %d speech regions, %.1f s of %.1f s", ns, total / (double)rate, n / (double)rate);
    return TRANSCRIBE_OK;
}

/* A time on the joined clock → the input's clock. A time inside the pause
 * after a region maps to that region's end (an end time) or to the next
 * region's start (a start time). */
static int64_t map_ms(const tr_vad_join *j, int64_t t_ms, bool is_end) {
    const int64_t rate = j->rate;
    int64_t c = t_ms * rate / 1000;
    int k = 0;
    for (int i = 1; i < j->n_pieces; i++) {
        if (is_end ? j->pieces[i].joined < c : j->pieces[i].joined <= c) k = i;
    }
    const tr_vad_piece *p = &j->pieces[k];
    int64_t off = c - p->joined;
    if (off < 0) off = 0;
    if (off > p->len) {
        if (!is_end && k + 1 < j->n_pieces) return j->pieces[k + 1].orig * 1000 / rate;
        off = p->len;
    }
    return (p->orig + off) * 1000 / rate;
}

void tr_vad_join_remap(const tr_vad_join *j, tr_result *r) {
    if (j->n_pieces == 0) return;
    for (int i = 0; i < r->n_segs; i++) {
        r->segs[i].t0_ms = map_ms(j, r->segs[i].t0_ms, false);
        r->segs[i].t1_ms = map_ms(j, r->segs[i].t1_ms, true);
        if (r->segs[i].t1_ms < r->segs[i].t0_ms) r->segs[i].t1_ms = r->segs[i].t0_ms;
    }
    for (int i = 0; i < r->n_words; i++) {
        r->words[i].t0_ms = map_ms(j, r->words[i].t0_ms, false);
        r->words[i].t1_ms = map_ms(j, r->words[i].t1_ms, true);
        if (r->words[i].t1_ms < r->words[i].t0_ms) r->words[i].t1_ms = r->words[i].t0_ms;
    }
    for (int i = 0; i < r->n_toks; i++) {
        r->toks[i].t0_ms = map_ms(j, r->toks[i].t0_ms, false);
        r->toks[i].t1_ms = map_ms(j, r->toks[i].t1_ms, true);
        if (r->toks[i].t1_ms < r->toks[i].t0_ms) r->toks[i].t1_ms = r->toks[i].t0_ms;
    }
    for (int i = 0; i < r->n_spk; i++) {
        r->spk[i].t0_ms = map_ms(j, r->spk[i].t0_ms, false);
        r->spk[i].t1_ms = map_ms(j, r->spk[i].t1_ms, true);
        if (r->spk[i].t1_ms < r->spk[i].t0_ms) r->spk[i].t1_ms = r->spk[i].t0_ms;
    }
}

/* A short silence for an utterance with no speech: the family still gets a
 * valid call, and its result is emptied afterwards. */
static const float tr_vad_quiet[1600];

const float *tr_vad_quiet_pcm(int *n) {
    *n = (int)(sizeof tr_vad_quiet / sizeof tr_vad_quiet[0]);
    return tr_vad_quiet;
}

void tr_vad_empty_result(tr_result *r) {
    transcribe_status keep = r->status;
    transcribe_timestamp_kind kind = r->ts_kind; /* the kind a run with speech returns */
    float mel = r->mel_ms, enc = r->encode_ms, dec = r->decode_ms;
    tr_result_clear(r);
    r->status = keep;
    r->ts_kind = kind;
    r->mel_ms = mel, r->encode_ms = enc, r->decode_ms = dec;
}

transcribe_status tr_vad_batch_plan(const struct transcribe_vad_model *vm,
                                    const struct transcribe_vad_params *vp, int rate,
                                    const float *const *pcm, const int *n_samples, int count,
                                    tr_vad_batch *out) {
    memset(out, 0, sizeof *out);
    out->pcm = calloc((size_t)count, sizeof *out->pcm);
    out->n = calloc((size_t)count, sizeof *out->n);
    out->joins = calloc((size_t)count, sizeof *out->joins);
    out->count = count;
    if (!out->pcm || !out->n || !out->joins) {
        tr_vad_batch_finish(out, NULL);
        return TRANSCRIBE_ERR_OOM;
    }
    for (int i = 0; i < count; i++) {
        out->pcm[i] = pcm[i];
        out->n[i] = n_samples[i];
        if (!pcm[i] || n_samples[i] <= 0) continue; /* rejected per utterance later */
        transcribe_status st = tr_vad_join_plan(vm, vp, rate, pcm[i], n_samples[i], &out->joins[i]);
        if (st != TRANSCRIBE_OK) {
            tr_vad_batch_finish(out, NULL);
            return st;
        }
        bool empty = out->joins[i].n == 0;
        out->pcm[i] = empty ? tr_vad_quiet : out->joins[i].pcm;
        out->n[i] = empty ? (int)(sizeof tr_vad_quiet / sizeof tr_vad_quiet[0]) : out->joins[i].n;
    }
    return TRANSCRIBE_OK;
}

void tr_vad_batch_finish(tr_vad_batch *b, tr_result *results) {
    for (int i = 0; b->joins && i < b->count; i++) {
        tr_vad_join *j = &b->joins[i];
        if (results && j->rate > 0) {
            if (j->n_pieces == 0 && results[i].status == TRANSCRIBE_OK) {
                tr_vad_empty_result(&results[i]); /* no speech: no text */
            } else {
                tr_vad_join_remap(j, &results[i]);
            }
        }
        tr_vad_join_free(j);
    }
    free(b->pcm);
    free(b->n);
    free(b->joins);
    memset(b, 0, sizeof *b);
}
