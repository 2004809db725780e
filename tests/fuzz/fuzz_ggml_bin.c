/* libFuzzer harness for the legacy whisper.cpp .bin parser. A valid file
 * needs a 64 KiB filterbank before anything interesting, which random
 * mutation rarely keeps intact, so inputs starting with byte 'S' get a
 * synthesised valid header + filterbank and the rest of the input is the
 * vocabulary and tensor stream; other inputs are parsed as they are. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_bin.h"
#include "models/whisper/whisper_bin_info.h"
#include "util/log.h"

static void quiet(transcribe_log_level level, const char *msg, void *user) {
    (void)level, (void)msg, (void)user;
}

#define HEADER_BYTES (4 + 11 * 4 + 8 + 80 * 201 * 4)

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void walk(const tr_ggml_bin *b) {
    volatile size_t sink = 0;
    int n_mel, n_freq;
    const float *fb = tr_ggml_bin_filters(b, &n_mel, &n_freq);
    sink += (size_t)(fb[n_mel * n_freq - 1] != 0);
    for (int32_t i = 0; i < tr_ggml_bin_n_tokens(b); i++) {
        size_t len;
        const char *t = tr_ggml_bin_token(b, i, &len);
        if (!t || t[len] != 0) abort();
        sink += len;
    }
    for (int64_t i = 0; i < tr_ggml_bin_n_tensors(b); i++) {
        const tr_tensor *t = tr_ggml_bin_tensor_at(b, i);
        if (tr_ggml_bin_find_tensor(b, t->name) != t) abort();
        const uint8_t *d = t->data;
        sink += d[0] + d[t->nbytes - 1];
    }
    tr_whisper_bin_info info;
    tr_whisper_bin_info_from(tr_ggml_bin_hparams_of(b), &info);
    sink += (size_t)info.timestamp_begin;
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int init;
    if (!init) {
        tr_log_set(quiet, NULL);
        init = 1;
    }
    const uint8_t *img = data;
    uint8_t *owned = NULL;
    size_t n = size;
    if (size >= 2 && data[0] == 'S') {
        /* byte 1 picks the geometry: English/multilingual, layer count */
        n = HEADER_BYTES + size - 2;
        owned = calloc(1, n);
        if (!owned) return 0;
        const int32_t layers = 1 + (data[1] & 7);
        const int32_t hp[11] = {
            (data[1] & 8) ? 51865 : 51864, 1500, 384, 6, layers, 448, 384, 6, layers, 80, 1};
        put32(owned, TR_GGML_BIN_MAGIC);
        for (int i = 0; i < 11; i++) put32(owned + 4 + 4 * i, (uint32_t)hp[i]);
        put32(owned + 48, 80), put32(owned + 52, 201);
        memcpy(owned + HEADER_BYTES, data + 2, size - 2);
        img = owned;
    }
    tr_ggml_bin *b = NULL;
    if (tr_ggml_bin_open_memory(img, n, &b) == TRANSCRIBE_OK) {
        walk(b);
        tr_ggml_bin_close(b);
    } else if (b) {
        abort();
    }
    free(owned);
    return 0;
}
