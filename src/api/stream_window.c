/* The generic streaming driver (docs/c-api.md §14): streams any family through
 * its ordinary offline run path. Audio is kept in a window; at every step
 * boundary of the stream's clock (absolute sample positions, so the
 * outcome does not depend on how the caller slices its feeds) the window is
 * decoded again and the composed hypothesis (frozen text + window text)
 * goes through the commit policy. Once the window is longer than `soft`,
 * its start is trimmed at the quietest point of its older part: that part
 * is decoded alone, its text joins the frozen text and its audio is
 * dropped, so the cost of one decode and the audio held stay bounded
 * however long the stream runs (its text and rows are kept whole). A
 * family with native streaming overrides all of this through its stream_*
 * hooks (core/family.h). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "util/log.h"

/* Cadence and window bounds (ms). The hard bound also stays under 80 % of
 * a capped family's input limit. */
#define STEP_MS     1000
#define SOFT_MS     10000
#define HARD_MS     20000
#define MIN_KEEP_MS 1000 /* audio kept behind a cut: the new window starts with context */
#define CUT_SPAN_MS 100  /* a cut sits in the quietest span this long */
#define MAX_OVERLAP 4    /* words a new window may repeat from the frozen text */

void tr_stream_window_clear(tr_stream_window *w) {
    w->n = 0;
    w->win_start = w->decoded_to = 0;
    tr_strbuf_clear(&w->frozen);
    tr_strbuf_clear(&w->composed);
    tr_result_clear(&w->hyp);
    tr_result_clear(&w->cut);
    w->frozen_segs = w->frozen_words = w->frozen_toks = 0;
    w->frozen_mark = w->rows_mark = 0;
    w->n_decodes = w->n_trims = w->n_forced = 0;
    w->gated = w->speech_live = false;
}

void tr_stream_window_free(tr_stream_window *w) {
    free(w->pcm);
    w->pcm = NULL;
    w->n = w->cap = 0;
    tr_strbuf_free(&w->frozen);
    tr_strbuf_free(&w->composed);
    tr_result_free(&w->hyp);
    tr_result_free(&w->cut);
}

/* ---- words: whitespace-separated runs, compared loosely ---- */

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Start of the next word at or after p ("" at the end). */
static const char *skip_space(const char *p) {
    while (*p && is_space(*p)) p++;
    return p;
}

static const char *word_end(const char *p) {
    while (*p && !is_space(*p)) p++;
    return p;
}

static int count_words(const char *p) {
    int n = 0;
    for (p = skip_space(p); *p; p = skip_space(word_end(p))) n++;
    return n;
}

/* The start of word k (0-based) of p, or the end of p. */
static const char *nth_word(const char *p, int k) {
    p = skip_space(p);
    for (int i = 0; i < k && *p; i++) p = skip_space(word_end(p));
    return p;
}

/* Two words equal up to ASCII case and leading / trailing punctuation. */
static bool same_word(const char *a, const char *ae, const char *b, const char *be) {
    while (a < ae && ispunct((unsigned char)*a)) a++;
    while (ae > a && ispunct((unsigned char)ae[-1])) ae--;
    while (b < be && ispunct((unsigned char)*b)) b++;
    while (be > b && ispunct((unsigned char)be[-1])) be--;
    if (ae - a != be - b || a == ae) return false;
    for (; a < ae; a++, b++) {
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
    }
    return true;
}

/* How many leading words of hyp repeat the last words of frozen (a word cut
 * in two by a trim is heard on both sides). */
static int overlap_words(const char *frozen, const char *hyp) {
    int nf = count_words(frozen), nh = count_words(hyp);
    for (int k = MAX_OVERLAP; k >= 1; k--) {
        if (k > nf || k > nh) continue;
        const char *f = nth_word(frozen, nf - k), *h = skip_space(hyp);
        bool all = true;
        for (int i = 0; i < k && all; i++) {
            const char *fe = word_end(f), *he = word_end(h);
            all = same_word(f, fe, h, he);
            f = skip_space(fe);
            h = skip_space(he);
        }
        if (all) return k;
    }
    return 0;
}

/* Whether a text boundary between a and b needs a space: not when either
 * side already has one, nor between two characters of scripts written
 * without spaces (CJK, kana: first byte 0xE3..0xE9 of a 3-byte sequence). */
static bool needs_space(const tr_strbuf *a, const char *b) {
    if (a->len == 0 || !*b) return false;
    char last = a->data[a->len - 1];
    if (is_space(last) || is_space(*b)) return false;
    unsigned char b0 = (unsigned char)*b;
    size_t i = a->len;
    while (i > 0 && ((unsigned char)a->data[i - 1] & 0xC0) == 0x80) i--;
    unsigned char a0 = i > 0 ? (unsigned char)a->data[i - 1] : 0;
    bool cjk_a = a0 >= 0xE3 && a0 <= 0xE9, cjk_b = b0 >= 0xE3 && b0 <= 0xE9;
    return !(cjk_a && cjk_b);
}

static void join(tr_strbuf *out, const char *text) {
    text = skip_space(text);
    if (!*text) return;
    if (needs_space(out, text)) tr_strbuf_append(out, " ", 1);
    size_t n = strlen(text);
    while (n > 0 && is_space(text[n - 1])) n--;
    tr_strbuf_append(out, text, n);
}

/* Where hyp goes on after the k committed words of tail (the window's
 * share of the committed text; its last word maybe cut short: partial):
 * the index of hyp's word after the one that repeats tail's last word,
 * with the word before it repeated too (where tail has two), nearest to k.
 * Counting alone (index k) goes wrong when the window hears a word more or
 * fewer at its start than the windows that committed the text did (a first
 * word that short early windows missed): the hypothesis then continued one
 * word early and repeated a committed word ("fifty nine nine dollars").
 * -1 when hyp repeats none of it within ALIGN_SHIFT words of k. */
#define ALIGN_SHIFT 3
static int align_after(const char *tail, int k, bool partial, const char *hyp) {
    const int nh = count_words(hyp), m = k < 2 ? k : 2;
    if (m == 0) return -1;
    for (int d = 0; d <= ALIGN_SHIFT; d++) {
        for (int side = 0; side < (d > 0 ? 2 : 1); side++) {
            const int j = side ? k - d : k + d;
            if (j - m < 0 || j > nh) continue;
            bool ok = true;
            for (int i = 0; i < m && ok; i++) {
                const char *t = nth_word(tail, k - m + i), *te = word_end(t);
                const char *h = nth_word(hyp, j - m + i), *he = word_end(h);
                if (i == m - 1 && partial) /* a cut word: the hypothesis's may go on */
                    ok = he - h >= te - t && memcmp(h, t, (size_t)(te - t)) == 0;
                else
                    ok = same_word(t, te, h, he);
            }
            if (ok) return j;
        }
    }
    return -1;
}

/* out = frozen + window hypothesis, anchored to the committed text: when
 * the committed text reaches into the window and the new hypothesis reads
 * its words differently, the committed words stand and the hypothesis
 * continues after as many words (a partly committed word is completed
 * from the hypothesis when it still starts the same way). Committed text
 * then stays a prefix of the hypothesis, so commits never stall on a
 * window that re-reads its first words. */
static void compose(tr_strbuf *out, const char *frozen, const char *hyp, const char *committed,
                    size_t committed_len) {
    tr_strbuf_clear(out);
    tr_strbuf_appends(out, frozen);
    hyp = nth_word(hyp, overlap_words(frozen, hyp));
    join(out, hyp);
    if (out->oom || committed_len == 0) return;
    const char *text = tr_strbuf_cstr(out);
    if (out->len >= committed_len && memcmp(text, committed, committed_len) == 0) return;
    size_t nf = strlen(frozen);
    if (committed_len < nf || memcmp(committed, frozen, nf) != 0) return; /* not ours to fix */
    const char *tail = committed + nf; /* committed words inside the window */
    int k = count_words(tail);
    bool partial = committed_len > 0 && !is_space(committed[committed_len - 1]);
    const char *last = k > 0 ? nth_word(tail, k - 1) : tail;
    tr_strbuf repaired;
    tr_strbuf_init(&repaired);
    tr_strbuf_append(&repaired, committed, committed_len);
    const int at = align_after(tail, k, partial, hyp);
    const char *h = nth_word(hyp, at >= 0 ? (partial ? at - 1 : at) : (partial ? k - 1 : k));
    if (partial && *h) {
        /* Complete the committed word from the hypothesis when it extends it. */
        const char *he = word_end(h);
        size_t lw = (size_t)(committed + committed_len - last);
        if ((size_t)(he - h) > lw && memcmp(h, last, lw) == 0) {
            tr_strbuf_append(&repaired, h + lw, (size_t)(he - h) - lw);
        }
        h = skip_space(he);
    }
    join(&repaired, h);
    if (repaired.oom) {
        out->oom = true;
    } else {
        tr_strbuf_clear(out);
        tr_strbuf_append(out, repaired.data, repaired.len);
    }
    tr_strbuf_free(&repaired);
}

/* ---- decoding ---- */

static bool abort_requested(const tr_stream_ctx *ctx) {
    return ctx->abort_cb && ctx->abort_cb(ctx->abort_user_data);
}

/* One offline run of pcm[0..n) into out. OUTPUT_TRUNCATED is not an error
 * in a stream: it only sets ctx->truncated (docs/c-api.md §12). */
static transcribe_status decode(struct transcribe_session *s, tr_stream_ctx *ctx, const float *pcm,
                                int64_t n, tr_result *out) {
    tr_result_clear(out);
    tr_run_ctx rc;
    memset(&rc, 0, sizeof rc);
    rc.params = ctx->params;
    rc.pool = ctx->pool;
    rc.abort_cb = ctx->abort_cb;
    rc.abort_user_data = ctx->abort_user_data;
    rc.result = out;
    tr_pool_take_failures(s->pool);
    transcribe_status st = s->model->family->run(s->head.fsession, pcm, (int)n, &rc);
    st = tr_session_kernel_status(s, st, "stream (window decode)");
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
        ctx->truncated = true;
        st = TRANSCRIBE_OK;
    }
    if (st != TRANSCRIBE_OK) return st;
    if (!out->has_full_text) tr_result_build_full_text(out);
    if (out->oom) return TRANSCRIBE_ERR_OOM;
    s->stream.win.n_decodes++;
    return TRANSCRIBE_OK;
}

/* Appends h's segment, word and token rows to r, moved off_ms on. */
static void append_rows(tr_result *r, const tr_result *h, int64_t off) {
    for (int i = 0; i < h->n_segs; i++) {
        const tr_result_segment *sg = &h->segs[i];
        int seg = tr_result_add_segment(r, sg->t0_ms + off, sg->t1_ms + off,
                                        tr_result_str(h, sg->text_off));
        if (seg < 0) break;
        int cur_src = -1, cur = -1;
        for (int t = sg->first_token; t < sg->first_token + sg->n_tokens && t < h->n_toks; t++) {
            const tr_result_token *tk = &h->toks[t];
            if (tk->word_index >= 0 && tk->word_index != cur_src && tk->word_index < h->n_words) {
                const tr_result_word *wd = &h->words[tk->word_index];
                cur_src = tk->word_index;
                cur = tr_result_add_word(r, wd->t0_ms + off, wd->t1_ms + off, seg,
                                         tr_result_str(h, wd->text_off));
            }
            tr_result_add_token(r, tk->id, tk->p, tk->t0_ms + off, tk->t1_ms + off, seg,
                                tk->word_index >= 0 ? cur : -1, tr_result_str(h, tk->text_off));
        }
        if (sg->n_tokens == 0) { /* words without token rows */
            for (int k = sg->first_word; k < sg->first_word + sg->n_words && k < h->n_words; k++) {
                const tr_result_word *wd = &h->words[k];
                tr_result_add_word(r, wd->t0_ms + off, wd->t1_ms + off, seg,
                                   tr_result_str(h, wd->text_off));
            }
        }
    }
}

/* The session's result back to the rows of the frozen text (the rest of
 * it, text and language included, is re-set by whoever calls this). */
static void keep_frozen_rows(tr_result *r, tr_stream_window *w) {
    if (w->frozen_segs > r->n_segs || w->frozen_words > r->n_words || w->frozen_toks > r->n_toks ||
        w->frozen_mark > r->arena_len) {
        w->frozen_segs = w->frozen_words = w->frozen_toks = 0; /* the result was emptied */
        w->frozen_mark = 0;
    }
    r->status = TRANSCRIBE_OK;
    r->oom = false;
    r->n_segs = w->frozen_segs;
    r->n_words = w->frozen_words;
    r->n_toks = w->frozen_toks;
    r->n_spk = r->n_pieces = 0;
    r->chunked = false;
    tr_result_arena_rewind(r, w->frozen_mark);
    r->has_full_text = r->has_raw_text = r->has_language = false;
    r->has_emotion = r->has_event = false;
    r->ts_kind = TRANSCRIBE_TIMESTAMPS_NONE;
}

/* The rows now in the session's result become frozen: later publishes keep
 * them. */
static void freeze_rows(tr_stream_window *w, const tr_result *r, uint64_t mark) {
    w->frozen_segs = r->n_segs;
    w->frozen_words = r->n_words;
    w->frozen_toks = r->n_toks;
    w->frozen_mark = mark;
}

/* The session's result: the composed text, with the rows of the frozen
 * text (the decodes of trimmed parts and committed regions, kept as they
 * were frozen, at the result's front) and those of the window decode moved
 * onto the stream's clock, so a stream's result has every row, as a
 * whole-file run's does (subtitles of a stream cover all of it). Only the
 * window's rows are rewritten: a publish costs the same however long the
 * stream; the rows grow with the stream, as its text does. */
static transcribe_status publish(struct transcribe_session *s, const char *text,
                                 int64_t hyp_start) {
    tr_stream_window *w = &s->stream.win;
    const tr_result *h = &w->hyp;
    tr_result *r = &s->results[0];
    float mel = r->mel_ms + h->mel_ms, enc = r->encode_ms + h->encode_ms,
          dec = r->decode_ms + h->decode_ms;
    keep_frozen_rows(r, w);
    append_rows(r, h, hyp_start * 1000 / w->rate);
    w->rows_mark = tr_result_arena_mark(r);
    tr_result_set_full_text(r, text);
    if (h->has_language) tr_result_set_language(r, tr_result_language(h));
    if (h->has_emotion) tr_result_set_emotion(r, tr_result_emotion(h));
    if (h->has_event) tr_result_set_audio_event(r, tr_result_audio_event(h));
    tr_result_set_timestamp_kind(r, h->ts_kind);
    r->mel_ms = mel;
    r->encode_ms = enc;
    r->decode_ms = dec;
    return r->oom ? TRANSCRIBE_ERR_OOM : TRANSCRIBE_OK;
}

/* Decodes the window, composes the stream's hypothesis and publishes it. */
static transcribe_status decode_window(struct transcribe_session *s, tr_stream_ctx *ctx) {
    tr_stream_window *w = &s->stream.win;
    transcribe_status st = decode(s, ctx, w->pcm, w->n, &w->hyp);
    if (st != TRANSCRIBE_OK) return st;
    w->decoded_to = w->win_start + w->n;
    const tr_strbuf *c = &s->stream.committed;
    compose(&w->composed, tr_strbuf_cstr(&w->frozen), tr_result_full_text(&w->hyp),
            tr_strbuf_cstr(c), c->len);
    if (w->composed.oom) return TRANSCRIBE_ERR_OOM;
    return publish(s, tr_strbuf_cstr(&w->composed), w->win_start);
}

/* ---- trimming ---- */

/* The quietest CUT_SPAN_MS of pcm[lo, hi) (a later one among near-equals:
 * the more audio a cut drops, the longer until the next), as the sample at
 * its middle. Energy is summed over 10 ms frames. */
static int64_t quietest_point(const float *pcm, int64_t lo, int64_t hi, int rate) {
    int64_t hop = rate / 100, span = CUT_SPAN_MS / 10;
    int64_t n_frames = (hi - lo) / hop;
    if (n_frames < span) return -1;
    double *e = malloc((size_t)n_frames * sizeof *e);
    if (!e) return -1;
    for (int64_t f = 0; f < n_frames; f++) {
        double acc = 0;
        const float *x = pcm + lo + f * hop;
        for (int64_t i = 0; i < hop; i++) acc += (double)x[i] * x[i];
        e[f] = acc;
    }
    double run = 0, best = INFINITY;
    for (int64_t f = 0; f < span; f++) run += e[f];
    double *sums = e; /* sums[f] = energy of frames f..f+span-1, in place */
    int64_t n_sums = n_frames - span + 1;
    for (int64_t f = 0; f < n_sums; f++) {
        double cur = run;
        if (f + span < n_frames) run += e[f + span] - e[f];
        sums[f] = cur;
        if (cur < best) best = cur;
    }
    int64_t pick = 0;
    for (int64_t f = 0; f < n_sums; f++) {
        if (sums[f] <= best * 1.5 + 1e-9) pick = f;
    }
    free(e);
    return lo + pick * hop + span * hop / 2;
}

/* Whether one of a and b is a prefix of the other. */
static bool prefix_consistent(const char *a, size_t na, const char *b, size_t nb) {
    size_t n = na < nb ? na : nb;
    return memcmp(a, b, n) == 0;
}

/* When the window has grown past soft: decode its older part up to a quiet
 * point, append that text to the frozen text and drop the audio. The cut is
 * taken only where its text agrees with what is committed (one is a prefix
 * of the other), except past `hard`, where it is forced and the frozen text
 * is anchored to the committed text as compose() does. */
static transcribe_status maybe_trim(struct transcribe_session *s, tr_stream_ctx *ctx) {
    tr_stream_window *w = &s->stream.win;
    if (w->n < w->soft) return TRANSCRIBE_OK;
    int64_t keep = (int64_t)MIN_KEEP_MS * w->rate / 1000;
    int64_t lo = w->n / 4, hi = w->n - keep;
    int64_t cut = quietest_point(w->pcm, lo, hi, w->rate);
    if (cut <= 0) return TRANSCRIBE_OK;
    transcribe_status st = decode(s, ctx, w->pcm, cut, &w->cut);
    if (st != TRANSCRIBE_OK) return st;
    const tr_strbuf *c = &s->stream.committed;
    tr_strbuf next;
    tr_strbuf_init(&next);
    tr_strbuf_appends(&next, tr_strbuf_cstr(&w->frozen));
    join(&next, nth_word(tr_result_full_text(&w->cut),
                         overlap_words(tr_strbuf_cstr(&w->frozen), tr_result_full_text(&w->cut))));
    bool forced = w->n >= w->hard;
    bool ok = prefix_consistent(tr_strbuf_cstr(&next), next.len, tr_strbuf_cstr(c), c->len);
    if (!ok && forced) {
        /* The committed text wins. When it holds more words past the frozen
         * text than the trimmed part has, those words are that part's
         * (the rest lie in the new window, where compose() aligns them);
         * otherwise the trimmed part's text continues the committed text. */
        const char *cut_text =
            nth_word(tr_result_full_text(&w->cut),
                     overlap_words(tr_strbuf_cstr(&w->frozen), tr_result_full_text(&w->cut)));
        size_t nf = w->frozen.len;
        int p = count_words(cut_text);
        const char *tail = c->len > nf ? tr_strbuf_cstr(c) + nf : "";
        if (c->len > nf && count_words(tail) > p) {
            const char *end = nth_word(tail, p);
            while (end > tail && is_space(end[-1])) end--;
            tr_strbuf_clear(&next);
            tr_strbuf_append(&next, tr_strbuf_cstr(c), (size_t)(end - tr_strbuf_cstr(c)));
        } else {
            compose(&next, tr_strbuf_cstr(&w->frozen), tr_result_full_text(&w->cut),
                    tr_strbuf_cstr(c), c->len);
        }
        ok = true;
        w->n_forced++;
    }
    if (next.oom) {
        tr_strbuf_free(&next);
        return TRANSCRIBE_ERR_OOM;
    }
    if (ok) {
        /* the trimmed part's rows join the frozen rows (the window's rows
         * follow at the next publish; the text stays until then) */
        tr_result *r = &s->results[0];
        tr_strbuf text;
        tr_strbuf_init(&text);
        tr_strbuf_appends(&text, tr_result_full_text(r));
        keep_frozen_rows(r, w);
        append_rows(r, &w->cut, w->win_start * 1000 / w->rate);
        freeze_rows(w, r, tr_result_arena_mark(r));
        tr_result_set_full_text(r, tr_strbuf_cstr(&text));
        bool oom = text.oom || r->oom;
        tr_strbuf_free(&text);
        if (oom) {
            tr_strbuf_free(&next);
            return TRANSCRIBE_ERR_OOM;
        }
        tr_strbuf_clear(&w->frozen);
        tr_strbuf_append(&w->frozen, next.data ? next.data : "", next.len);
        memmove(w->pcm, w->pcm + cut, (size_t)(w->n - cut) * sizeof *w->pcm);
        w->n -= cut;
        w->win_start += cut;
        w->n_trims++;
        TR_DEBUG("stream: window trimmed at %.2f s%s (%.2f s left)", (double)w->win_start / w->rate,
                 forced ? " (forced)" : "", (double)w->n / w->rate);
    }
    tr_strbuf_free(&next);
    return w->frozen.oom ? TRANSCRIBE_ERR_OOM : TRANSCRIBE_OK;
}

/* ---- the driver ---- */

static void report(const tr_stream_window *w, int64_t received, tr_stream_ctx *ctx) {
    ctx->audio_committed_ms = w->win_start * 1000 / w->rate;
    ctx->buffered_ms =
        (received - (w->decoded_to > w->win_start ? w->decoded_to : w->win_start)) * 1000 / w->rate;
    if (ctx->buffered_ms < 0) ctx->buffered_ms = 0;
}

transcribe_status tr_stream_window_begin(struct transcribe_session *s, tr_stream_ctx *ctx) {
    tr_stream_window *w = &s->stream.win;
    tr_stream_window_clear(w);
    w->rate =
        s->model->desc.caps.native_sample_rate > 0 ? s->model->desc.caps.native_sample_rate : 16000;
    int64_t hard_ms = HARD_MS, soft_ms = SOFT_MS, step_ms = STEP_MS;
    struct transcribe_session_limits lim;
    tr_session_limits(s, &lim);
    if (lim.effective_max_audio_ms > 0 && lim.effective_max_audio_ms * 4 / 5 < hard_ms) {
        hard_ms = lim.effective_max_audio_ms * 4 / 5;
        if (soft_ms > hard_ms / 2) soft_ms = hard_ms / 2;
        if (step_ms > soft_ms / 2) step_ms = soft_ms / 2;
    }
    if (step_ms < 100) {
        TR_ERROR("transcribe_stream_begin: the model's input limit (%lld ms) is too short to "
                 "stream through a window",
                 (long long)lim.effective_max_audio_ms);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    w->step = step_ms * w->rate / 1000;
    w->soft = soft_ms * w->rate / 1000;
    w->hard = hard_ms * w->rate / 1000;
    int64_t cap = w->hard + w->step;
    if (w->cap < cap) {
        float *p = realloc(w->pcm, (size_t)cap * sizeof *p);
        if (!p) return TRANSCRIBE_ERR_OOM;
        w->pcm = p;
        w->cap = cap;
    }
    if (ctx->ext) {
        TR_WARN("transcribe_stream_begin: the stream extension is not used: this %s model streams "
                "through the generic window driver",
                s->model->arch);
    }
    TR_DEBUG("stream: generic window driver (step %lld ms, window %lld..%lld ms)",
             (long long)step_ms, (long long)soft_ms, (long long)hard_ms);
    report(w, 0, ctx);
    return TRANSCRIBE_OK;
}

transcribe_status tr_stream_window_feed(struct transcribe_session *s, const float *pcm, int n,
                                        tr_stream_ctx *ctx) {
    tr_stream_window *w = &s->stream.win;
    /* Audio enters up to each step boundary of the stream's clock; a
     * boundary reached decodes the window (trimmed first when long). */
    int64_t pos = 0;
    while (pos < n) {
        int64_t end = w->win_start + w->n; /* samples received so far */
        int64_t to_boundary = w->step - end % w->step;
        int64_t take = n - pos < to_boundary ? n - pos : to_boundary;
        if (w->n + take > w->cap) return TRANSCRIBE_ERR_OOM; /* a trim could not be made */
        memcpy(w->pcm + w->n, pcm + pos, (size_t)take * sizeof *pcm);
        w->n += take;
        pos += take;
        if ((w->win_start + w->n) % w->step != 0) break; /* fed everything; no boundary yet */
        if (w->gated && !w->speech_live) continue;       /* no speech: nothing to decode */
        if (abort_requested(ctx)) return TRANSCRIBE_ERR_ABORTED;
        transcribe_status st = maybe_trim(s, ctx);
        if (st == TRANSCRIBE_OK) st = decode_window(s, ctx);
        if (st != TRANSCRIBE_OK) return st;
        tr_stream_commit(s, tr_result_full_text(&s->results[0]), -1);
    }
    report(w, w->win_start + w->n, ctx);
    return TRANSCRIBE_OK;
}

/* Drops the window's audio before absolute sample `pos` (the stream's
 * clock moves on). */
static void drop_audio(tr_stream_window *w, int64_t pos) {
    int64_t cut = pos - w->win_start;
    if (cut <= 0) return;
    if (cut > w->n) cut = w->n;
    memmove(w->pcm, w->pcm + cut, (size_t)(w->n - cut) * sizeof *w->pcm);
    w->n -= cut;
    w->win_start += cut;
    if (w->decoded_to < w->win_start) w->decoded_to = w->win_start;
}

static void forget_agreement(tr_stream_state *st) {
    for (int i = 0; i < st->n_hist; i++) free(st->hist[i]);
    st->n_hist = 0;
}

transcribe_status tr_stream_window_commit_region(struct transcribe_session *s, tr_stream_ctx *ctx,
                                                 int64_t start, int64_t end) {
    tr_stream_state *st = &s->stream;
    tr_stream_window *w = &st->win;
    int64_t a = start - w->win_start, b = end - w->win_start;
    if (a < 0) a = 0;
    if (b > w->n) b = w->n;
    if (b > a) {
        if (abort_requested(ctx)) return TRANSCRIBE_ERR_ABORTED;
        transcribe_status rc = decode(s, ctx, w->pcm + a, b - a, &w->hyp);
        if (rc != TRANSCRIBE_OK) return rc;
        compose(&w->composed, tr_strbuf_cstr(&w->frozen), tr_result_full_text(&w->hyp),
                tr_strbuf_cstr(&st->committed), st->committed.len);
        if (w->composed.oom) return TRANSCRIBE_ERR_OOM;
        /* The region's text is final: it joins the frozen text and is
         * committed whole (compose keeps the committed text a prefix). */
        tr_strbuf_clear(&w->frozen);
        tr_strbuf_append(&w->frozen, w->composed.data ? w->composed.data : "", w->composed.len);
        size_t have = st->committed.len;
        if (w->frozen.len > have &&
            memcmp(w->frozen.data, tr_strbuf_cstr(&st->committed), have) == 0)
            tr_strbuf_append(&st->committed, w->frozen.data + have, w->frozen.len - have);
        transcribe_status pst = publish(s, tr_strbuf_cstr(&w->frozen), w->win_start + a);
        if (pst != TRANSCRIBE_OK) return pst;
        freeze_rows(w, &s->results[0], w->rows_mark); /* the region's rows are final too */
        if (w->frozen.oom || st->committed.oom) return TRANSCRIBE_ERR_OOM;
        forget_agreement(st); /* earlier hypotheses read audio that is gone now */
    }
    drop_audio(w, w->win_start + (b > 0 ? b : 0));
    report(w, w->win_start + w->n, ctx);
    return TRANSCRIBE_OK;
}

transcribe_status tr_stream_window_drop_silence(struct transcribe_session *s, tr_stream_ctx *ctx,
                                                int64_t keep_from) {
    tr_stream_state *st = &s->stream;
    tr_stream_window *w = &st->win;
    drop_audio(w, keep_from);
    /* Text read while the detector heard speech that did not last (no
     * region came of it) is withdrawn; committed text always stands. */
    if (st->committed.len > w->frozen.len) {
        tr_strbuf_clear(&w->frozen);
        tr_strbuf_append(&w->frozen, st->committed.data, st->committed.len);
    }
    const tr_result *r = &s->results[0];
    if (r->has_full_text && strcmp(tr_result_full_text(r), tr_strbuf_cstr(&w->frozen)) != 0) {
        tr_result_clear(&w->hyp);
        transcribe_status pst = publish(s, tr_strbuf_cstr(&w->frozen), w->win_start);
        if (pst != TRANSCRIBE_OK) return pst;
    }
    report(w, w->win_start + w->n, ctx);
    return w->frozen.oom ? TRANSCRIBE_ERR_OOM : TRANSCRIBE_OK;
}

transcribe_status tr_stream_window_finalize(struct transcribe_session *s, tr_stream_ctx *ctx) {
    tr_stream_window *w = &s->stream.win;
    if (w->n > 0 && w->decoded_to != w->win_start + w->n) {
        if (abort_requested(ctx)) return TRANSCRIBE_ERR_ABORTED;
        transcribe_status st = decode_window(s, ctx);
        if (st != TRANSCRIBE_OK) return st;
    } else if (w->decoded_to == 0 && !s->results[0].has_full_text) {
        tr_result_set_full_text(&s->results[0], tr_strbuf_cstr(&w->frozen));
    }
    report(w, w->win_start + w->n, ctx);
    ctx->audio_committed_ms = (w->win_start + w->n) * 1000 / w->rate;
    ctx->buffered_ms = 0;
    TR_DEBUG("stream: %d window decodes, %d trims (%d forced)", w->n_decodes, w->n_trims,
             w->n_forced);
    return TRANSCRIBE_OK;
}
