/* MOSS against the float64 PyTorch reference goldens of tests/data/moss/tiny
 * (tools/ref/moss.py; README there): per-chunk mel and encoder output, the
 * adaptor rows, prompt ids, prefill logits (single-shot and chunked), greedy
 * tokens, raw / full text, segments and speaker rows under the three docs/formats/moss.md §10.3
 * policies, for the F32 and F16 files and both KV types; the loop model's
 * OUTPUT_TRUNCATED at the budget; the parser cases. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "gguf/gguf.h"
#include "models/moss/moss.h"
#include "models/moss/moss_parse.h"
#include "text/tokenizer.h"
#include "llm_parity.h"
#include "npy.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"
#include "util/strbuf.h"

#define DATA TR_SOURCE_DIR "/tests/data/moss/tiny"

/* Tolerances (README of the goldens: float32 vs float64 ~1e-6). */
#define TOL_MEL         1e-4 /* absolute */
#define TOL_ENC         1e-4 /* relative to max |ref| */
#define TOL_LOGITS      2e-3 /* absolute, F32 KV */
#define TOL_LOGITS_KV16 5e-3 /* absolute, F16 KV (reference: <= 6.3e-5) */

static double g_worst_mel, g_worst_enc, g_worst_ad, g_worst_lg[2];

typedef struct clip {
    const char *stem;
    int n_chunks;
    float *pcm;
    int n;
} clip;

static clip g_clips[2] = {{"mix", 1, NULL, 0}, {"we33", 2, NULL, 0}};

static bool load_npy(const char *name, npy_array *a) {
    return llm_load_npy(DATA, name, a);
}

static char *read_golden(const char *name) {
    return llm_read_golden(DATA, name);
}

/* The value of "key: value" (malloc'ed, "" when absent). */
static char *field(const char *text, const char *key) {
    size_t kl = strlen(key);
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (len > kl + 1 && strncmp(line, key, kl) == 0 && line[kl] == ':') {
            const char *v = line + kl + 2;
            size_t vl = len - kl - 2;
            char *out = malloc(vl + 1);
            memcpy(out, v, vl);
            out[vl] = 0;
            return out;
        }
        line = nl ? nl + 1 : NULL;
    }
    return strdup("");
}

/* The golden block under header "[...]" up to the next header or EOF. */
static char *block(const char *text, const char *header) {
    const char *a = strstr(text, header);
    if (!a) return strdup("");
    a = strchr(a, '\n');
    if (!a) return strdup("");
    a++;
    const char *b = strstr(a, "\n[");
    size_t len = b ? (size_t)(b - a) + 1 : strlen(a);
    char *out = malloc(len + 1);
    memcpy(out, a, len);
    out[len] = 0;
    return out;
}

/* A result in the golden's block format. */
static char *render(const tr_result *r) {
    tr_strbuf b;
    tr_strbuf_init(&b);
    tr_strbuf_appendf(&b, "kind: %s\nsegments: %d\n",
                      r->ts_kind == TRANSCRIBE_TIMESTAMPS_SEGMENT ? "SEGMENT" : "NONE", r->n_segs);
    for (int i = 0; i < r->n_segs; i++)
        tr_strbuf_appendf(&b, "  %lld %lld %d %s\n", (long long)r->segs[i].t0_ms,
                          (long long)r->segs[i].t1_ms, r->segs[i].speaker_id,
                          tr_result_str(r, r->segs[i].text_off));
    tr_strbuf_appendf(&b, "speakers: %d\n", r->n_spk);
    for (int i = 0; i < r->n_spk; i++)
        tr_strbuf_appendf(&b, "  %lld %lld %d\n", (long long)r->spk[i].t0_ms,
                          (long long)r->spk[i].t1_ms, r->spk[i].speaker_id);
    char *out = strdup(tr_strbuf_cstr(&b));
    tr_strbuf_free(&b);
    return out;
}

static const struct {
    const char *header;
    enum transcribe_diarize_mode diarize;
    transcribe_timestamp_kind ts;
} k_policies[3] = {
    {"[diarize=ON timestamps=SEGMENT]", TRANSCRIBE_DIARIZE_MODE_ON, TRANSCRIBE_TIMESTAMPS_SEGMENT},
    {"[diarize=OFF timestamps=SEGMENT]", TRANSCRIBE_DIARIZE_MODE_OFF,
     TRANSCRIBE_TIMESTAMPS_SEGMENT},
    {"[diarize=ON timestamps=NONE]", TRANSCRIBE_DIARIZE_MODE_ON, TRANSCRIBE_TIMESTAMPS_NONE},
};

/* Vocabulary hints of the goldens (README "Hotwords"): `hot` has a padded
 * and an empty term (3 used); `hotlong` is 403 terms, cut by the context. */
static const char *const k_hot[] = {"Kubernetes", " Anthropic ", "", "Dr. Nguyen"};
#define N_HOTLONG 403
static const char *g_hotlong[N_HOTLONG];
static char g_hotlong_buf[400][8];

static void init_hotlong(void) {
    g_hotlong[0] = "Kubernetes";
    g_hotlong[1] = "Anthropic";
    g_hotlong[2] = "Dr. Nguyen";
    for (int i = 0; i < 400; i++) {
        snprintf(g_hotlong_buf[i], sizeof g_hotlong_buf[i], "term%03d", i);
        g_hotlong[3 + i] = g_hotlong_buf[i];
    }
}

/* The term list of a golden mode ("plain" and "loop": none). */
static const char *const *terms_of(const char *mode, int *n) {
    if (strcmp(mode, "hot") == 0) {
        *n = 4;
        return k_hot;
    }
    if (strcmp(mode, "hotlong") == 0) {
        *n = N_HOTLONG;
        return g_hotlong;
    }
    *n = 0;
    return NULL;
}

/* Prompt ids of <clip>.<mode>.prompt.npy for T_enc rows at the model's own
 * context (prompt arithmetic only). */
static void check_prompt(const ms_model *m, const char *clip_stem, const char *mode, int T_enc,
                         const char *golden_mode) {
    int n_terms = 0, n = 0, used = -1;
    const char *const *terms = terms_of(mode, &n_terms);
    int32_t *ids = NULL;
    int *pos = NULL;
    CHECK(tr_ms_build_prompt_hot(m, T_enc, terms, n_terms, m->max_pos, &ids, &n, &pos, &used) ==
          TRANSCRIBE_OK);
    char name[128];
    npy_array g;
    snprintf(name, sizeof name, "%s.%s.prompt.npy", clip_stem, golden_mode);
    if (ids && load_npy(name, &g)) {
        CHECK_MSG(g.n == n && memcmp(g.data, ids, sizeof(int32_t) * (size_t)n) == 0,
                  "%s prompt differs (%d vs %lld ids, %d terms used)", name, n, (long long)g.n,
                  used);
        npy_free(&g);
    }
    free(ids);
    free(pos);
}

/* limits.txt: T_prompt and terms used for every session context, with no
 * terms, `hot` and `hotlong` (rows past the gate keep the plain prompt). */
static void check_limits(const ms_model *m) {
    char *all = read_golden("limits.txt");
    if (!all) return;
    int rows = 0;
    char *save = NULL;
    for (char *line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char clip_name[16], tl[16], status[32];
        int n_ctx, T_want, used_want;
        if (line[0] == '#' || sscanf(line, "%15s %d %15s -> %31s %d %d", clip_name, &n_ctx, tl,
                                     status, &T_want, &used_want) != 6)
            continue;
        const clip *c = strcmp(clip_name, "mix") == 0 ? &g_clips[0] : &g_clips[1];
        const int T_enc = (int)tr_ms_audio_tokens(m, c->n);
        int ceiling = n_ctx > 0 && n_ctx < m->max_pos ? n_ctx : m->max_pos, n_terms = 0;
        const char *const *terms = terms_of(strcmp(tl, "none") == 0 ? "plain" : tl, &n_terms);
        if (strcmp(status, "OK") != 0) n_terms = 0; /* the gate refuses before the terms */
        int32_t *ids = NULL;
        int *pos = NULL, n = 0, used = -1;
        CHECK(tr_ms_build_prompt_hot(m, T_enc, terms, n_terms, ceiling, &ids, &n, &pos, &used) ==
              TRANSCRIBE_OK);
        CHECK_MSG(n == T_want && used == used_want, "limits '%s': T_prompt %d, %d terms", line, n,
                  used);
        free(ids);
        free(pos);
        rows++;
    }
    CHECK(rows == 36);
    free(all);
}

/* Mel and encoder per chunk, adaptor rows, prompt ids (internal API). */
static void check_front(const ms_model *m, const clip *c, const char *dt) {
    char name[128];
    npy_array g;
    const int D = m->enc.d_model;
    tr_session_cfg cfg = {.n_threads = 1, .kv_type = TRANSCRIBE_KV_TYPE_F32};
    ms_session *s = NULL;
    CHECK(tr_ms_session_create(m, &cfg, &s) == TRANSCRIBE_OK);
    if (!s) return;
    int64_t row = 0;
    float *audio = NULL, *trim = NULL;
    int T_enc = 0;
    CHECK(tr_ms_encode(s, c->pcm, c->n, &audio, &T_enc, &trim, NULL) == TRANSCRIBE_OK);
    CHECK(T_enc == tr_ms_audio_tokens(m, c->n));
    for (int k = 0; k < c->n_chunks; k++) {
        const int64_t start = (int64_t)k * m->n_chunk;
        const int64_t len = c->n - start < m->n_chunk ? c->n - start : m->n_chunk;
        float *mel = NULL;
        int nf = 0;
        CHECK(tr_mel_whisper(&m->mel, c->pcm + start, len, NULL, &mel, &nf) == TRANSCRIBE_OK);
        snprintf(name, sizeof name, "%s.mel.%d.npy", c->stem, k);
        if (mel && load_npy(name, &g)) {
            const int64_t F = g.shape[1];
            double e = 0;
            for (int b = 0; b < 80; b++)
                e = fmax(e, llm_max_abs_diff(mel + (size_t)b * nf, (const float *)g.data + b * F, F,
                                             NULL));
            g_worst_mel = fmax(g_worst_mel, e);
            CHECK_MSG(e <= TOL_MEL, "%s %s mel %d: %g", dt, c->stem, k, e);
            npy_free(&g);
        }
        free(mel);
        snprintf(name, sizeof name, "%s.enc.%d.npy", c->stem, k);
        if (trim && load_npy(name, &g)) {
            double mr = 0, e = llm_max_abs_diff(trim + row * D, g.data, g.n, &mr);
            g_worst_enc = fmax(g_worst_enc, e / mr);
            CHECK_MSG(e / mr <= TOL_ENC, "%s %s encoder chunk %d: rel %g", dt, c->stem, k, e / mr);
            row += g.shape[0];
            npy_free(&g);
        }
    }
    CHECK(row == (int64_t)T_enc * m->merge);
    snprintf(name, sizeof name, "%s.adaptor.npy", c->stem);
    if (audio && load_npy(name, &g)) {
        CHECK(g.n == (int64_t)T_enc * m->lm.d_model);
        if (g.n == (int64_t)T_enc * m->lm.d_model) {
            double mr = 0, e = llm_max_abs_diff(audio, g.data, g.n, &mr);
            g_worst_ad = fmax(g_worst_ad, e / mr);
            CHECK_MSG(e / mr <= TOL_ENC, "%s %s adaptor: rel %g", dt, c->stem, e / mr);
        }
        npy_free(&g);
    }
    int32_t *ids = NULL;
    int *pos = NULL, n = 0;
    CHECK(tr_ms_build_prompt(m, T_enc, &ids, &n, &pos) == TRANSCRIBE_OK);
    snprintf(name, sizeof name, "%s.plain.prompt.npy", c->stem);
    if (ids && load_npy(name, &g)) {
        CHECK_MSG(g.n == n && memcmp(g.data, ids, sizeof(int32_t) * (size_t)n) == 0,
                  "%s prompt differs (%d vs %lld ids)", c->stem, n, (long long)g.n);
        npy_free(&g);
    }
    free(ids);
    free(pos);
    free(audio);
    free(trim);
    tr_ms_session_free(s);
}

/* One run through the internal session per policy: logits0, tokens, text,
 * segments and speaker rows. */
static void check_decode(const ms_model *m, const clip *c, const char *mode, const char *dt,
                         bool kv_f32, bool logits) {
    char stem[64], name[128];
    snprintf(stem, sizeof stem, "%s.%s", c->stem, mode);
    snprintf(name, sizeof name, "%s.text.txt", stem);
    char *gold = read_golden(name);
    if (!gold) return;
    tr_session_cfg cfg = {.n_threads = 2,
                          .kv_type = kv_f32 ? TRANSCRIBE_KV_TYPE_F32 : TRANSCRIBE_KV_TYPE_F16};
    ms_session *s = NULL;
    CHECK(tr_ms_session_create(m, &cfg, &s) == TRANSCRIBE_OK);
    /* parity with the reference: it has no repetition guard */
    if (s) s->repeat_guard = false;
    for (int p = 0; s && p < 3; p++) {
        struct transcribe_run_params rp;
        transcribe_run_params_init(&rp);
        rp.diarize = k_policies[p].diarize;
        rp.timestamps = k_policies[p].ts;
        rp.vocabulary = terms_of(mode, &rp.n_vocabulary);
        tr_result r;
        tr_result_init(&r);
        tr_run_ctx ctx = {.params = &rp, .result = &r};
        transcribe_status st = tr_ms_run(s, c->pcm, c->n, &ctx);
        char *status = field(gold, "status");
        bool trunc = strcmp(status, "OUTPUT_TRUNCATED") == 0;
        CHECK_MSG(st == (trunc ? TRANSCRIBE_ERR_OUTPUT_TRUNCATED : TRANSCRIBE_OK),
                  "%s %s kv%s: %s (golden %s)", dt, stem, kv_f32 ? "F32" : "F16",
                  transcribe_status_string(st), status);
        free(status);
        if (p == 0) {
            npy_array g;
            for (int ch = 0; logits && ch < 2; ch++) {
                snprintf(name, sizeof name, "%s%s.logits0.npy", stem, ch ? ".chunked" : "");
                char path[512];
                snprintf(path, sizeof path, "%s/%s", DATA, name);
                if (npy_load(path, &g) != 0) continue; /* chunked goldens exist for some */
                double e = llm_max_abs_diff(s->dec.last_logits, g.data, g.n, NULL);
                g_worst_lg[kv_f32] = fmax(g_worst_lg[kv_f32], e);
                CHECK_MSG(e <= (kv_f32 ? TOL_LOGITS : TOL_LOGITS_KV16),
                          "%s %s kv%s %s: max abs err %g", dt, stem, kv_f32 ? "F32" : "F16", name,
                          e);
                npy_free(&g);
            }
            snprintf(name, sizeof name, "%s%s.tokens.npy", stem,
                     strcmp(dt, "F16") == 0 && strcmp(mode, "loop") ? ".f16" : "");
            if (load_npy(name, &g)) {
                const int32_t *ref = g.data;
                int64_t n_ref = g.n;
                if (!trunc && n_ref > 0 && ref[n_ref - 1] == m->eos) n_ref--;
                bool same = n_ref == s->n_last &&
                            memcmp(ref, s->last_ids, sizeof(int32_t) * (size_t)n_ref) == 0;
                CHECK_MSG(same, "%s %s kv%s: tokens differ (%d vs %lld)", dt, stem,
                          kv_f32 ? "F32" : "F16", s->n_last, (long long)n_ref);
                npy_free(&g);
            }
            char *raw = field(gold, "raw"), *full = field(gold, "full_text");
            CHECK_MSG(strcmp(tr_result_raw_text(&r), raw) == 0, "%s raw '%s'", stem,
                      tr_result_raw_text(&r));
            CHECK_MSG(strcmp(tr_result_full_text(&r), full) == 0, "%s full '%s'", stem,
                      tr_result_full_text(&r));
            free(raw);
            free(full);
        }
        char *want = block(gold, k_policies[p].header), *got = render(&r);
        CHECK_MSG(strcmp(want, got) == 0, "%s %s %s:\n--- got\n%s--- want\n%s", dt, stem,
                  k_policies[p].header, got, want);
        free(want);
        free(got);
        tr_result_free(&r);
    }
    tr_ms_session_free(s);
    free(gold);
}

/* The loop model with the repetition guard on (the default): it stops long
 * before the 478-token budget, keeps a proper prefix of the reference ids
 * ending in one cycle, and reports OUTPUT_TRUNCATED; the text is parsed. */
static void check_guard(const ms_model *m) {
    tr_session_cfg cfg = {.n_threads = 2, .kv_type = TRANSCRIBE_KV_TYPE_F32};
    ms_session *s = NULL;
    CHECK(tr_ms_session_create(m, &cfg, &s) == TRANSCRIBE_OK);
    npy_array g;
    if (!s || !load_npy("mix.loop.tokens.npy", &g)) {
        tr_ms_session_free(s);
        return;
    }
    CHECK(s->repeat_guard);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.diarize = TRANSCRIBE_DIARIZE_MODE_ON;
    tr_result r;
    tr_result_init(&r);
    tr_run_ctx ctx = {.params = &rp, .result = &r};
    CHECK(tr_ms_run(s, g_clips[0].pcm, g_clips[0].n, &ctx) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    CHECK(ctx.truncated);
    CHECK_MSG(s->n_last > 5 && s->n_last < 100 && s->n_last < g.n &&
                  memcmp(g.data, s->last_ids, sizeof(int32_t) * (size_t)s->n_last) == 0,
              "guard kept %d of %lld ids", s->n_last, (long long)g.n);
    const char *ft = tr_result_full_text(&r);
    CHECK_MSG(strncmp(ft, "Welcome back to the show", 24) == 0 && strlen(ft) < 80,
              "guarded text '%s'", ft);
    CHECK(r.n_segs == 1 && r.n_spk == 1 && r.segs[0].speaker_id == 1);
    printf("repetition guard: %d of %lld loop ids kept: '%s'\n", s->n_last, (long long)g.n, ft);
    tr_result_free(&r);
    npy_free(&g);
    tr_ms_session_free(s);
}

static int encode_internal(const void *tok, const char *text, int32_t *ids, size_t n) {
    return tr_tokenizer_encode(tok, text, ids, n);
}

static ms_model *load_internal(const char *path, gguf_file **g) {
    *g = NULL;
    if (tr_gguf_open(path, g) != TRANSCRIBE_OK) return NULL;
    tr_load_ctx lc = {.path = path, .gguf = *g};
    ms_model *m = NULL;
    if (tr_ms_model_load(&lc, &m) != TRANSCRIBE_OK) return NULL;
    return m;
}

static void test_file(const char *file, const char *dt, bool loop) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", DATA, file);
    gguf_file *g = NULL;
    ms_model *m = load_internal(path, &g);
    CHECK_MSG(m != NULL, "cannot load %s", path);
    if (m) {
        if (loop) {
            /* the file without the instruction split: hints off, terms ignored */
            CHECK(m->instruction == NULL);
            check_prompt(m, "mix", "hot", (int)tr_ms_audio_tokens(m, g_clips[0].n), "nosplit");
            check_decode(m, &g_clips[0], "loop", dt, true, true);
            check_guard(m);
            /* same tokens as the ref model (other LM weights: no logits) */
            check_decode(m, &g_clips[1], "plain", dt, true, false);
        } else {
            CHECK(m->instruction != NULL);
            CHECK(llm_tokenizer_cases(DATA "/tokenizer_cases.txt", encode_internal, m->tok,
                                      "moss") == 12);
            for (int c = 0; c < 2; c++) {
                check_front(m, &g_clips[c], dt);
                for (int kv = 0; kv < 2; kv++)
                    check_decode(m, &g_clips[c], "plain", dt, kv == 1, true);
                /* hotwords: one KV type per file (the F16 file with the F16 cache) */
                const bool kv32 = strcmp(dt, "F32") == 0;
                const int T_enc = (int)tr_ms_audio_tokens(m, g_clips[c].n);
                check_prompt(m, g_clips[c].stem, "hot", T_enc, "hot");
                check_prompt(m, g_clips[c].stem, "hotlong", T_enc, "hotlong");
                check_decode(m, &g_clips[c], "hot", dt, kv32, true);
                check_decode(m, &g_clips[c], "hotlong", dt, kv32, true);
            }
            check_limits(m);
        }
    }
    tr_ms_model_free(m);
    tr_gguf_close(g);
}

/* ---- parser_cases.txt ---- */

static char *unhex(const char *h, size_t *n) {
    size_t len = strlen(h) / 2;
    char *out = malloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        unsigned v = 0;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (char)v;
    }
    out[len] = 0;
    if (n) *n = len;
    return out;
}

static void hex_of(const char *s, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", (unsigned char)s[i]);
    out[2 * n] = 0;
}

static void test_parser_cases(void) {
    char *all = read_golden("parser_cases.txt");
    if (!all) return;
    int n_cases = 0;
    char *save = NULL;
    tr_result r;
    tr_result_init(&r);
    char cname[128] = "";
    char *input = NULL;
    size_t in_n = 0;
    int seg_i = 0, spk_i = 0, seg_l = 0, spk_l = 0;
    /* Result strings are C strings (the public API hands out const char *),
     * so text holding a NUL byte ends there: such a case checks times,
     * speakers and counts, not text. */
    bool has_nul = false;
    const moss_out_policy pol = {true, true};
    for (char *line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char hex[4096] = "", *big = NULL;
        if (!strncmp(line, "case ", 5)) {
            snprintf(cname, sizeof cname, "%s", line + 5);
            n_cases++;
        } else if (!strncmp(line, "input_repeat ", 13)) {
            char unit[256];
            int count = 0;
            sscanf(line + 13, "%255s %d", unit, &count);
            size_t un;
            char *u = unhex(unit, &un);
            free(input);
            input = malloc(un * (size_t)count + 1);
            for (int i = 0; i < count; i++) memcpy(input + un * (size_t)i, u, un);
            in_n = un * (size_t)count;
            has_nul = memchr(input, 0, in_n) != NULL;
            free(u);
            tr_result_free(&r);
            CHECK(tr_moss_fill_result(input, in_n, 10000, &pol, &r) == TRANSCRIBE_OK);
            seg_i = spk_i = seg_l = spk_l = 0;
        } else if (!strncmp(line, "input", 5)) {
            free(input);
            input = unhex(line[5] == ' ' ? line + 6 : "", &in_n);
            has_nul = memchr(input, 0, in_n) != NULL;
            tr_result_free(&r);
            CHECK(tr_moss_fill_result(input, in_n, 10000, &pol, &r) == TRANSCRIBE_OK);
            seg_i = spk_i = seg_l = spk_l = 0;
        } else if (!strncmp(line, "parsed ", 7)) {
            bool parsed = r.ts_kind == TRANSCRIBE_TIMESTAMPS_SEGMENT;
            CHECK_MSG(parsed == (line[7] == '1'), "case %s: parsed %d", cname, parsed);
        } else if (!strncmp(line, "full_text_len ", 14)) {
            CHECK_MSG(strlen(tr_result_full_text(&r)) == (size_t)atol(line + 14),
                      "case %s: full_text_len", cname);
        } else if (!strncmp(line, "full_text", 9)) {
            const char *ft = tr_result_full_text(&r);
            big = malloc(strlen(ft) * 2 + 1);
            hex_of(ft, strlen(ft), big);
            CHECK_MSG(has_nul || strcmp(big, line[9] == ' ' ? line + 10 : "") == 0,
                      "case %s: full_text %s", cname, big);
        } else if (!strncmp(line, "segments ", 9)) {
            CHECK_MSG(r.n_segs == atoi(line + 9), "case %s: %d segments", cname, r.n_segs);
        } else if (!strncmp(line, "speakers ", 9)) {
            CHECK_MSG(r.n_spk == atoi(line + 9), "case %s: %d speakers", cname, r.n_spk);
        } else if (!strncmp(line, "seg ", 4) || !strncmp(line, "seg_first ", 10) ||
                   !strncmp(line, "seg_last ", 9)) {
            bool last = !strncmp(line, "seg_last", 8), rep = line[3] == '_';
            long long t0, t1;
            int spk, tl = -1;
            char th[512] = "";
            const char *p = strchr(line, ' ') + 1;
            if (rep)
                sscanf(p, "%lld %lld %d %d %511s", &t0, &t1, &spk, &tl, th);
            else
                sscanf(p, "%lld %lld %d %511s", &t0, &t1, &spk, th);
            int first_last = r.n_segs < 3 ? 0 : r.n_segs - 3;
            int i = last ? first_last + seg_l++ : seg_i++;
            if (i < 0 || i >= r.n_segs) {
                CHECK_MSG(false, "case %s: segment %d missing", cname, i);
                continue;
            }
            const tr_result_segment *sg = &r.segs[i];
            const char *txt = tr_result_str(&r, sg->text_off);
            size_t tlen = strlen(txt);
            size_t show = rep ? (tlen < 40 ? tlen : 40) : tlen;
            hex_of(txt, show < 1000 ? show : 1000, hex);
            CHECK_MSG(sg->t0_ms == t0 && sg->t1_ms == t1 && sg->speaker_id == spk &&
                          (has_nul || strcmp(hex, th) == 0) && (tl < 0 || (size_t)tl == tlen),
                      "case %s: seg %d got %lld %lld %d %s", cname, i, (long long)sg->t0_ms,
                      (long long)sg->t1_ms, sg->speaker_id, hex);
        } else if (!strncmp(line, "spk ", 4) || !strncmp(line, "spk_first ", 10) ||
                   !strncmp(line, "spk_last ", 9)) {
            bool last = !strncmp(line, "spk_last", 8);
            long long t0, t1;
            int spk;
            sscanf(strchr(line, ' ') + 1, "%lld %lld %d", &t0, &t1, &spk);
            int first_last = r.n_spk < 3 ? 0 : r.n_spk - 3;
            int i = last ? first_last + spk_l++ : spk_i++;
            if (i < 0 || i >= r.n_spk) {
                CHECK_MSG(false, "case %s: speaker row %d missing", cname, i);
                continue;
            }
            CHECK_MSG(r.spk[i].t0_ms == t0 && r.spk[i].t1_ms == t1 && r.spk[i].speaker_id == spk,
                      "case %s: speaker row %d", cname, i);
        }
        free(big);
    }
    CHECK(n_cases >= 30);
    free(input);
    tr_result_free(&r);
    free(all);
}

int main(void) {
    static const char *const wav[2] = {TR_SOURCE_DIR "/tests/data/moss/mix.wav",
                                       TR_SOURCE_DIR "/tests/data/moss/we33.wav"};
    for (int c = 0; c < 2; c++) {
        if (transcribe_audio_load_file(wav[c], 16000, &g_clips[c].pcm, &g_clips[c].n) !=
            TRANSCRIBE_OK) {
            fprintf(stderr, "cannot read %s\n", wav[c]);
            return 1;
        }
    }
    init_hotlong();
    test_parser_cases();
    test_file("moss-tiny-ref-F32.gguf", "F32", false);
    test_file("moss-tiny-ref-F16.gguf", "F16", false);
    test_file("moss-tiny-loop-nosplit-F16.gguf", "F16", true);
    printf("worst: mel %.3g abs, encoder %.3g rel, adaptor %.3g rel, logits0 %.3g abs (F16 KV) / "
           "%.3g (F32 KV)\n",
           g_worst_mel, g_worst_enc, g_worst_ad, g_worst_lg[0], g_worst_lg[1]);
    for (int c = 0; c < 2; c++) transcribe_audio_free(g_clips[c].pcm);
    return TEST_DONE();
}
