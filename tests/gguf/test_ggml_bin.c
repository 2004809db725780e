/* Legacy whisper.cpp .bin parsing: the real weightless vocabulary files in
 * shared/vocab, synthetic files with tensors, the docs/formats/gguf.md §11.4 name mapping, the
 * §11.3 derived properties, and malformed images. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_bin.h"
#include "models/whisper/whisper_bin_info.h"
#include "gguf/gguf.h"
#include "gguf_build.h"
#include "tensor/dtype.h"
#include "test_util.h"

/* Slaney filterbank per docs/formats/gguf.md §8.3 (16 kHz, n_fft 400, 0..8 kHz). */
static double hz_to_mel(double f) {
    return f < 1000.0 ? f / (200.0 / 3.0) : 15.0 + log(f / 1000.0) / (log(6.4) / 27.0);
}
static double mel_to_hz(double m) {
    return m < 15.0 ? m * (200.0 / 3.0) : 1000.0 * exp((m - 15.0) * (log(6.4) / 27.0));
}
static double slaney(int m, int k, int n_mels) {
    double lo = hz_to_mel(0), hi = hz_to_mel(8000);
    double h0 = mel_to_hz(lo + (hi - lo) * m / (n_mels + 1));
    double h1 = mel_to_hz(lo + (hi - lo) * (m + 1) / (n_mels + 1));
    double h2 = mel_to_hz(lo + (hi - lo) * (m + 2) / (n_mels + 1));
    double f = k * 16000.0 / 400.0;
    double up = (f - h0) / (h1 - h0), down = (h2 - f) / (h2 - h1);
    double w = fmax(0.0, fmin(up, down));
    return w * 2.0 / (h2 - h0);
}

static void test_vocab_file(const char *name, int32_t n_vocab) {
    char path[512];
    snprintf(path, sizeof path, "%s/vocab/%s", TR_CORPUS_DIR, name);
    tr_ggml_bin *b = NULL;
    CHECK_MSG(tr_ggml_bin_open(path, &b) == TRANSCRIBE_OK, "%s", path);
    if (!b) return;
    const tr_ggml_bin_hparams *hp = tr_ggml_bin_hparams_of(b);
    CHECK(hp->n_vocab == n_vocab && hp->n_mels == 80 && hp->n_audio_layer == 4);
    CHECK(hp->n_audio_ctx == 1500 && hp->n_audio_state == 384 && hp->n_text_ctx == 448);
    int n_mel = 0, n_freq = 0;
    const float *fb = tr_ggml_bin_filters(b, &n_mel, &n_freq);
    CHECK(fb && n_mel == 80 && n_freq == 201);
    double max_err = 0;
    int neg = 0;
    for (int m = 0; m < 80; m++) {
        for (int k = 0; k < 201; k++) {
            float v = fb[m * 201 + k];
            neg += v < 0;
            max_err = fmax(max_err, fabs(v - slaney(m, k, 80)));
        }
    }
    CHECK(neg == 0);
    CHECK_MSG(max_err < 1e-6, "filterbank differs from Slaney by %g", max_err);
    const tr_tensor *tfb = tr_ggml_bin_find_tensor(b, "frontend.mel_filterbank");
    CHECK(tfb && tfb->type == TR_F32 && tfb->ne[0] == 201 && tfb->ne[1] == 80 &&
          tfb->data == (const void *)fb);
    const tr_tensor *win = tr_ggml_bin_find_tensor(b, "frontend.window");
    CHECK(win && win->ne[0] == 400 && win->n_dims == 1);
    if (win) {
        const float *w = win->data;
        CHECK(w[0] == 0.0f && fabsf(w[200] - 1.0f) < 1e-6f && fabsf(w[100] - 0.5f) < 1e-6f);
    }
    CHECK(tr_ggml_bin_n_file_tensors(b) == 0 && tr_ggml_bin_n_tensors(b) == 2);
    CHECK(tr_ggml_bin_legacy_name(b, 0) == NULL);

    CHECK(tr_ggml_bin_n_tokens(b) == 50257);
    size_t len = 0;
    const char *t0 = tr_ggml_bin_token(b, 0, &len);
    CHECK(t0 && len == 1 && strcmp(t0, "!") == 0);
    const char *t220 = tr_ggml_bin_token(b, 220, &len);
    CHECK(t220 && len == 1 && t220[0] == ' '); /* raw bytes, not GPT-2 mapped "Ġ" */
    const char *t262 = tr_ggml_bin_token(b, 262, &len);
    CHECK(t262 && (n_vocab != 51864 || strcmp(t262, " the") == 0));
    CHECK(tr_ggml_bin_token(b, 50257, &len) == NULL && tr_ggml_bin_token(b, -1, &len) == NULL);
    CHECK(tr_ggml_bin_tokens(b)[1][0] == '"');

    tr_whisper_bin_info info;
    tr_whisper_bin_info_from(hp, &info);
    const char *eot = tr_ggml_bin_token(b, 50256, &len);
    if (n_vocab == 51864) {
        CHECK(!info.multilingual && info.num_languages == 1);
        CHECK(info.eot == 50256 && info.sot == 50257 && info.translate == 50357);
        CHECK(info.nospeech == 50361 && info.notimestamps == 50362);
        CHECK(info.timestamp_begin == 50363);
        CHECK(strcmp(info.variant, "tiny.en") == 0);
        /* the English vocab ends with its end-of-text literal at eot */
        CHECK(eot && strcmp(eot, "<|endoftext|>") == 0);
    } else {
        CHECK(info.multilingual && info.num_languages == 99);
        CHECK(info.eot == 50257 && info.sot == 50258 && info.translate == 50358);
        CHECK(info.transcribe == 50359 && info.notimestamps == 50363);
        CHECK(info.timestamp_begin == 50364);
        CHECK(strcmp(info.variant, "tiny") == 0);
        /* the multilingual file's last base entry is an empty piece; eot is
         * beyond the stored vocabulary */
        CHECK(eot && len == 0);
    }
    tr_ggml_bin_close(b);
}

static void test_derived(void) {
    tr_ggml_bin_hparams hp = {
        .n_vocab = 51866, .n_audio_layer = 32, .n_text_layer = 4, .n_mels = 128};
    tr_whisper_bin_info in;
    tr_whisper_bin_info_from(&hp, &in);
    CHECK(in.num_languages == 100 && in.translate == 50359 && in.notimestamps == 50364);
    CHECK(in.timestamp_begin == 50365 && strcmp(in.variant, "large-v3-turbo") == 0);
    hp.n_text_layer = 32;
    tr_whisper_bin_info_from(&hp, &in);
    CHECK(strcmp(in.variant, "large-v3") == 0);
    hp.n_mels = 80, hp.n_vocab = 51865;
    tr_whisper_bin_info_from(&hp, &in);
    CHECK(strcmp(in.variant, "large") == 0);
    CHECK(strcmp(tr_whisper_bin_language(0), "en") == 0);
    CHECK(strcmp(tr_whisper_bin_language(1), "zh") == 0);
    CHECK(strcmp(tr_whisper_bin_language(98), "su") == 0);
    CHECK(strcmp(tr_whisper_bin_language(99), "yue") == 0);
    CHECK(strcmp(tr_whisper_bin_language(93), "haw") == 0);
    CHECK(tr_whisper_bin_language(100) == NULL && tr_whisper_bin_language(-1) == NULL);
    int n;
    const int32_t *ns = tr_whisper_bin_nonspeech(false, &n);
    CHECK(n == 84 && ns[0] == 1 && ns[n - 1] == 49146);
    ns = tr_whisper_bin_nonspeech(true, &n);
    CHECK(n == 82 && ns[23] == 359 && ns[n - 1] == 50254);
}

static void test_names(void) {
    static const char *pairs[][2] = {
        {"encoder.positional_embedding", "enc.pos_emb.weight"},
        {"encoder.conv1.weight", "enc.conv.0.weight"},
        {"encoder.conv2.bias", "enc.conv.1.bias"},
        {"encoder.ln_post.bias", "enc.final_norm.bias"},
        {"encoder.blocks.0.attn_ln.weight", "enc.blocks.0.norm_attn.weight"},
        {"encoder.blocks.11.attn.query.bias", "enc.blocks.11.attn.q.bias"},
        {"encoder.blocks.3.attn.key.weight", "enc.blocks.3.attn.k.weight"},
        {"encoder.blocks.3.attn.value.weight", "enc.blocks.3.attn.v.weight"},
        {"encoder.blocks.3.attn.out.bias", "enc.blocks.3.attn.out.bias"},
        {"encoder.blocks.31.mlp_ln.bias", "enc.blocks.31.norm_ffn.bias"},
        {"encoder.blocks.2.mlp.0.weight", "enc.blocks.2.ffn.fc1.weight"},
        {"encoder.blocks.2.mlp.2.bias", "enc.blocks.2.ffn.fc2.bias"},
        {"decoder.positional_embedding", "dec.pos_emb.weight"},
        {"decoder.token_embedding.weight", "dec.token_embd.weight"},
        {"decoder.ln.weight", "dec.final_norm.weight"},
        {"decoder.blocks.1.attn_ln.bias", "dec.blocks.1.norm_self.bias"},
        {"decoder.blocks.1.attn.query.weight", "dec.blocks.1.self_attn.q.weight"},
        {"decoder.blocks.1.attn.key.weight", "dec.blocks.1.self_attn.k.weight"},
        {"decoder.blocks.1.attn.out.bias", "dec.blocks.1.self_attn.out.bias"},
        {"decoder.blocks.1.cross_attn_ln.weight", "dec.blocks.1.norm_cross.weight"},
        {"decoder.blocks.1.cross_attn.value.bias", "dec.blocks.1.cross_attn.v.bias"},
        {"decoder.blocks.1.cross_attn.key.weight", "dec.blocks.1.cross_attn.k.weight"},
        {"decoder.blocks.1.mlp_ln.weight", "dec.blocks.1.norm_ffn.weight"},
        {"decoder.blocks.1.mlp.0.bias", "dec.blocks.1.ffn.fc1.bias"},
        {"decoder.blocks.1.mlp.2.weight", "dec.blocks.1.ffn.fc2.weight"},
    };
    char out[128];
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        bool ok = tr_ggml_bin_canonical_name(pairs[i][0], out, sizeof out);
        CHECK_MSG(ok && strcmp(out, pairs[i][1]) == 0, "%s -> %s", pairs[i][0],
                  ok ? out : "(unmapped)");
    }
    static const char *bad[] = {
        "encoder.blocks.0.attn.key.bias",
        "encoder.blocks.01.mlp.0.weight",
        "encoder.blocks..mlp.0.weight",
        "encoder.blocks.x.mlp.0.weight",
        "encoder.blocks.0.mlp.1.weight",
        "encoder.blocks.0.mlp.0.weights",
        "decoder.blocks.0.attn_ln",
        "encoder.conv3.weight",
        "decoder.ln.weight.x",
        "",
        "encoder.blocks.12345.mlp.0.weight",
        "decoder.blocks.-1.mlp.0.weight",
        "decoder.blocks.0.cross_attn.query",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(!tr_ggml_bin_canonical_name(bad[i], out, sizeof out), "%s", bad[i]);
    CHECK(!tr_ggml_bin_canonical_name("decoder.blocks.1.mlp.0.bias", out, 10)); /* too small */
}

/* ---- synthetic files ---- */

static void bin_header(gbuf *b, int32_t n_vocab, int32_t n_mels, int32_t layers) {
    gb_u32(b, 0x67676D6Cu);
    const int32_t hp[11] = {n_vocab, 1500, 384, 6, layers, 448, 384, 6, layers, n_mels, 1};
    for (int i = 0; i < 11; i++) gb_u32(b, (uint32_t)hp[i]);
    gb_u32(b, (uint32_t)n_mels), gb_u32(b, 201);
    for (int i = 0; i < n_mels * 201; i++) gb_u32(b, 0x3c23d70au); /* 0.01f */
}

static void bin_vocab(gbuf *b) {
    gb_u32(b, 3);
    gb_u32(b, 1), gb_bytes(b, "a", 1);
    gb_u32(b, 0);
    gb_u32(b, 4), gb_bytes(b, " the", 4);
}

static void bin_tensor(gbuf *b, const char *name, int32_t nd, const int32_t *ne, int32_t type,
                       size_t payload) {
    gb_u32(b, (uint32_t)nd), gb_u32(b, (uint32_t)strlen(name)), gb_u32(b, (uint32_t)type);
    for (int d = 0; d < nd; d++) gb_u32(b, (uint32_t)ne[d]);
    gb_bytes(b, name, strlen(name));
    for (size_t i = 0; i < payload; i++) gb_u8(b, (uint8_t)(i * 7 + 3));
}

static transcribe_status try_bin(const void *p, size_t n) {
    void *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, p, n);
    tr_ggml_bin *b = NULL;
    transcribe_status st = tr_ggml_bin_open_memory(copy, n, &b);
    if (st == TRANSCRIBE_OK) {
        for (int64_t i = 0; i < tr_ggml_bin_n_tensors(b); i++) {
            const tr_tensor *t = tr_ggml_bin_tensor_at(b, i);
            volatile uint8_t x = ((const uint8_t *)t->data)[t->nbytes - 1];
            (void)x;
        }
        tr_ggml_bin_close(b);
    } else {
        CHECK(b == NULL);
    }
    free(copy);
    return st;
}

static size_t make_valid(gbuf *b) {
    bin_header(b, 51864, 80, 4);
    bin_vocab(b);
    size_t tensors_at = b->len;
    bin_tensor(b, "encoder.conv1.bias", 2, (const int32_t[]){1, 384}, TR_F32, 384 * 4);
    bin_tensor(b, "encoder.blocks.3.attn.query.weight", 2, (const int32_t[]){64, 3}, TR_Q8_0,
               2 * 34 * 3);
    bin_tensor(b, "decoder.token_embedding.weight", 2, (const int32_t[]){8, 5}, TR_F16, 80);
    return tensors_at;
}

static void test_synthetic(void) {
    gbuf b = {0};
    size_t tensors_at = make_valid(&b);
    tr_ggml_bin *bin = NULL;
    CHECK(tr_ggml_bin_open_memory(b.p, b.len, &bin) == TRANSCRIBE_OK);
    if (bin) {
        CHECK(tr_ggml_bin_n_file_tensors(bin) == 3 && tr_ggml_bin_n_tensors(bin) == 5);
        CHECK(tr_ggml_bin_n_tokens(bin) == 3);
        size_t len;
        CHECK(strcmp(tr_ggml_bin_token(bin, 2, &len), " the") == 0 && len == 4);
        const tr_tensor *cb = tr_ggml_bin_find_tensor(bin, "enc.conv.0.bias");
        CHECK(cb && cb->n_dims == 1 && cb->ne[0] == 384 && cb->ne[1] == 1 && cb->nb1 == 384 * 4);
        const tr_tensor *q = tr_ggml_bin_find_tensor(bin, "enc.blocks.3.attn.q.weight");
        CHECK(q && q->type == TR_Q8_0 && q->ne[0] == 64 && q->ne[1] == 3 && q->nb1 == 68);
        const tr_tensor *e = tr_ggml_bin_find_tensor(bin, "dec.token_embd.weight");
        CHECK(e && e->type == TR_F16 && e->nbytes == 80);
        CHECK(strcmp(tr_ggml_bin_legacy_name(bin, 2), "decoder.token_embedding.weight") == 0);
        for (int64_t i = 0; i < 3; i++) {
            const tr_tensor *t = tr_ggml_bin_tensor_at(bin, i);
            CHECK((uintptr_t)t->data % 64 == 0);
            for (size_t k = 0; k < t->nbytes; k++) {
                if (((const uint8_t *)t->data)[k] != (uint8_t)(k * 7 + 3)) {
                    CHECK_MSG(0, "payload of %s differs at %zu", t->name, k);
                    break;
                }
            }
        }
        const int64_t ne[1] = {384};
        CHECK(tr_gguf_tensor_check(cb, TR_TYPES_F32, 1, ne));
        tr_ggml_bin_close(bin);
    }
    /* Every prefix is an error (a prefix ending between tensor records is a
     * valid file with fewer tensors). The 64 KiB filterbank is sampled. */
    int bad = 0, tried = 0;
    for (size_t n = 0; n < b.len; n += (n > 60 && n + 600 < tensors_at) ? 509 : 1) {
        transcribe_status st = try_bin(b.p, n);
        tried++;
        bool boundary = n == tensors_at || n == tensors_at + 12 + 8 + 18 + 384 * 4 ||
                        n == tensors_at + 12 + 8 + 18 + 384 * 4 + 12 + 8 + 34 + 204;
        if (boundary)
            CHECK_MSG(st == TRANSCRIBE_OK, "prefix %zu", n);
        else if (st == TRANSCRIBE_ERR_GGUF)
            bad++;
        else
            CHECK_MSG(0, "prefix %zu (tensors at %zu) gave %d", n, tensors_at, (int)st);
    }
    CHECK_MSG(bad == tried - 3, "%d of %d prefixes rejected", bad, tried);
    /* byte corruption in the non-filter parts: never a crash */
    uint8_t *m = malloc(b.len);
    for (size_t i = 0; i < b.len; i += i < 60 || i >= tensors_at ? 1 : 4001) {
        static const uint8_t vals[] = {0x00, 0xff, 0x7f, 0x80};
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(m, b.p, b.len);
            m[i] = vals[v];
            transcribe_status st = try_bin(m, b.len);
            CHECK(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_GGUF ||
                  st == TRANSCRIBE_ERR_UNSUPPORTED_ARCH);
        }
    }
    free(m);
    gb_free(&b);
}

static void expect_status(gbuf *b, transcribe_status want, const char *what) {
    transcribe_status st = try_bin(b->p, b->len);
    CHECK_MSG(st == want, "%s: got %d want %d", what, (int)st, (int)want);
    gb_free(b);
}

static void test_malformed(void) {
    gbuf b = {0};
    /* geometry gate */
    bin_header(&b, 1000, 80, 4), bin_vocab(&b);
    expect_status(&b, TRANSCRIBE_ERR_UNSUPPORTED_ARCH, "n_vocab");
    bin_header(&b, 51865, 40, 4), bin_vocab(&b);
    expect_status(&b, TRANSCRIBE_ERR_UNSUPPORTED_ARCH, "n_mels");
    bin_header(&b, 51865, 80, 0), bin_vocab(&b);
    expect_status(&b, TRANSCRIBE_ERR_UNSUPPORTED_ARCH, "layers");
    bin_header(&b, 51865, 80, 65), bin_vocab(&b);
    expect_status(&b, TRANSCRIBE_ERR_UNSUPPORTED_ARCH, "layers");
    gb_u32(&b, 0x67676D6Cu);
    const int32_t hp[11] = {51865, 1500, 384, 7, 4, 448, 384, 6, 4, 80, 1};
    for (int i = 0; i < 11; i++) gb_u32(&b, (uint32_t)hp[i]);
    expect_status(&b, TRANSCRIBE_ERR_UNSUPPORTED_ARCH, "state % head");
    /* magic */
    gb_u32(&b, 0x46554747u);
    expect_status(&b, TRANSCRIBE_ERR_GGUF, "magic");
    /* mel header mismatch */
    gb_u32(&b, 0x67676D6Cu);
    const int32_t hp2[11] = {51865, 1500, 384, 6, 4, 448, 384, 6, 4, 80, 1};
    for (int i = 0; i < 11; i++) gb_u32(&b, (uint32_t)hp2[i]);
    gb_u32(&b, 80), gb_u32(&b, 200);
    expect_status(&b, TRANSCRIBE_ERR_GGUF, "n_freq");
    /* vocab count / token length */
    const uint32_t counts[] = {0, 51865 + 65, 0x80000000u, UINT32_MAX};
    for (int i = 0; i < 4; i++) {
        bin_header(&b, 51865, 80, 4), gb_u32(&b, counts[i]);
        expect_status(&b, TRANSCRIBE_ERR_GGUF, "vocab count");
    }
    bin_header(&b, 51865, 80, 4), gb_u32(&b, 1), gb_u32(&b, 1025);
    for (int i = 0; i < 1025; i++) gb_u8(&b, 'x');
    expect_status(&b, TRANSCRIBE_ERR_GGUF, "token length");
    bin_header(&b, 51865, 80, 4), gb_u32(&b, 2), gb_u32(&b, 1), gb_u8(&b, 'x'), gb_u32(&b, 9);
    expect_status(&b, TRANSCRIBE_ERR_GGUF, "token past EOF");
    /* tensor records */
    const int32_t ne2[2] = {64, 2};
    struct {
        const char *name;
        int32_t nd, type;
        const int32_t *ne;
        size_t payload;
    } cases[] = {
        {"encoder.conv1.weight", 0, TR_F32, ne2, 512},
        {"encoder.conv1.weight", 5, TR_F32, (const int32_t[]){1, 1, 1, 1, 1}, 4},
        {"encoder.conv1.weight", 2, 4, ne2, 512},
        {"encoder.conv1.weight", 2, TR_Q8_1, ne2, 512},
        {"encoder.conv1.weight", 2, 31, ne2, 512},
        {"encoder.conv1.weight", 2, -1, ne2, 512},
        {"encoder.conv1.weight", 2, TR_Q4_K, ne2, 512},
        {"encoder.conv1.weight", 2, TR_F32, (const int32_t[]){0, 2}, 512},
        {"encoder.conv1.weight", 2, TR_F32, (const int32_t[]){-64, 2}, 512},
        {"encoder.conv1.weight", 2, TR_F32, ne2, 511},
        {"encoder.blocks.0.attn.key.bias", 2, TR_F32, ne2, 512},
        {"tinydiarize.head.weight", 2, TR_F32, ne2, 512},
        {"encoder.blocks.4.mlp.0.weight", 2, TR_F32, ne2, 512},
        {"decoder.blocks.9.mlp.0.weight", 2, TR_F32, ne2, 512},
        {"encoder.conv1.weight", 4, TR_F32,
         (const int32_t[]){0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff}, 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bin_header(&b, 51865, 80, 4), bin_vocab(&b);
        bin_tensor(&b, cases[i].name, cases[i].nd, cases[i].ne, cases[i].type, cases[i].payload);
        char what[64];
        snprintf(what, sizeof what, "tensor case %zu", i);
        expect_status(&b, TRANSCRIBE_ERR_GGUF, what);
    }
    /* name length 0 / 257 / past EOF; NUL inside the name */
    const uint32_t name_lens[] = {0, 257, 100000};
    for (int i = 0; i < 3; i++) {
        bin_header(&b, 51865, 80, 4), bin_vocab(&b);
        gb_u32(&b, 1), gb_u32(&b, name_lens[i]), gb_u32(&b, TR_F32), gb_u32(&b, 4);
        for (int k = 0; k < 300; k++) gb_u8(&b, 'a');
        expect_status(&b, TRANSCRIBE_ERR_GGUF, "name length");
    }
    bin_header(&b, 51865, 80, 4), bin_vocab(&b);
    gb_u32(&b, 1), gb_u32(&b, 9), gb_u32(&b, TR_F32), gb_u32(&b, 1), gb_bytes(&b, "decoder\0x", 9);
    gb_u32(&b, 0);
    expect_status(&b, TRANSCRIBE_ERR_GGUF, "NUL in name");
    /* duplicate tensors (also through two legacy names: impossible, but the
     * same legacy name twice is) */
    bin_header(&b, 51865, 80, 4), bin_vocab(&b);
    bin_tensor(&b, "decoder.ln.bias", 1, (const int32_t[]){4}, TR_F32, 16);
    bin_tensor(&b, "decoder.ln.bias", 1, (const int32_t[]){4}, TR_F32, 16);
    expect_status(&b, TRANSCRIBE_ERR_GGUF, "duplicate");
    /* trailing garbage shorter than a record header */
    bin_header(&b, 51865, 80, 4), bin_vocab(&b), gb_u32(&b, 1);
    expect_status(&b, TRANSCRIBE_ERR_GGUF, "trailing bytes");
    CHECK(tr_ggml_bin_open(TR_CORPUS_DIR "/vocab/absent.bin", &(tr_ggml_bin *){NULL}) ==
          TRANSCRIBE_ERR_FILE_NOT_FOUND);
    CHECK(tr_ggml_bin_sniff("lmgg", 4) && !tr_ggml_bin_sniff("GGUF", 4) &&
          !tr_ggml_bin_sniff("lmg", 3));
}

int main(void) {
    test_vocab_file("whisper-en-vocab.ggml.bin", 51864);
    test_vocab_file("whisper-multilingual-vocab.ggml.bin", 51865);
    test_derived();
    test_names();
    test_synthetic();
    test_malformed();
    return TEST_DONE();
}
