/* tr_tokenizer_from_gguf: tokenizer.* keys written with the GGUF writer and
 * read back through tr_gguf_open_memory — kinds, strict key types (docs/formats/gguf.md §3.1),
 * length rules, special ids, and parity with tr_tokenizer_create. */
#include <limits.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "test_util.h"
#include "text/tokenizer.h"
#include "tok_data.h"

static const char *k_pieces[] = {
    "a", "b", "c", "\xC4\xA0", "ab", "\xC4\xA0\x61\x62", "abc", "<|endoftext|>"};
static const char *k_merges[] = {"a b", "\xC4\xA0 ab", "ab c"}; /* Ġab = Ġ + ab */
static const int32_t k_types[] = {1, 1, 1, 1, 1, 1, 1, 3};
static const float k_scores[] = {0, 0, 0, 0, 0, 0, 0, 0};
#define NP 8

/* Writes the base gpt2 vocabulary minus `skip` (a key name), then lets the
 * caller add or override keys, serialises, parses and loads. */
typedef void (*edit_fn)(gguf_writer *w);

static transcribe_status load(const char *skip, edit_fn edit, tr_tokenizer **out) {
    gguf_writer *w = tr_gguf_writer_create();
    if (!skip || strcmp(skip, "model")) tr_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (!skip || strcmp(skip, "pre")) tr_gguf_writer_set_str(w, "tokenizer.ggml.pre", "gpt2");
    if (!skip || strcmp(skip, "tokens"))
        tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", k_pieces, NP);
    if (!skip || strcmp(skip, "types"))
        tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", k_types, NP);
    if (!skip || strcmp(skip, "merges"))
        tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", k_merges, 3);
    if (!skip || strcmp(skip, "eos")) tr_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 7);
    if (edit) edit(w);
    void *mem = NULL;
    size_t size = 0;
    transcribe_status st = tr_gguf_writer_to_memory(w, &mem, &size);
    tr_gguf_writer_free(w);
    *out = NULL;
    if (st != TRANSCRIBE_OK) return st;
    gguf_file *f = NULL;
    st = tr_gguf_open_memory(mem, size, &f);
    if (st == TRANSCRIBE_OK) st = tr_tokenizer_from_gguf(f, out);
    tr_gguf_close(f); /* the tokenizer copies what it keeps */
    free(mem);
    return st;
}

static void e_model_u32(gguf_writer *w) {
    tr_gguf_writer_set_u32(w, "tokenizer.ggml.model", 1);
}
static void e_model_llama(gguf_writer *w) {
    tr_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
}
static void e_tokens_i32(gguf_writer *w) {
    tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.tokens", k_types, NP);
}
static void e_tokens_empty(gguf_writer *w) {
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", k_pieces, 0);
}
static void e_scores_short(gguf_writer *w) {
    tr_gguf_writer_set_arr_f32(w, "tokenizer.ggml.scores", k_scores, NP - 1);
}
static void e_scores_i32(gguf_writer *w) {
    tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.scores", k_types, NP);
}
static void e_types_f32(gguf_writer *w) {
    tr_gguf_writer_set_arr_f32(w, "tokenizer.ggml.token_type", k_scores, NP);
}
static void e_types_long(gguf_writer *w) {
    static const int32_t t9[9] = {1, 1, 1, 1, 1, 1, 1, 3, 1};
    tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", t9, 9);
}
static void e_merges_i32(gguf_writer *w) {
    tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.merges", k_types, 3);
}
static void e_merges_bad(gguf_writer *w) {
    static const char *m[] = {"a b", "abc"};
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", m, 2);
}
static void e_pre_bool(gguf_writer *w) {
    tr_gguf_writer_set_bool(w, "tokenizer.ggml.pre", true);
}
static void e_pre_tekken(gguf_writer *w) {
    tr_gguf_writer_set_str(w, "tokenizer.ggml.pre", "tekken");
}
static void e_bos_str(gguf_writer *w) {
    tr_gguf_writer_set_str(w, "tokenizer.ggml.bos_token_id", "1");
}
static void e_ids_i32(gguf_writer *w) {
    tr_gguf_writer_set_i32(w, "tokenizer.ggml.bos_token_id", 2);
    tr_gguf_writer_set_i32(w, "tokenizer.ggml.unknown_token_id", -1);
    tr_gguf_writer_set_u32(w, "tokenizer.ggml.blank_token_id", 6);
}
static void e_char(gguf_writer *w) {
    tr_gguf_writer_set_str(w, "tokenizer.ggml.model", "char");
}

static void test_errors(void) {
    tr_tokenizer *t;
    struct {
        const char *skip;
        edit_fn edit;
        transcribe_status want;
        const char *what;
    } cases[] = {
        {"model", NULL, TRANSCRIBE_ERR_GGUF, "missing model"},
        {NULL, e_model_u32, TRANSCRIBE_ERR_GGUF, "model UINT32"},
        {NULL, e_model_llama, TRANSCRIBE_ERR_NOT_IMPLEMENTED, "model llama"},
        {"tokens", NULL, TRANSCRIBE_ERR_GGUF, "missing tokens"},
        {"tokens", e_tokens_i32, TRANSCRIBE_ERR_GGUF, "tokens INT32 array"},
        {"tokens", e_tokens_empty, TRANSCRIBE_ERR_GGUF, "empty tokens"},
        {NULL, e_scores_short, TRANSCRIBE_ERR_GGUF, "scores length"},
        {NULL, e_scores_i32, TRANSCRIBE_ERR_GGUF, "scores INT32"},
        {"types", e_types_f32, TRANSCRIBE_ERR_GGUF, "token_type FLOAT32"},
        {"types", e_types_long, TRANSCRIBE_ERR_GGUF, "token_type length"},
        {"merges", e_merges_i32, TRANSCRIBE_ERR_GGUF, "merges INT32"},
        {"merges", e_merges_bad, TRANSCRIBE_ERR_GGUF, "merge without separator"},
        {"pre", e_pre_bool, TRANSCRIBE_ERR_GGUF, "pre BOOL"},
        {NULL, e_bos_str, TRANSCRIBE_ERR_GGUF, "bos id STRING"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        transcribe_status st = load(cases[i].skip, cases[i].edit, &t);
        CHECK_MSG(st == cases[i].want && t == NULL, "%s: status %d", cases[i].what, (int)st);
        tr_tokenizer_free(t);
    }
    CHECK(tr_tokenizer_from_gguf(NULL, &t) == TRANSCRIBE_ERR_INVALID_ARG);
}

static void test_gpt2(void) {
    tr_tokenizer *t, *ref;
    CHECK(load(NULL, e_ids_i32, &t) == TRANSCRIBE_OK);
    CHECK(tr_tokenizer_create(TR_TOK_GPT2, TR_PRE_GPT2, k_pieces, NP, NULL, k_types, k_merges, 3,
                              &ref) == TRANSCRIBE_OK);
    if (!t || !ref) return;
    CHECK(tr_tokenizer_kind(t) == TR_TOK_GPT2 && tr_tokenizer_pretok(t) == TR_PRE_GPT2);
    CHECK(tr_tokenizer_n_vocab(t) == NP);
    CHECK(tr_tokenizer_eos(t) == 7 && tr_tokenizer_bos(t) == 2);
    CHECK(tr_tokenizer_unk(t) == -1 && tr_tokenizer_blank(t) == 6);
    CHECK(tr_tokenizer_is_control(t, 7) && !tr_tokenizer_is_control(t, 0));
    CHECK(!tr_tokenizer_is_control(t, NP) && !tr_tokenizer_is_control(t, -1));
    CHECK(tr_tokenizer_find(t, "abc") == 6 && tr_tokenizer_find(t, "zz") == -1);
    CHECK(strcmp(tr_tokenizer_piece(t, 5), "\xC4\xA0"
                                           "ab") == 0);
    int32_t a[16], b[16];
    int na = tr_tokenizer_encode(t, "abc ab cab", a, 16);
    int nb = tr_tokenizer_encode(ref, "abc ab cab", b, 16);
    CHECK(na == nb && na == 5 && memcmp(a, b, sizeof(int32_t) * 5) == 0);
    /* abc | Ġab | Ġ c ab: "Ġ ab" cannot apply across the c */
    CHECK(a[0] == 6 && a[1] == 5 && a[2] == 3 && a[3] == 2 && a[4] == 4);
    char *d = tr_tokenizer_decode(t, a, na, false);
    CHECK(d && strcmp(d, "abc ab cab") == 0);
    free(d);
    tr_tokenizer_free(t);
    tr_tokenizer_free(ref);

    /* absent pre → qwen2; converter-only values → qwen2 */
    CHECK(load("pre", NULL, &t) == TRANSCRIBE_OK && tr_tokenizer_pretok(t) == TR_PRE_QWEN2);
    tr_tokenizer_free(t);
    CHECK(load(NULL, e_pre_tekken, &t) == TRANSCRIBE_OK && tr_tokenizer_pretok(t) == TR_PRE_QWEN2);
    tr_tokenizer_free(t);

    /* no merges: decodes, cannot encode */
    CHECK(load("merges", NULL, &t) == TRANSCRIBE_OK);
    if (t) {
        CHECK(!tr_tokenizer_can_encode(t));
        CHECK(tr_tokenizer_encode(t, "abc", a, 16) == INT_MIN);
        int32_t ids[] = {6, 5};
        d = tr_tokenizer_decode(t, ids, 2, false);
        CHECK(d && strcmp(d, "abc ab") == 0);
        free(d);
    }
    tr_tokenizer_free(t);

    /* char: verbatim decode, no encoder */
    CHECK(load(NULL, e_char, &t) == TRANSCRIBE_OK);
    if (t) {
        CHECK(tr_tokenizer_kind(t) == TR_TOK_CHAR);
        CHECK(tr_tokenizer_encode(t, "abc", a, 16) == INT_MIN);
        int32_t ids[] = {3, 0};
        d = tr_tokenizer_decode(t, ids, 2, false);
        CHECK(d && strcmp(d, "\xC4\xA0"
                             "a") == 0);
        free(d);
    }
    tr_tokenizer_free(t);
}

/* The unigram test model through GGUF gives the same ids as from arrays. */
static const char **g_pieces;
static float *g_scores;
static int32_t *g_types;
static int g_n;

static void e_unigram(gguf_writer *w) {
    tr_gguf_writer_set_str(w, "tokenizer.ggml.model", "unigram");
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", g_pieces, (size_t)g_n);
    tr_gguf_writer_set_arr_f32(w, "tokenizer.ggml.scores", g_scores, (size_t)g_n);
    tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", g_types, (size_t)g_n);
    tr_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
}

static void test_unigram(void) {
    tok_lines v, c;
    if (tok_lines_read("spm_unigram_bf_vocab.txt", &v) ||
        tok_lines_read("spm_unigram_bf_cases.txt", &c)) {
        CHECK(0);
        return;
    }
    g_n = v.n;
    g_pieces = malloc((size_t)v.n * sizeof(char *));
    g_scores = malloc((size_t)v.n * sizeof(float));
    g_types = malloc((size_t)v.n * sizeof(int32_t));
    for (int i = 0; i < v.n; i++) {
        const char *end;
        g_pieces[i] = tok_unhex(v.lines[i], NULL, &end);
        char *e2;
        g_scores[i] = strtof(end + 1, &e2);
        g_types[i] = (int32_t)strtol(e2 + 1, NULL, 10);
    }
    tr_tokenizer *t = NULL;
    CHECK(load("merges", e_unigram, &t) == TRANSCRIBE_OK);
    if (t) {
        CHECK(tr_tokenizer_kind(t) == TR_TOK_SPM_UNIGRAM && tr_tokenizer_unk(t) == 0);
        int same = 0;
        static int32_t exp[4096], got[4096];
        for (int i = 0; i < c.n; i++) {
            const char *end;
            char *text = tok_unhex(c.lines[i], NULL, &end);
            int ne = tok_parse_ids(end, exp, 4096);
            int ng = tr_tokenizer_encode(t, text, got, 4096);
            same += ng == ne && memcmp(got, exp, sizeof(int32_t) * (size_t)ne) == 0;
            free(text);
        }
        printf("unigram via GGUF: %d/%d cases identical to sentencepiece\n", same, c.n);
        CHECK(same == c.n);
    }
    tr_tokenizer_free(t);
    for (int i = 0; i < v.n; i++) free((void *)g_pieces[i]);
    free(g_pieces);
    free(g_scores);
    free(g_types);
    tok_lines_free(&v);
    tok_lines_free(&c);
}

int main(void) {
    test_errors();
    test_gpt2();
    test_unigram();
    return TEST_DONE();
}
