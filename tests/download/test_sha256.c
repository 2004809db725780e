/* tools/download/sha256.c against the FIPS 180-4 examples, fed whole and in
 * uneven pieces (the padding at every length around a block's end), and the
 * catalogue module's name parsing and closest names (tools/download/catalog.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "sha256.h"

static int fails = 0;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                           \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static void hex_of(const void *p, size_t n, size_t piece, char out[65]) {
    tdl_sha256 s;
    tdl_sha256_init(&s);
    for (size_t off = 0; off < n; off += piece)
        tdl_sha256_update(&s, (const char *)p + off, n - off < piece ? n - off : piece);
    tdl_sha256_hex(&s, out);
}

int main(void) {
    char h[65];
    hex_of("", 0, 1, h);
    CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    for (size_t piece = 1; piece <= 3; piece++) {
        hex_of("abc", 3, piece, h);
        CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    }
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    for (size_t piece = 1; piece <= 64; piece += 7) {
        hex_of(two, strlen(two), piece, h);
        CHECK(!strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    }
    char *million = malloc(1000000);
    CHECK(million != NULL);
    if (million) {
        memset(million, 'a', 1000000);
        hex_of(million, 1000000, 4099, h);
        CHECK(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
        free(million);
    }

    /* the built-in catalogue: names, NAME-QUANT, NAME:QUANT, file names, closest */
    tdl_catalog c;
    char err[600], q[32], file[256];
    unsetenv("TRANSCRIBE_CATALOGUE");
    CHECK(tdl_catalog_load(&c, err, sizeof err));
    if (c.n > 0) {
        const tdl_model *m = tdl_catalog_parse_ref(&c, "Parakeet-TDT-0.6b-v3", q, sizeof q);
        CHECK(m && !strcmp(m->repository, "handy-computer/parakeet-tdt-0.6b-v3-gguf") && !q[0]);
        m = tdl_catalog_parse_ref(&c, "whisper-base.en-q4_k_m", q, sizeof q);
        CHECK(m && !strcmp(m->name, "whisper-base.en") && !strcmp(q, "Q4_K_M"));
        m = tdl_catalog_parse_ref(&c, "whisper-large-v3-turbo:F16", q, sizeof q);
        CHECK(m && !strcmp(m->name, "whisper-large-v3-turbo") && !strcmp(q, "F16"));
        m = tdl_catalog_parse_ref(&c, "Qwen3-ASR-0.6B-BF16.gguf", q, sizeof q);
        CHECK(m && !strcmp(m->name, "qwen3-asr-0.6b") && !strcmp(q, "BF16"));
        CHECK(m && tdl_model_file(m, q, file, sizeof file) &&
              !strcmp(file, "Qwen3-ASR-0.6B-BF16.gguf"));
        CHECK(!tdl_catalog_parse_ref(&c, "whisper-large-v3-F32", q, sizeof q)); /* not published */
        CHECK(!tdl_catalog_parse_ref(&c, "whisper-base-Q9_9", q, sizeof q));
        const tdl_model *near[3];
        int k = tdl_catalog_closest(&c, "wisper-tiny", near, 3);
        CHECK(k >= 1 && !strcmp(near[0]->name, "whisper-tiny"));
        k = tdl_catalog_closest(&c, "zzzzzzzzzzzzzzzzzzzz", near, 3);
        CHECK(k == 0);
        char size[32];
        m = tdl_catalog_find(&c, "sensevoicesmall");
        tdl_model_size(m, "Q8_0", size, sizeof size);
        CHECK(!strcmp(size, "253 MB")); /* 241MiB in the catalogue: one unit for all */
        m = tdl_catalog_find(&c, "granite-speech-4.1-2b-nar"); /* 2.33GiB */
        tdl_model_size(m, "Q8_0", size, sizeof size);
        CHECK(!strcmp(size, "2.50 GB"));
        m = tdl_catalog_find(&c, "canary-qwen-2.5b"); /* 2.61GB */
        tdl_model_size(m, "Q8_0", size, sizeof size);
        CHECK(!strcmp(size, "2.61 GB"));
        m = tdl_catalog_find(&c, "whisper-tiny");
        tdl_model_size(m, "Q8_0", size, sizeof size);
        CHECK(!strcmp(size, "?"));
        tdl_catalog_free(&c);
    }
    /* the cache folder's order */
    char dir[512];
    setenv("TRANSCRIBE_MODEL_DIR", "/m/", 1);
    CHECK(tdl_cache_dir(NULL, dir, sizeof dir) && !strcmp(dir, "/m"));
    CHECK(tdl_cache_dir("/over", dir, sizeof dir) && !strcmp(dir, "/over"));
    unsetenv("TRANSCRIBE_MODEL_DIR");
    setenv("XDG_CACHE_HOME", "/x", 1);
    CHECK(tdl_cache_dir(NULL, dir, sizeof dir) && !strcmp(dir, "/x/transcribe"));
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/h", 1);
    CHECK(tdl_cache_dir(NULL, dir, sizeof dir) && !strcmp(dir, "/h/.cache/transcribe"));
    printf("%s\n", fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}
