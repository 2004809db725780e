/* Speculative decoding on the shared causal LM (nn/causal_lm.h) with a
 * small random model: the verify step (tr_clm_step_seq) gives each of its
 * rows the logits of one-row steps bit for bit (F32 / F16 / Q8_0 / Q4_K
 * weights, F32 and F16 KV, Granite's multipliers, 1 to 3 threads), the
 * cache it leaves behind gives the next steps their plain logits, and
 * tr_clm_greedy with spec_k 1, 4, 8 returns plain greedy's ids and status
 * through budgets and windows that end mid-draft and the repetition
 * guard. */
#include <stdlib.h>
#include <string.h>

#include "causal_lm/clm_wire.h"
#include "nn/causal_lm.h"
#include "nn/causal_lm_internal.h"
#include "tensor/dtype.h"
#include "test_util.h"

enum { L = 2, D = 256, NH = 4, NKV = 2, HD = 64, F = 512, V = 37 };
#define QD (NH * HD)
#define KD (NKV * HD)

static uint64_t rng;
static float frand(void) {
    return tu_clm_frand(&rng);
}

typedef struct model {
    tr_clm_hparams hp;
    tr_clm_weights w;
    tr_clm_block blk[L];
    tr_tensor t[L * 7 + 1];
    void *data[L * 7 + 1];
    float norms[L][4][D];
    float out_norm[D];
} model;

static void make_tensor(model *m, int i, int64_t in, int64_t out, int type, float amp) {
    float *f = malloc((size_t)in * sizeof(float));
    size_t rb = tr_row_bytes(type, in);
    void *d = malloc(rb * (size_t)out);
    for (int64_t r = 0; r < out; r++) {
        for (int64_t j = 0; j < in; j++) f[j] = amp * frand();
        tr_quantize_row(type, f, (char *)d + r * rb, in);
    }
    free(f);
    m->data[i] = d;
    m->t[i] = (tr_tensor){.name = "w",
                          .type = type,
                          .n_dims = 2,
                          .ne = {in, out, 1, 1},
                          .nb1 = rb,
                          .nbytes = rb * (size_t)out,
                          .data = d};
}

/* amp: the weights' scale (larger: a peakier model that loops sooner). */
static void model_init(model *m, int type, bool granite, uint64_t seed, float amp) {
    memset(m, 0, sizeof *m);
    m->hp = (tr_clm_hparams){.n_layer = L,
                             .d_model = D,
                             .n_head = NH,
                             .n_head_kv = NKV,
                             .head_dim = HD,
                             .d_ffn = F,
                             .n_vocab = V,
                             .eps = 1e-6f,
                             .rope_theta = 10000.0f,
                             .qk_norm = !granite};
    tr_clm_hparams_defaults(&m->hp);
    if (granite) {
        m->hp.residual_mult = 0.22f;
        m->hp.attention_mult = 0.0625f;
        m->hp.logits_scale = 8.0f;
    }
    rng = seed;
    for (int l = 0; l < L; l++) {
        const int64_t io[7][2] = {{D, QD}, {D, KD}, {D, KD}, {QD, D}, {D, F}, {D, F}, {F, D}};
        for (int j = 0; j < 7; j++)
            make_tensor(m, l * 7 + j, io[j][0], io[j][1], type,
                        amp * (j == 3 || j == 6 ? 0.3f : 0.4f));
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < D; i++) m->norms[l][j][i] = 1.0f + 0.2f * frand();
        tu_clm_wire(&m->blk[l], &m->t[l * 7], m->norms[l][0], m->norms[l][1], m->norms[l][2],
                    m->norms[l][3]);
    }
    make_tensor(m, L * 7, D, V, type, 1.0f);
    for (int i = 0; i < D; i++) m->out_norm[i] = 1.0f + 0.2f * frand();
    m->w = (tr_clm_weights){
        .tok_emb = &m->t[L * 7], .out_norm = m->out_norm, .head = &m->t[L * 7], .blocks = m->blk};
}

static void model_free(model *m) {
    for (int i = 0; i < L * 7 + 1; i++) free(m->data[i]);
}

enum { NP = 11 };

static int prefill(const model *m, tr_clm_state *st, tr_pool *pool, int seed) {
    int32_t ids[NP];
    for (int i = 0; i < NP; i++) ids[i] = (int32_t)((i * 7 + seed * 13 + (i * i) % 11) % V);
    float x[NP * D];
    CHECK(tr_clm_reserve(st, 1, 256) == TRANSCRIBE_OK);
    tr_clm_embed(&m->hp, &m->w, ids, NP, NULL, 0, 0, x);
    return tr_clm_prefill(st, pool, x, NP, 0, NULL);
}

/* The verify step's rows against one-row steps, and the steps after it. */
static void test_verify_rows(int type, bool kv16, bool granite, tr_pool *pool) {
    model m;
    model_init(&m, type, granite, 88172645463325252ull, 1.0f);
    enum { N = TR_CLM_SPEC_ROWS, AFTER = 3 };
    int32_t toks[N + AFTER];
    for (int i = 0; i < N + AFTER; i++) toks[i] = (int32_t)((i * 5 + 3) % V);
    static float ref[N + AFTER][V];
    int32_t ref_next[N + AFTER];
    tr_clm_state *st = tr_clm_state_new(&m.hp, &m.w, kv16);
    prefill(&m, st, pool, 1);
    for (int i = 0; i < N + AFTER; i++) {
        int pos = NP + i, slot = 0;
        CHECK(tr_clm_step(st, pool, &toks[i], &pos, &slot, 1, &ref_next[i]));
        memcpy(ref[i], tr_clm_step_logits(st, 0), sizeof ref[i]);
    }
    for (int n = 1; n <= N; n++) {
        prefill(&m, st, pool, 1);
        int32_t next[N + AFTER];
        CHECK(tr_clm_step_seq(st, pool, toks, n, NP, 0, next));
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad +=
                next[i] != ref_next[i] || memcmp(tr_clm_step_logits(st, i), ref[i], sizeof ref[i]);
        /* plain steps after the verify step read the K/V it wrote */
        for (int i = n; i < n + AFTER; i++) {
            int pos = NP + i, slot = 0;
            CHECK(tr_clm_step(st, pool, &toks[i], &pos, &slot, 1, &next[i]));
            bad +=
                next[i] != ref_next[i] || memcmp(tr_clm_step_logits(st, 0), ref[i], sizeof ref[i]);
        }
        CHECK_MSG(bad == 0,
                  "type %s kv16 %d granite %d threads %d: %d rows of a %d-row verify "
                  "differ from one-row steps",
                  tr_type_name(type), kv16, granite, tr_pool_n_threads(pool), bad, n);
    }
    int32_t next[N + 1];
    CHECK(!tr_clm_step_seq(st, pool, toks, N + 1, NP, 0, next)); /* too many rows */
    CHECK(!tr_clm_step_seq(st, pool, toks, 2, 255, 0, next));    /* past the cache */
    int32_t badtok[2] = {1, V};
    CHECK(!tr_clm_step_seq(st, pool, badtok, 2, NP, 0, next));
    tr_clm_state_free(st);
    model_free(&m);
}

/* The abort poll, which the loop calls before every model call: counts
 * them (never aborts). */
static bool count_calls(void *user) {
    ++*(int *)user;
    return false;
}

/* tr_clm_greedy with spec_k = 0 against 1, 4, 8 under cfg. Returns the
 * model calls of k = 8 saved over plain (drafts accepted). */
static int greedy_same(const model *m, bool kv16, tr_pool *pool, tr_clm_greedy_cfg cfg, int seed) {
    int32_t ref[256], out[256];
    int n_ref = 0, n_out = 0, calls = 0, saved = 0;
    cfg.should_abort = count_calls;
    cfg.abort_user = &calls;
    tr_clm_state *st = tr_clm_state_new(&m->hp, &m->w, kv16);
    int first = prefill(m, st, pool, seed);
    cfg.spec_k = 0;
    transcribe_status rc_ref = tr_clm_greedy(st, pool, &cfg, first, NP, ref, &n_ref);
    const int plain_calls = calls, ks[3] = {1, 4, 8};
    for (int i = 0; i < 3; i++) {
        cfg.spec_k = ks[i];
        calls = 0;
        CHECK(prefill(m, st, pool, seed) == first);
        transcribe_status rc = tr_clm_greedy(st, pool, &cfg, first, NP, out, &n_out);
        CHECK_MSG(rc == rc_ref && n_out == n_ref && !memcmp(out, ref, sizeof *out * n_ref),
                  "k %d budget %d window %d: status %d/%d, %d/%d ids", ks[i], cfg.max_new,
                  cfg.max_n_kv, rc, rc_ref, n_out, n_ref);
        CHECK(calls <= plain_calls);
        saved = plain_calls - calls;
    }
    tr_clm_state_free(st);
    return saved;
}

static void test_greedy(int type, bool kv16, tr_pool *pool) {
    model m;
    model_init(&m, type, false, 0x9E3779B97F4A7C15ull, 2.0f);
    tr_clm_greedy_cfg cfg = {.eos = -1, .max_new = 120, .max_n_kv = 256};
    /* this model falls into loops: drafts save many of its 120 model calls */
    CHECK(greedy_same(&m, kv16, pool, cfg, 2) > 20);
    /* EOS: a token the free run produces */
    int32_t out[256];
    int n_out = 0;
    tr_clm_state *st = tr_clm_state_new(&m.hp, &m.w, kv16);
    int first = prefill(&m, st, pool, 2);
    tr_clm_greedy(st, pool, &cfg, first, NP, out, &n_out);
    tr_clm_state_free(st);
    cfg.eos = out[n_out / 2];
    greedy_same(&m, kv16, pool, cfg, 2);
    cfg.eos = -1;
    /* budgets and windows ending mid-draft */
    for (int b = 1; b <= 24; b++) {
        cfg.max_new = b;
        greedy_same(&m, kv16, pool, cfg, 2);
    }
    cfg.max_new = 120;
    for (int w = NP + 1; w <= NP + 24; w += 5) {
        cfg.max_n_kv = w;
        greedy_same(&m, kv16, pool, cfg, 2);
    }
    cfg.max_n_kv = 256;
    /* the repetition guard stopping a looping output mid-draft */
    cfg.repeat_max_period = 8;
    cfg.repeat_min_repeats = 3;
    cfg.repeat_min_tokens = 9;
    greedy_same(&m, kv16, pool, cfg, 2);
    cfg.repeat_max_period = 0;
    /* other prompts */
    for (int s = 3; s < 8; s++) greedy_same(&m, kv16, pool, cfg, s);
    model_free(&m);
}

int main(void) {
    tr_pool *p2 = tr_pool_create(2), *p3 = tr_pool_create(3);
    test_verify_rows(TR_F32, false, false, NULL);
    test_verify_rows(TR_F32, false, false, p3);
    test_verify_rows(TR_F16, true, false, p2);
    test_verify_rows(TR_Q8_0, true, true, p2);
    test_verify_rows(TR_Q4_K, false, false, p3);
    test_greedy(TR_F32, false, NULL);
    test_greedy(TR_F16, true, p2);
    test_greedy(TR_Q8_0, true, p3);
    tr_pool_free(p2);
    tr_pool_free(p3);
    return TEST_DONE();
}
