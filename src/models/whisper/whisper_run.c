/* The Whisper run (docs/formats/whisper.md §8–§9): log-mel, 30 s windows with
 * seek, language detection, prompts and previous-context conditioning,
 * temperature fallback with the no-speech gate, segment retrieval, and the
 * result rows. Abort is polled before every window and after every decoder
 * step; on abort the windows completed so far stay in the result. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models/whisper/whisper_decode.h"
#include "nn/spec_draft.h"
#include "core/abi.h"
#include "text/tokenizer.h"
#include "audio/audio.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timer.h"
#include "util/vec.h"

#define WH_MAX_GEN    256
#define WH_SPEC_MAX   15    /* drafts per verify at most (as nn/greedy.h) */
#define WH_TEXT_BOUND 50257 /* docs/formats/whisper.md §2.3: text ids are below it */

/* ---- small growable int buffer ---- */
typedef struct ivec {
    int32_t *v;
    float *p; /* optional per-id probability (text rows) */
    int n, cap;
    bool oom;
} ivec;

static void iv_push(ivec *a, int32_t x, float p) {
    if (a->oom) return;
    if (a->n == a->cap) {
        /* both arrays share one capacity: grow p to the capacity v got */
        int vcap = a->cap, pcap = a->cap;
        int32_t *nv = tr_grow_int(a->v, &vcap, a->n + 1, sizeof *nv, 256);
        if (nv) a->v = nv;
        float *np = nv ? tr_grow_int(a->p, &pcap, vcap, sizeof *np, 0) : NULL;
        if (!np) {
            a->oom = true;
            return;
        }
        a->p = np;
        a->cap = vcap;
    }
    a->v[a->n] = x;
    a->p[a->n] = p;
    a->n++;
}

static void iv_free(ivec *a) {
    free(a->v);
    free(a->p);
    memset(a, 0, sizeof *a);
}

/* ---- validation (docs/formats/whisper.md §10.1 step 10; §10.4) ---- */

transcribe_status tr_wh_validate_run(const wh_model *m, const struct transcribe_run_params *p) {
    (void)m;
    const struct transcribe_ext *e = p->family;
    if (e) {
        transcribe_status st = tr_ext_check(e, TRANSCRIBE_EXT_KIND_WHISPER_RUN,
                                            sizeof(struct transcribe_whisper_run_ext));
        if (st == TRANSCRIBE_ERR_INVALID_ARG)
            TR_ERROR("whisper: run extension kind 0x%08x is not WHRN", (unsigned)e->kind);
        else if (st != TRANSCRIBE_OK && e->size >= sizeof(struct transcribe_ext))
            TR_ERROR("whisper: run extension is smaller than transcribe_whisper_run_ext");
        if (st != TRANSCRIBE_OK) return st;
        const struct transcribe_whisper_run_ext *x = (const void *)e;
        if ((int)x->prompt_condition != TRANSCRIBE_WHISPER_PROMPT_FIRST_SEGMENT &&
            (int)x->prompt_condition != TRANSCRIBE_WHISPER_PROMPT_ALL_SEGMENTS) {
            TR_ERROR("whisper: prompt_condition %d is out of range", (int)x->prompt_condition);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        if (x->prompt_condition == TRANSCRIBE_WHISPER_PROMPT_ALL_SEGMENTS &&
            !x->condition_on_prev_tokens) {
            TR_ERROR("whisper: ALL_SEGMENTS prompting requires condition_on_prev_tokens");
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        if (!isfinite(x->temperature) || x->temperature < 0.0f || isnan(x->temperature_inc)) {
            TR_ERROR("whisper: temperature must be finite and >= 0");
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
    }
    return TRANSCRIBE_OK;
}

/* ---- text helpers ---- */

static bool is_text_id(const wh_model *m, int id) {
    return id >= 0 && id < WH_TEXT_BOUND && id < m->ts_begin && id != m->eot &&
           id < m->n_tok_pieces;
}

static void append_token_bytes(const wh_model *m, tr_strbuf *b, int id) {
    char buf[256];
    size_t n = tr_tokenizer_token_bytes(m->tok, id, buf, sizeof buf);
    if (n <= sizeof buf) {
        tr_strbuf_append(b, buf, n);
        return;
    }
    char *big = malloc(n);
    if (!big) {
        b->oom = true;
        return;
    }
    tr_tokenizer_token_bytes(m->tok, id, big, n);
    tr_strbuf_append(b, big, n);
    free(big);
}

static bool is_ascii_ws(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Decodes the text ids of ids[0..n) (docs/formats/whisper.md §4.4) into a malloc'ed, trimmed, valid
 * UTF-8 string; NULL on OOM. */
static char *decode_text(const wh_model *m, const int32_t *ids, int n) {
    tr_strbuf b;
    tr_strbuf_init(&b);
    for (int i = 0; i < n; i++)
        if (is_text_id(m, ids[i])) append_token_bytes(m, &b, ids[i]);
    if (b.oom) {
        tr_strbuf_free(&b);
        return NULL;
    }
    const char *s = tr_strbuf_cstr(&b);
    size_t a = 0, e = b.len;
    while (a < e && is_ascii_ws(s[a])) a++;
    while (e > a && is_ascii_ws(s[e - 1])) e--;
    char *out = tr_utf8_sanitize(s + a, e - a);
    tr_strbuf_free(&b);
    return out;
}

/* ---- run state ---- */

typedef struct wh_runstate {
    wh_session *s;
    const wh_model *m;
    tr_run_ctx *ctx;
    wh_opts o;
    bool want_ts;
    bool want_words; /* WORD / TOKEN: estimated times (docs/formats/whisper.md §13) */
    int task_tok, lang_tok;
    int lang_idx; /* detected/hinted language index, -1 none yet */
    bool detect;
    float temps[64];
    int n_temps;
    int max_init_idx;
    wh_rng rng;
    int32_t *prompt;
    int n_prompt;
    int cap;
    ivec hist;     /* flattened history (docs/formats/whisper.md §8.3) */
    ivec all_text; /* accepted text ids of every window, with p */
    ivec raw;      /* every accepted id (raw text) */
    int32_t G[WH_MAX_GEN + 8];
    float Gp[WH_MAX_GEN + 8];
    wh_tsp Gts[WH_MAX_GEN + 8]; /* timestamp evidence per id of G (want_words) */
    int n_g;
    double dec_ms, enc_ms;
} wh_runstate;

/* The vocabulary terms as prompt text: trimmed of ASCII whitespace, empty
 * ones dropped, ", "-joined (malloc'ed; NULL on OOM or no term). */
static char *vocabulary_text(const wh_opts *o) {
    tr_strbuf b;
    tr_strbuf_init(&b);
    for (int i = 0; i < o->n_vocabulary; i++) {
        const char *a = o->vocabulary[i], *e = a + strlen(a);
        while (a < e && is_ascii_ws(*a)) a++;
        while (e > a && is_ascii_ws(e[-1])) e--;
        if (e == a) continue;
        if (b.len) tr_strbuf_appends(&b, ", ");
        tr_strbuf_append(&b, a, (size_t)(e - a));
    }
    char *out = !b.oom && b.len ? strdup(tr_strbuf_cstr(&b)) : NULL;
    tr_strbuf_free(&b);
    return out;
}

static transcribe_status build_prompt_text(wh_runstate *r, const char *t);

static transcribe_status build_prompt(wh_runstate *r) {
    const wh_model *m = r->m;
    const wh_opts *o = &r->o;
    int V = m->hp.n_vocab;
    r->cap = o->max_prev > 0 ? o->max_prev : m->hp.n_text_ctx / 2 - 1;
    if (o->prompt_tokens && o->n_prompt_tokens > 0) {
        if (o->n_prompt_tokens > (size_t)1 << 20) {
            TR_ERROR("whisper: prompt_tokens is too long");
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        if (m->prev_sot >= 0 && o->prompt_tokens[0] == m->prev_sot) {
            TR_ERROR("whisper: prompt_tokens must not start with <|startofprev|>");
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        r->prompt = malloc(o->n_prompt_tokens * sizeof(int32_t));
        if (!r->prompt) return TRANSCRIBE_ERR_OOM;
        for (size_t i = 0; i < o->n_prompt_tokens; i++) {
            if (o->prompt_tokens[i] < 0 || o->prompt_tokens[i] >= V) {
                TR_ERROR("whisper: prompt token %d is outside the vocabulary",
                         (int)o->prompt_tokens[i]);
                return TRANSCRIBE_ERR_INVALID_ARG;
            }
            r->prompt[i] = o->prompt_tokens[i];
        }
        r->n_prompt = (int)o->n_prompt_tokens;
    } else if (o->initial_prompt) {
        transcribe_status st = build_prompt_text(r, o->initial_prompt);
        if (st != TRANSCRIBE_OK) return st;
    } else if (o->n_vocabulary > 0) {
        char *t = vocabulary_text(o);
        transcribe_status st = t ? build_prompt_text(r, t) : TRANSCRIBE_OK;
        free(t);
        if (st != TRANSCRIBE_OK) return st;
    }
    if (r->n_prompt > r->cap) { /* keep the last cap ids */
        memmove(r->prompt, r->prompt + (r->n_prompt - r->cap), (size_t)r->cap * sizeof(int32_t));
        r->n_prompt = r->cap;
    }
    if ((r->n_prompt > 0 || o->cond_prev) && m->prev_sot < 0) {
        TR_ERROR("whisper: prompting needs <|startofprev|>, which this model lacks");
        return TRANSCRIBE_ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* The prompt ids of a text prompt (initial_prompt or the vocabulary). */
static transcribe_status build_prompt_text(wh_runstate *r, const char *t) {
    const wh_model *m = r->m;
    /* special-token literals with ids >= eos are rejected */
    for (const char *q = strstr(t, "<|"); q; q = strstr(q + 2, "<|")) {
        const char *e = strstr(q + 2, "|>");
        if (!e) break;
        size_t len = (size_t)(e + 2 - q);
        if (len < 128) {
            char lit[128];
            memcpy(lit, q, len);
            lit[len] = 0;
            int id = tr_tokenizer_find(m->tok, lit);
            if (id >= m->eot) {
                TR_ERROR("whisper: initial_prompt contains the special token %s", lit);
                return TRANSCRIBE_ERR_INVALID_ARG;
            }
        }
    }
    while (*t && is_ascii_ws(*t)) t++;
    size_t n = strlen(t);
    while (n > 0 && is_ascii_ws(t[n - 1])) n--;
    if (n > 0) {
        char *txt = malloc(n + 2);
        if (!txt) return TRANSCRIBE_ERR_OOM;
        txt[0] = ' ';
        memcpy(txt + 1, t, n);
        txt[n + 1] = 0;
        size_t nmax = n + 16;
        r->prompt = malloc(nmax * sizeof(int32_t));
        if (!r->prompt) {
            free(txt);
            return TRANSCRIBE_ERR_OOM;
        }
        int k = tr_tokenizer_encode(m->tok, txt, r->prompt, nmax);
        free(txt);
        if (k < 0) {
            TR_ERROR("whisper: initial_prompt could not be tokenized");
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        for (int i = 0; i < k; i++) {
            if (r->prompt[i] >= m->eot) {
                TR_ERROR("whisper: initial_prompt encodes to a special token");
                return TRANSCRIBE_ERR_INVALID_ARG;
            }
        }
        r->n_prompt = k;
    }
    return TRANSCRIBE_OK;
}

/* Appends a history slice with the docs/formats/whisper.md §8.3 rule (a slice of n > 2 ids whose
 * second-to-last id is a timestamp drops its last id). */
static void hist_add(wh_runstate *r, const int32_t *ids, int n) {
    if (n > 2 && ids[n - 2] >= r->m->ts_begin) n--;
    for (int i = 0; i < n; i++) iv_push(&r->hist, ids[i], 0.0f);
}

/* Builds the decoder prefix; returns its length, *sot_row the SOT index. */
static int build_prefix(wh_runstate *r, bool first_window, bool cond, int32_t *out, int max,
                        int *sot_row) {
    const wh_model *m = r->m;
    int n = 0;
#define PUSH(x)                                                                                    \
    do {                                                                                           \
        if (n < max) out[n] = (x);                                                                 \
        n++;                                                                                       \
    } while (0)
    if (cond && r->hist.n > 0) {
        PUSH(m->prev_sot);
        if (r->o.prompt_condition == TRANSCRIBE_WHISPER_PROMPT_ALL_SEGMENTS)
            for (int i = 0; i < r->n_prompt; i++) PUSH(r->prompt[i]);
        int k = r->hist.n < r->cap ? r->hist.n : r->cap;
        for (int i = r->hist.n - k; i < r->hist.n; i++) PUSH(r->hist.v[i]);
    } else if (r->n_prompt > 0 &&
               (first_window || r->o.prompt_condition == TRANSCRIBE_WHISPER_PROMPT_ALL_SEGMENTS)) {
        PUSH(m->prev_sot);
        for (int i = 0; i < r->n_prompt; i++) PUSH(r->prompt[i]);
    }
    *sot_row = n;
    PUSH(m->sot);
    if (m->multilingual) {
        PUSH(r->lang_tok);
        PUSH(r->task_tok);
    }
    if (!r->want_ts) PUSH(m->no_ts);
#undef PUSH
    return n;
}

/* ---- language detection (docs/formats/whisper.md §8.4) ---- */

static transcribe_status detect_language(wh_runstate *r) {
    wh_session *s = r->s;
    const wh_model *m = r->m;
    int32_t sot = m->sot;
    if (!tr_wh_step_logits(s, sot, 0, s->work)) return TRANSCRIBE_ERR_INVALID_ARG;
    int best = -1;
    float bv = -INFINITY;
    for (int i = 0; i < m->n_lang; i++) {
        int id = m->lang_tok[i];
        if (id < 0) continue;
        if (best < 0 || s->work[id] > bv) {
            best = i;
            bv = s->work[id];
        }
    }
    if (best < 0) {
        TR_ERROR("whisper: no language token can be resolved for detection");
        return TRANSCRIBE_ERR_GGUF;
    }
    /* Its probability among the language tokens (softmax over their logits). */
    double sum = 0.0;
    for (int i = 0; i < m->n_lang; i++) {
        if (m->lang_tok[i] >= 0) sum += exp((double)s->work[m->lang_tok[i]] - (double)bv);
    }
    r->ctx->language_prob = (float)(1.0 / sum);
    r->lang_idx = best;
    r->lang_tok = m->lang_tok[best];
    TR_DEBUG("whisper: detected language '%s' (p = %.3f)", m->lang[best], 1.0 / sum);
    return TRANSCRIBE_OK;
}

/* ---- one temperature tier (docs/formats/whisper.md §8.6) ---- */

typedef struct tier_out {
    float avg_logprob, compression_ratio, temperature;
    bool aborted, eos;
} tier_out;

/* The greedy (T = 0) tier with speculative decoding: before each step, up
 * to k ids drafted by the n-gram lookup over G (nn/spec_draft.h) are fed
 * with the current token in one verify (tr_wh_verify_rows), and each row's
 * logits are processed and selected exactly as run_tier's loop does,
 * while the drafts agree with the selections. Every accepted row is an
 * iteration of that loop with the same checks in the same order (budget,
 * EOS, context, abort), so G, the log-probabilities and the outcome are
 * plain greedy's; only the number of decoder passes changes. A draft
 * wholly rejected pauses drafting for 1, 2, 4 .. 32 steps. Returns false
 * (the caller falls back to the plain loop) when the buffers cannot be
 * had. */
static bool run_tier_spec(wh_runstate *r, const float *prefix_logits, int n_prefix, int k,
                          tier_out *out) {
    wh_session *s = r->s;
    const wh_model *m = r->m;
    const int V = m->hp.n_vocab;
    if (k > WH_SPEC_MAX) k = WH_SPEC_MAX;
    float *lg = malloc(sizeof(float) * (size_t)(k + 1) * (size_t)V);
    if (!lg) return false;
    wh_proc pc = {.m = m, .want_ts = r->want_ts, .max_init_idx = r->max_init_idx};
    wh_tsp ts = {-1, 0.0f, 0.0f};
    wh_tsp *tsp = r->want_words ? &ts : NULL; /* the timestamp pass only when words are timed */
    double sum_lp = 0.0;
    int n_lp = 0;
    r->n_g = 0;
    out->aborted = false;
    out->eos = false;
    out->temperature = 0.0f;
    memcpy(s->work, prefix_logits, (size_t)V * sizeof(float));
    tr_wh_process_logits(&pc, s->work, r->G, 0);
    float lp, p;
    int tok = tr_wh_select_ts(s->work, V, m->ts_begin, 0.0f, &r->rng, &lp, &p, tsp);
    sum_lp += lp;
    n_lp++;
    int n_past = n_prefix, it = 0, k_now = k, pause = 0, pause_len = 0;
    int32_t rows[WH_SPEC_MAX + 1];
    int n_pass = 0, n_drafted = 0, n_accepted = 0;
    double t0 = tr_time_ms();
    bool done = false;
    while (!done && it < WH_MAX_GEN) {
        it++;
        if (tok == m->eot) {
            out->eos = true;
            break;
        }
        r->G[r->n_g] = tok;
        r->Gp[r->n_g] = p;
        r->Gts[r->n_g] = ts;
        r->n_g++;
        if (n_past + 1 > m->hp.n_text_ctx) break;
        /* drafts never past the budget or the context */
        int nd = 0, room = m->hp.n_text_ctx - n_past - 1;
        int kk = k_now < WH_MAX_GEN - it ? k_now : WH_MAX_GEN - it;
        if (kk > room) kk = room;
        rows[0] = tok;
        if (pause > 0)
            pause--;
        else if (kk > 0)
            nd = tr_spec_draft(r->G, r->n_g, kk, rows + 1);
        if (!tr_wh_verify_rows(s, rows, nd + 1, n_past, lg)) {
            free(lg);
            return false; /* nothing decoded yet at this position: the caller redoes the tier */
        }
        n_past++;
        n_pass++;
        n_drafted += nd;
        for (int i = 0; i <= nd; i++) {
            memcpy(s->work, lg + (size_t)i * V, (size_t)V * sizeof(float));
            tr_wh_process_logits(&pc, s->work, r->G, r->n_g);
            tok = tr_wh_select_ts(s->work, V, m->ts_begin, 0.0f, &r->rng, &lp, &p, tsp);
            sum_lp += lp;
            n_lp++;
            if (tr_run_should_abort(r->ctx)) {
                out->aborted = true;
                done = true;
                break;
            }
            if (i == nd) { /* every draft accepted */
                if (nd > 0) k_now = 2 * k_now < k ? 2 * k_now : k;
                break;
            }
            if (tok != rows[i + 1]) { /* rejected: the next step starts from tok */
                if (i == 0) {
                    pause_len = pause_len ? (2 * pause_len < 32 ? 2 * pause_len : 32) : 1;
                    pause = pause_len;
                } else {
                    pause_len = 0;
                }
                k_now = i + 1;
                break;
            }
            /* draft i accepted: the next iteration of the plain loop, which
             * fed it at n_past */
            if (it >= WH_MAX_GEN) {
                done = true;
                break;
            }
            it++;
            if (tok == m->eot) {
                out->eos = true;
                done = true;
                break;
            }
            r->G[r->n_g] = tok;
            r->Gp[r->n_g] = p;
            r->Gts[r->n_g] = ts;
            r->n_g++;
            n_accepted++;
            if (n_past + 1 > m->hp.n_text_ctx) {
                done = true;
                break;
            }
            n_past++;
        }
    }
    free(lg);
    TR_DEBUG("whisper: speculative tier: %d tokens in %d decoder passes, %d of %d drafts accepted",
             r->n_g, n_pass, n_accepted, n_drafted);
    r->dec_ms += tr_time_ms() - t0;
    out->avg_logprob = (float)(sum_lp / n_lp);
    r->G[r->n_g] = m->eot;
    out->compression_ratio = (float)tr_wh_compression_ratio(r->G, r->n_g + (out->eos ? 1 : 0));
    return !out->aborted;
}

static bool run_tier(wh_runstate *r, const float *prefix_logits, int n_prefix, float T,
                     tier_out *out) {
    wh_session *s = r->s;
    const wh_model *m = r->m;
    const int V = m->hp.n_vocab;
    const int k = tr_run_spec_k(r->ctx);
    /* speculative drafts: greedy tiers of single runs (a batch member's
     * decoder is the hub's) */
    if (T == 0.0f && k > 0 && !s->hub && run_tier_spec(r, prefix_logits, n_prefix, k, out))
        return !out->aborted;
    wh_proc pc = {.m = m, .want_ts = r->want_ts, .max_init_idx = r->max_init_idx};
    wh_tsp ts = {-1, 0.0f, 0.0f};
    wh_tsp *tsp = r->want_words ? &ts : NULL; /* the timestamp pass only when words are timed */
    double sum_lp = 0.0;
    int n_lp = 0;
    r->n_g = 0;
    out->aborted = false;
    out->eos = false;
    out->temperature = T;
    memcpy(s->work, prefix_logits, (size_t)V * sizeof(float));
    tr_wh_process_logits(&pc, s->work, r->G, 0);
    float lp, p;
    int tok = tr_wh_select_ts(s->work, V, m->ts_begin, T, &r->rng, &lp, &p, tsp);
    sum_lp += lp;
    n_lp++;
    int n_past = n_prefix;
    double t0 = tr_time_ms();
    for (int it = 0; it < WH_MAX_GEN; it++) {
        if (tok == m->eot) {
            out->eos = true;
            break;
        }
        r->G[r->n_g] = tok;
        r->Gp[r->n_g] = p;
        r->Gts[r->n_g] = ts;
        r->n_g++;
        if (n_past + 1 > m->hp.n_text_ctx) break;
        tr_wh_step_logits(s, tok, n_past, s->work);
        n_past++;
        tr_wh_process_logits(&pc, s->work, r->G, r->n_g);
        tok = tr_wh_select_ts(s->work, V, m->ts_begin, T, &r->rng, &lp, &p, tsp);
        sum_lp += lp;
        n_lp++;
        if (tr_run_should_abort(r->ctx)) {
            out->aborted = true;
            break;
        }
    }
    r->dec_ms += tr_time_ms() - t0;
    out->avg_logprob = (float)(sum_lp / n_lp);
    /* compression ratio over G (+ EOS when the tier ended on it) */
    r->G[r->n_g] = m->eot;
    out->compression_ratio = (float)tr_wh_compression_ratio(r->G, r->n_g + (out->eos ? 1 : 0));
    return !out->aborted;
}

/* Whether the fallback loop stops at a tier with result o (the no-speech
 * gate, or both quality thresholds met): docs/formats/whisper.md §8.7. */
static bool tier_stops(const wh_runstate *r, float ns_prob, const tier_out *o) {
    if (ns_prob > r->o.ns_thold && o->avg_logprob < r->o.lp_thold) return true;
    return o->compression_ratio <= r->o.cr_thold && o->avg_logprob >= r->o.lp_thold;
}

/* ---- fallback tiers side by side ----
 * After a failed greedy tier the remaining temperature tiers are independent
 * decodes of the same window from the same prefix. With a nondeterministic
 * sampler (seed 0: no run can be reproduced, upstream's included) they run
 * in lockstep, one decoder step for all live tiers (nn/encdec_decoder.h:
 * every weight read once per pass), each with its own cache (the prefix
 * rows copied), its own generator seeded from the run's, its own ids; the
 * acceptance loop then takes them in tier order exactly as it takes
 * sequential tiers. As soon as the first tiers in order have all ended and
 * one of them stops the loop, the later ones are dropped. A fixed seed
 * keeps the sequential tiers and their single generator (upstream's draws). */
#define WH_PAR_KV_BYTES ((size_t)64 << 20) /* extra caches the lockstep tiers may take */

typedef struct par_tier {
    tr_nn_kv kv;
    wh_rng rng;
    int32_t tok32;
    int tok, n_past, n_g, n_lp, it;
    double sum_lp;
    float p;
    wh_tsp ts;
    bool live, done;
    tier_out out;
    int32_t G[WH_MAX_GEN + 8];
    float Gp[WH_MAX_GEN + 8];
    wh_tsp Gts[WH_MAX_GEN + 8];
} par_tier;

typedef struct par_set {
    par_tier *t;
    int n, k0;
    bool tried;
} par_set;

static void par_free(par_set *ps) {
    for (int i = 0; i < ps->n; i++) tr_nn_kv_free(&ps->t[i].kv);
    free(ps->t);
    ps->t = NULL;
    ps->n = 0;
}

/* The tier's summary once it has ended (run_tier's). */
static void par_finish(const wh_model *m, par_tier *t, float T) {
    t->live = false;
    t->done = true;
    t->out.temperature = T;
    t->out.avg_logprob = (float)(t->sum_lp / t->n_lp);
    t->G[t->n_g] = m->eot;
    t->out.compression_ratio = (float)tr_wh_compression_ratio(t->G, t->n_g + (t->out.eos ? 1 : 0));
}

/* One selection for tier t from processed logits (run_tier's loop body
 * after the step). */
static void par_select(wh_runstate *r, const wh_proc *pc, par_tier *t, float T, float *work) {
    const wh_model *m = r->m;
    float lp;
    tr_wh_process_logits(pc, work, t->G, t->n_g);
    t->tok = tr_wh_select_ts(work, m->hp.n_vocab, m->ts_begin, T, &t->rng, &lp, &t->p,
                             r->want_words ? &t->ts : NULL);
    t->sum_lp += lp;
    t->n_lp++;
}

/* Tier t's turn at the top of run_tier's loop: false when it ends here. */
static bool par_advance(const wh_model *m, par_tier *t, float T) {
    if (t->it >= WH_MAX_GEN) {
        par_finish(m, t, T);
        return false;
    }
    t->it++;
    if (t->tok == m->eot) {
        t->out.eos = true;
        par_finish(m, t, T);
        return false;
    }
    t->G[t->n_g] = t->tok;
    t->Gp[t->n_g] = t->p;
    t->Gts[t->n_g] = t->ts;
    t->n_g++;
    if (t->n_past + 1 > m->hp.n_text_ctx) {
        par_finish(m, t, T);
        return false;
    }
    return true;
}

/* Tiers k0.. in lockstep into ps (ps->n 0: not taken; the caller runs them
 * one by one). false on OOM. */
static bool par_run(wh_runstate *r, const float *prefix_logits, int np, int k0, float ns_prob,
                    par_set *ps) {
    wh_session *s = r->s;
    const wh_model *m = r->m;
    const wh_hparams *hp = &m->hp;
    const size_t V = (size_t)hp->n_vocab, kv_bytes = tr_nn_kv_bytes(&s->kv);
    int n = r->n_temps - k0;
    if (s->hub || r->o.seed != 0 || n < 2) return true;
    if ((size_t)n * kv_bytes > WH_PAR_KV_BYTES) n = (int)(WH_PAR_KV_BYTES / kv_bytes);
    if (n < 2) return true;
    ps->t = calloc((size_t)n, sizeof *ps->t);
    float *logits = malloc((size_t)n * V * sizeof(float));
    tr_ed_seq *seqs = malloc((size_t)n * sizeof *seqs);
    int *idx = malloc((size_t)n * sizeof *idx);
    bool ok = ps->t && logits && seqs && idx;
    for (int i = 0; ok && i < n; i++) {
        par_tier *t = &ps->t[i];
        ok = tr_nn_kv_init(&t->kv, hp->n_dec_layers, hp->n_text_ctx, hp->n_head, hp->head_dim,
                           s->kv.f16);
        ps->n = i + 1;
        if (!ok) break;
        /* the prefix rows of every layer, as the shared prefix pass left them */
        tr_nn_kv_copy_prefix(&t->kv, &s->kv, np);
        tr_wh_rng_seed(&t->rng, (uint32_t)(tr_wh_rng_uniform(&r->rng) * 4294967296.0));
        t->ts = (wh_tsp){-1, 0.0f, 0.0f};
        t->n_past = np;
        t->live = true;
        memcpy(s->work, prefix_logits, V * sizeof(float));
        const wh_proc pc = {.m = m, .want_ts = r->want_ts, .max_init_idx = r->max_init_idx};
        par_select(r, &pc, t, r->temps[k0 + i], s->work);
    }
    ps->k0 = k0;
    const wh_proc pc = {.m = m, .want_ts = r->want_ts, .max_init_idx = r->max_init_idx};
    const double t0 = tr_time_ms();
    bool aborted = false;
    int n_steps = 0;
    while (ok) {
        int live = 0;
        for (int i = 0; i < ps->n; i++) {
            par_tier *t = &ps->t[i];
            if (!t->live || !par_advance(m, t, r->temps[k0 + i])) continue;
            t->tok32 = t->tok;
            seqs[live] = tr_wh_seq(s, &t->tok32, 1, t->n_past);
            seqs[live].kv = &t->kv;
            idx[live++] = i;
        }
        /* the first tiers in order, all ended, and one of them stops the loop:
         * the later tiers are never looked at */
        bool settled = false;
        for (int i = 0; i < ps->n && !ps->t[i].live; i++)
            if (tier_stops(r, ns_prob, &ps->t[i].out)) settled = true;
        if (live == 0 || settled) break;
        tr_ed_step(s->pool, &m->decoder, live, seqs, s->dec_x, s->dec_scratch, logits);
        n_steps++;
        for (int j = 0; j < live; j++) {
            par_tier *t = &ps->t[idx[j]];
            t->n_past++;
            memcpy(s->work, logits + (size_t)j * V, V * sizeof(float));
            par_select(r, &pc, t, r->temps[k0 + idx[j]], s->work);
        }
        if (tr_run_should_abort(r->ctx)) {
            aborted = true;
            break;
        }
    }
    for (int i = 0; i < ps->n; i++) {
        par_tier *t = &ps->t[i];
        if (t->live) par_finish(m, t, r->temps[k0 + i]);
        if (aborted) t->out.aborted = true;
    }
    r->dec_ms += tr_time_ms() - t0;
    if (ok)
        TR_DEBUG("whisper: fallback tiers side by side: %d tiers in %d lockstep steps", ps->n,
                 n_steps);
    free(logits);
    free(seqs);
    free(idx);
    if (!ok) par_free(ps);
    return ok;
}

/* Tier k0 + i of a lockstep set as run_tier would have left it: its ids in
 * r->G and its summary in *out. */
static bool par_take(wh_runstate *r, const par_set *ps, int i, tier_out *out) {
    const par_tier *t = &ps->t[i];
    r->n_g = t->n_g;
    memcpy(r->G, t->G, sizeof(int32_t) * (size_t)(t->n_g + 1));
    memcpy(r->Gp, t->Gp, sizeof(float) * (size_t)t->n_g);
    memcpy(r->Gts, t->Gts, sizeof(wh_tsp) * (size_t)t->n_g);
    *out = t->out;
    return !out->aborted;
}

/* ---- result rows ---- */

/* Word and token rows of one segment. A word starts at a text token whose
 * bytes begin with a space (or the segment's first text token); its text is
 * the trimmed decode of its tokens. With ts (WORD / TOKEN runs) every token
 * gets its estimated span inside the segment (docs/formats/whisper.md §13)
 * and a word runs from its first token's start to its last token's end;
 * without, rows carry the segment's times (upstream has no finer timing). */
static bool emit_rows(wh_runstate *r, int seg, int64_t t0, int64_t t1, const int32_t *ids,
                      const float *ps, const wh_tsp *ts, int64_t offset_ms, int n) {
    tr_result *res = r->ctx->result;
    const wh_model *m = r->m;
    int64_t *tt = NULL;
    float *w = NULL;
    if (ts && n > 0) {
        tt = malloc((size_t)n * 2 * sizeof *tt);
        w = malloc((size_t)n * sizeof *w);
        if (!tt || !w) {
            free(tt);
            free(w);
            return false;
        }
        for (int k = 0; k < n; k++) {
            w[k] = 0.0f;
            if (!is_text_id(m, ids[k])) continue;
            char buf[256];
            size_t nb = tr_tokenizer_token_bytes(m->tok, ids[k], buf, sizeof buf);
            w[k] = tr_wh_token_weight(buf, nb < sizeof buf ? nb : sizeof buf);
        }
        tr_wh_token_times(m->ts_begin, ts, w, n, offset_ms, t0, t1, tt, tt + n);
    }
    bool ok = true;
    int i = 0;
    while (ok && i < n) {
        if (!is_text_id(m, ids[i])) {
            i++;
            continue;
        }
        int j = i + 1, last = i;
        for (; j < n; j++) {
            if (!is_text_id(m, ids[j])) continue;
            char c = 0;
            if (tr_tokenizer_token_bytes(m->tok, ids[j], &c, 1) > 0 && c == ' ') break;
            last = j;
        }
        char *wt = decode_text(m, ids + i, j - i);
        int word =
            wt ? tr_result_add_word(res, tt ? tt[i] : t0, tt ? tt[n + last] : t1, seg, wt) : -1;
        free(wt);
        ok = word >= 0;
        for (int k = i; ok && k < j; k++) {
            if (!is_text_id(m, ids[k])) continue;
            char buf[256];
            size_t nb = tr_tokenizer_token_bytes(m->tok, ids[k], buf, sizeof buf);
            if (nb > sizeof buf) nb = sizeof buf;
            char *txt = tr_utf8_sanitize(buf, nb);
            int ti = txt ? tr_result_add_token(res, ids[k], ps[k], tt ? tt[k] : t0,
                                               tt ? tt[n + k] : t1, seg, word, txt)
                         : -1;
            free(txt);
            ok = ti >= 0;
        }
        i = j;
    }
    free(tt);
    free(w);
    return ok;
}

/* ---- main loop ---- */

static transcribe_status resolve_language(wh_runstate *r) {
    const wh_model *m = r->m;
    const struct transcribe_run_params *p = r->ctx->params;
    r->lang_idx = -1;
    r->lang_tok = -1;
    r->task_tok = -1;
    r->detect = false;
    if (!m->multilingual) return TRANSCRIBE_OK;
    r->task_tok = p->task == TRANSCRIBE_TASK_TRANSLATE ? m->translate : m->transcribe;
    if (r->task_tok < 0) {
        TR_ERROR("whisper: the model lacks the <|%s|> token id",
                 p->task == TRANSCRIBE_TASK_TRANSLATE ? "translate" : "transcribe");
        return TRANSCRIBE_ERR_GGUF;
    }
    if (m->n_lang == 0) {
        TR_ERROR("whisper: multilingual model without general.languages cannot run");
        return TRANSCRIBE_ERR_GGUF;
    }
    if (p->language && p->language[0]) {
        for (int i = 0; i < m->n_lang; i++) {
            if (strcmp(m->lang[i], p->language) == 0) {
                r->lang_idx = i;
                r->lang_tok = m->lang_tok[i];
            }
        }
        if (r->lang_idx < 0) {
            TR_ERROR("whisper: language '%s' is not supported by this model", p->language);
            return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
        }
        if (r->lang_tok < 0) return TRANSCRIBE_ERR_GGUF;
    } else {
        r->detect = true;
    }
    return TRANSCRIBE_OK;
}

static void add_trace(wh_session *s, const wh_trace *t) {
    wh_trace *nt = tr_grow_int(s->traces, &s->cap_traces, s->n_traces + 1, sizeof *nt, 16);
    if (!nt) return;
    s->traces = nt;
    s->traces[s->n_traces++] = *t;
}

static transcribe_status finish_text(wh_runstate *r) {
    const wh_model *m = r->m;
    tr_result *res = r->ctx->result;
    char *full = decode_text(m, r->all_text.v, r->all_text.n);
    if (!full) return TRANSCRIBE_ERR_OOM;
    if (!r->want_ts) {
        /* docs/formats/whisper.md §9.1: exactly one segment {0, 0, full text} */
        int seg = tr_result_add_segment(res, 0, 0, full);
        if (seg < 0 ||
            !emit_rows(r, seg, 0, 0, r->all_text.v, r->all_text.p, NULL, 0, r->all_text.n)) {
            free(full);
            return TRANSCRIBE_ERR_OOM;
        }
    }
    bool ok = tr_result_set_full_text(res, full);
    free(full);
    if (!ok) return TRANSCRIBE_ERR_OOM;
    /* raw text: every accepted id, timestamps as <|s.ss|> */
    tr_strbuf b;
    tr_strbuf_init(&b);
    for (int i = 0; i < r->raw.n; i++) {
        int id = r->raw.v[i];
        if (id >= m->ts_begin)
            tr_strbuf_appendf(&b, "<|%.2f|>", (id - m->ts_begin) * 0.02);
        else if (id < m->n_tok_pieces)
            append_token_bytes(m, &b, id);
    }
    char *raw = b.oom ? NULL : tr_utf8_sanitize(tr_strbuf_cstr(&b), b.len);
    tr_strbuf_free(&b);
    if (!raw) return TRANSCRIBE_ERR_OOM;
    ok = tr_result_set_raw_text(res, raw);
    free(raw);
    if (!ok) return TRANSCRIBE_ERR_OOM;
    if (r->detect && r->lang_idx >= 0) tr_result_set_language(res, m->lang[r->lang_idx]);
    transcribe_timestamp_kind asked = r->ctx->params->timestamps;
    tr_result_set_timestamp_kind(res, !r->want_ts     ? TRANSCRIBE_TIMESTAMPS_NONE
                                      : r->want_words ? asked
                                                      : TRANSCRIBE_TIMESTAMPS_SEGMENT);
    return res->oom ? TRANSCRIBE_ERR_OOM : TRANSCRIBE_OK;
}

/* Window mel source: the whole short-form mel, or the long-form stream. */
typedef struct mel_src {
    const float *mel; /* short form: [M][total] */
    wh_mel_stream *ms;
    int total;
    double ms_time;
} mel_src;

static transcribe_status run_windows(wh_runstate *r, mel_src *src) {
    const int total = src->total;
    wh_session *s = r->s;
    const wh_model *m = r->m;
    const int M = m->hp.n_mels, Tm = m->hp.n_frames_window, V = m->hp.n_vocab;
    tr_result *res = r->ctx->result;
    int seek = 0;
    bool first = true;
    float prev_temp = 0.0f;
    int32_t prefix[512];
    wh_seg *segs = malloc((WH_MAX_GEN + 8) * sizeof *segs);
    float *prefix_logits = malloc((size_t)V * sizeof(float));
    if (!segs || !prefix_logits) {
        free(segs);
        free(prefix_logits);
        return TRANSCRIBE_ERR_OOM;
    }
    transcribe_status st = TRANSCRIBE_OK;
    while (seek < total) {
        if (tr_run_should_abort(r->ctx)) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        int n_real = total - seek < Tm ? total - seek : Tm;
        if (src->ms) {
            double tm = tr_time_ms();
            st = tr_wh_mel_stream_frames(src->ms, seek, n_real, s->window, Tm);
            src->ms_time += tr_time_ms() - tm;
            if (st != TRANSCRIBE_OK) break;
        }
        for (int c = 0; c < M; c++) {
            float *dst = s->window + (size_t)c * Tm;
            if (!src->ms)
                memcpy(dst, src->mel + (size_t)c * total + seek, (size_t)n_real * sizeof(float));
            memset(dst + n_real, 0, (size_t)(Tm - n_real) * sizeof(float));
        }
        int64_t offset_ms = (int64_t)seek * 10;
        double t0 = tr_time_ms();
        tr_wh_encode(s, s->window);
        const bool cross_ok = tr_wh_cross_kv(s);
        r->enc_ms += tr_time_ms() - t0;
        if (!cross_ok) {
            st = TRANSCRIBE_ERR_OOM;
            break;
        }

        if (first && r->detect) {
            double td = tr_time_ms();
            st = detect_language(r);
            r->dec_ms += tr_time_ms() - td;
            if (st != TRANSCRIBE_OK || r->ctx->detect_only) break;
        }
        bool cond = r->o.cond_prev && !(prev_temp >= 0.5f);
        int sot_row = 0;
        int np =
            build_prefix(r, first, cond, prefix, (int)(sizeof prefix / sizeof prefix[0]), &sot_row);
        if (np + 1 > m->hp.n_text_ctx || np > (int)(sizeof prefix / sizeof prefix[0])) {
            TR_ERROR("whisper: prompt of %d tokens leaves no room in the %d-position decoder", np,
                     m->hp.n_text_ctx);
            st = TRANSCRIBE_ERR_INVALID_ARG;
            break;
        }
        /* The prefix pass is shared by every tier: later steps only write
         * cache rows >= np, so the prefix rows stay valid. */
        double td = tr_time_ms();
        tr_wh_decode_tokens(s, prefix, np, 0);
        tr_wh_logits_row(s, np - 1, prefix_logits);
        tr_wh_logits_row(s, sot_row, s->work);
        r->dec_ms += tr_time_ms() - td;
        float ns_prob = 0.0f;
        {
            float mx = -INFINITY;
            for (int i = 0; i < V; i++)
                if (s->work[i] > mx) mx = s->work[i];
            double sum = 0.0;
            for (int i = 0; i < V; i++) sum += exp((double)s->work[i] - mx);
            if (m->no_speech >= 0 && m->no_speech < V)
                ns_prob = (float)(exp((double)s->work[m->no_speech] - mx) / sum);
        }

        tier_out to = {0};
        bool no_speech = false;
        int accepted_tier = 0;
        par_set ps = {0};
        for (int k = 0; k < r->n_temps; k++) {
            if (k == 1 && !ps.tried) { /* the greedy tier failed: the rest side by side */
                ps.tried = true;
                if (!par_run(r, prefix_logits, np, 1, ns_prob, &ps)) {
                    st = TRANSCRIBE_ERR_OOM;
                    break;
                }
            }
            const bool ran = k >= ps.k0 && k < ps.k0 + ps.n
                                 ? par_take(r, &ps, k - ps.k0, &to)
                                 : run_tier(r, prefix_logits, np, r->temps[k], &to);
            if (!ran) break;
            accepted_tier = k;
            if (ns_prob > r->o.ns_thold && to.avg_logprob < r->o.lp_thold) {
                no_speech = true;
                break;
            }
            if (to.compression_ratio <= r->o.cr_thold && to.avg_logprob >= r->o.lp_thold) break;
        }
        par_free(&ps);
        if (st != TRANSCRIBE_OK) break;
        if (to.aborted) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        wh_trace tr = {.t0_ms = offset_ms,
                       .t1_ms = offset_ms + 10 * (int64_t)n_real,
                       .temperature = to.temperature,
                       .compression_ratio = to.compression_ratio,
                       .avg_logprob = to.avg_logprob,
                       .no_speech_prob = ns_prob,
                       .no_speech = no_speech,
                       .n_fallbacks = accepted_tier};
        add_trace(s, &tr);
        prev_temp = to.temperature;
        first = false;
        if (no_speech) {
            seek += n_real;
            tr_run_report_progress(r->ctx, (double)seek / total);
            continue;
        }
        int advance = n_real;
        int n_seg =
            tr_wh_retrieve_segments(m, r->G, r->n_g, offset_ms, n_real, r->want_ts, segs, &advance);
        for (int i = 0; i < n_seg; i++) {
            const wh_seg *sg = &segs[i];
            hist_add(r, r->G + sg->start, sg->end - sg->start);
            if (!r->want_ts) continue;
            char *txt = decode_text(m, r->G + sg->start, sg->end - sg->start);
            if (!txt) {
                st = TRANSCRIBE_ERR_OOM;
                break;
            }
            if (txt[0]) {
                int si = tr_result_add_segment(res, sg->t0_ms, sg->t1_ms, txt);
                if (si < 0 ||
                    !emit_rows(r, si, sg->t0_ms, sg->t1_ms, r->G + sg->start, r->Gp + sg->start,
                               r->want_words ? r->Gts + sg->start : NULL, offset_ms,
                               sg->end - sg->start))
                    st = TRANSCRIBE_ERR_OOM;
            }
            free(txt);
        }
        if (st != TRANSCRIBE_OK) break;
        for (int i = 0; i < r->n_g; i++) {
            iv_push(&r->raw, r->G[i], r->Gp[i]);
            if (is_text_id(m, r->G[i])) iv_push(&r->all_text, r->G[i], r->Gp[i]);
        }
        if (r->raw.oom || r->all_text.oom || r->hist.oom) {
            st = TRANSCRIBE_ERR_OOM;
            break;
        }
        seek += advance;
        tr_run_report_progress(r->ctx, (double)seek / total);
    }
    free(segs);
    free(prefix_logits);
    return st;
}

static void build_temps(wh_runstate *r) {
    float t0 = r->o.t0, inc = r->o.t_inc;
    r->n_temps = 0;
    r->temps[r->n_temps++] = t0;
    if (inc > 0.0f && isfinite(inc)) {
        for (int k = 1; k < 64; k++) {
            double t = (double)t0 + k * (double)inc;
            if (t > 1.0 + 1e-4) break;
            r->temps[r->n_temps++] = (float)t;
        }
    }
}

transcribe_status tr_wh_run(wh_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const wh_model *m = s->m;
    if (!pcm || n_samples <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    s->n_traces = 0;
    wh_runstate r;
    memset(&r, 0, sizeof r);
    r.s = s;
    r.m = m;
    r.ctx = ctx;
    s->pool = ctx->pool ? ctx->pool : s->pool;
    tr_wh_opts_from_params(ctx->params, &r.o);
    transcribe_timestamp_kind tk = ctx->params->timestamps;
    r.want_words = tk == TRANSCRIBE_TIMESTAMPS_WORD || tk == TRANSCRIBE_TIMESTAMPS_TOKEN;
    r.want_ts =
        r.want_words || tk == TRANSCRIBE_TIMESTAMPS_AUTO || tk == TRANSCRIBE_TIMESTAMPS_SEGMENT;
    build_temps(&r);
    float mit = r.o.max_initial_ts;
    r.max_init_idx = (isfinite(mit) && mit >= 0.0f) ? (int)floor((double)mit / 0.02 + 1e-6) : -1;
    tr_wh_rng_seed(&r.rng, r.o.seed ? r.o.seed
                                    : (uint32_t)time(NULL) ^ (uint32_t)(uintptr_t)&r ^ 0x5733B17Eu);

    transcribe_status st = resolve_language(&r);
    if (st == TRANSCRIBE_OK) st = build_prompt(&r);
    if (st == TRANSCRIBE_OK && r.n_prompt > 0 &&
        r.o.prompt_condition == TRANSCRIBE_WHISPER_PROMPT_FIRST_SEGMENT)
        hist_add(&r, r.prompt, r.n_prompt); /* the prompt is the first history slice */
    float *mel = NULL, *clean = NULL;
    mel_src src = {0};
    wh_mel_stream ms = {0};
    const float *in = NULL;
    if (st == TRANSCRIBE_OK) {
        in = tr_pcm_sanitized(pcm, n_samples, "whisper", &clean);
        if (!in) st = TRANSCRIBE_ERR_OOM;
    }
    double t0 = tr_time_ms();
    /* long form (> 30 s) is streamed window by window (bounded memory) */
    bool stream =
        (int64_t)n_samples > (int64_t)30 * m->mel.sample_rate && m->mel.pre_emphasis == 0.0f;
    if (st == TRANSCRIBE_OK && stream) {
        st = tr_wh_mel_stream_init(&ms, m, s->pool, in, n_samples);
        src.ms = &ms;
        src.total = ms.total;
    } else if (st == TRANSCRIBE_OK) {
        st = tr_wh_log_mel(m, s->pool, in, n_samples, &mel, &src.total);
        src.mel = mel;
    }
    double mel_ms = tr_time_ms() - t0;
    if (st == TRANSCRIBE_OK) st = run_windows(&r, &src);
    ctx->result->mel_ms = (float)(mel_ms + src.ms_time);
    tr_wh_mel_stream_free(&ms);
    free(clean);
    free(mel);
    ctx->result->encode_ms = (float)r.enc_ms;
    ctx->result->decode_ms = (float)r.dec_ms;
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED) {
        transcribe_status st2 = finish_text(&r);
        if (st2 != TRANSCRIBE_OK) st = st2;
    }
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_ABORTED) s->n_traces = 0;
    free(r.prompt);
    iv_free(&r.hist);
    iv_free(&r.all_text);
    iv_free(&r.raw);
    return st;
}
