/* `info`: metadata and tensor table. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"
#include "inspect_model.h"
#include "api/tool_hooks.h"
#include "tensor/dtype.h"

#define ARRAY_SHOWN 8  /* elements printed per array */
#define STR_SHOWN   96 /* bytes printed per string */

static void print_str(const char *s) {
    putchar('"');
    size_t n = strlen(s);
    for (size_t i = 0; i < n && i < STR_SHOWN; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
    if (n > STR_SHOWN) printf("...(%zu bytes)", n);
}

/* One element of a numeric type at p (little-endian, unaligned). */
static void print_scalar(gguf_vtype t, const uint8_t *p) {
    union {
        uint8_t u8;
        int8_t i8;
        uint16_t u16;
        int16_t i16;
        uint32_t u32;
        int32_t i32;
        uint64_t u64;
        int64_t i64;
        float f32;
        double f64;
    } v;
    switch (t) {
    case GGUF_T_UINT8:
        memcpy(&v.u8, p, 1), printf("%u", v.u8);
        break;
    case GGUF_T_INT8:
        memcpy(&v.i8, p, 1), printf("%d", v.i8);
        break;
    case GGUF_T_UINT16:
        memcpy(&v.u16, p, 2), printf("%u", v.u16);
        break;
    case GGUF_T_INT16:
        memcpy(&v.i16, p, 2), printf("%d", v.i16);
        break;
    case GGUF_T_UINT32:
        memcpy(&v.u32, p, 4), printf("%" PRIu32, v.u32);
        break;
    case GGUF_T_INT32:
        memcpy(&v.i32, p, 4), printf("%" PRId32, v.i32);
        break;
    case GGUF_T_UINT64:
        memcpy(&v.u64, p, 8), printf("%" PRIu64, v.u64);
        break;
    case GGUF_T_INT64:
        memcpy(&v.i64, p, 8), printf("%" PRId64, v.i64);
        break;
    case GGUF_T_FLOAT32:
        memcpy(&v.f32, p, 4), printf("%.9g", v.f32);
        break;
    case GGUF_T_FLOAT64:
        memcpy(&v.f64, p, 8), printf("%.17g", v.f64);
        break;
    case GGUF_T_BOOL:
        fputs(p[0] ? "true" : "false", stdout);
        break;
    default:
        fputs("?", stdout);
    }
}

static void print_kv(const gguf_file *f, int64_t i) {
    gguf_vtype t = tr_gguf_kv_type(f, i);
    printf("  %-44s ", tr_gguf_key_name(f, i));
    if (t == GGUF_T_STRING) {
        const char *s = NULL;
        tr_gguf_get_str(f, tr_gguf_key_name(f, i), &s);
        printf("%-8s ", "STRING");
        print_str(s ? s : "");
    } else if (t == GGUF_T_ARRAY) {
        gguf_vtype et = tr_gguf_kv_arr_type(f, i);
        uint64_t n = tr_gguf_kv_arr_n(f, i);
        char label[32];
        snprintf(label, sizeof label, "%s[%" PRIu64 "]", tr_gguf_vtype_name(et), n);
        printf("%-8s [", label);
        const uint8_t *raw = tr_gguf_kv_arr_data(f, i);
        for (uint64_t j = 0; j < n && j < ARRAY_SHOWN; j++) {
            if (j) fputs(", ", stdout);
            if (et == GGUF_T_STRING)
                print_str(tr_gguf_kv_arr_str(f, i, j));
            else if (tr_gguf_vtype_size(et))
                print_scalar(et, raw + j * tr_gguf_vtype_size(et));
            else
                fputs("[...]", stdout);
        }
        if (n > ARRAY_SHOWN) printf(", ... %" PRIu64 " more", n - ARRAY_SHOWN);
        putchar(']');
    } else {
        size_t len;
        const uint8_t *raw = tr_gguf_kv_raw(f, i, &len);
        printf("%-8s ", tr_gguf_vtype_name(t));
        print_scalar(t, raw);
    }
    putchar('\n');
}

static void print_tensors(const inspect_model *m) {
    int64_t n = inspect_model_n_tensors(m);
    size_t total = 0;
    printf("tensors (%" PRId64 "):\n", n);
    printf("  %-5s %-44s %-5s %-28s %s\n", "#", "name", "dtype", "ne (ggml order)", "bytes");
    for (int64_t i = 0; i < n; i++) {
        const tr_tensor *t = inspect_model_tensor_at(m, i);
        char shape[96];
        int o = snprintf(shape, sizeof shape, "[");
        for (int d = 0; d < t->n_dims; d++)
            o += snprintf(shape + o, sizeof shape - (size_t)o, d ? ", %" PRId64 : "%" PRId64,
                          t->ne[d]);
        snprintf(shape + o, sizeof shape - (size_t)o, "]");
        printf("  %-5" PRId64 " %-44s %-5s %-28s %zu\n", i, t->name, tr_type_name(t->type), shape,
               t->nbytes);
        total += t->nbytes;
    }
    printf("total tensor bytes: %zu (%.1f MiB)\n", total, total / 1048576.0);
}

static void info_bin(const inspect_model *m) {
    const tr_ggml_bin *b = m->bin;
    const tr_ggml_bin_hparams *h = tr_ggml_bin_hparams_of(b);
    char derived[256]; /* what the claiming family says the file implies */
    bool have_derived = tr_tool_bin_summary(m->head, m->n_head, h, derived, sizeof derived);
    printf("format: legacy whisper.cpp .bin\n");
    printf("hparams:\n");
    printf("  n_vocab %d, n_mels %d, ftype %d\n", h->n_vocab, h->n_mels, h->ftype);
    printf("  audio: ctx %d, state %d, heads %d, layers %d\n", h->n_audio_ctx, h->n_audio_state,
           h->n_audio_head, h->n_audio_layer);
    printf("  text:  ctx %d, state %d, heads %d, layers %d\n", h->n_text_ctx, h->n_text_state,
           h->n_text_head, h->n_text_layer);
    if (have_derived) printf("derived: %s\n", derived);
    int32_t nt = tr_ggml_bin_n_tokens(b);
    printf("vocabulary: %d entries [", nt);
    for (int32_t i = 0; i < nt && i < ARRAY_SHOWN; i++) {
        if (i) fputs(", ", stdout);
        print_str(tr_ggml_bin_token(b, i, NULL));
    }
    printf("%s]\n", nt > ARRAY_SHOWN ? ", ..." : "");
    printf("file tensors: %" PRId64 " (plus 2 synthesised front-end tensors)\n",
           tr_ggml_bin_n_file_tensors(b));
}

int inspect_info(int argc, char **argv) {
    if (argc != 1) {
        fprintf(stderr, "usage: transcribe-inspect info MODEL\n");
        return 2;
    }
    inspect_model m;
    if (inspect_model_open(argv[0], &m)) return 1;
    printf("file: %s\n", argv[0]);
    if (m.gguf) {
        printf("format: GGUF v%u, alignment %zu\n", tr_gguf_version(m.gguf),
               tr_gguf_alignment(m.gguf));
        printf("metadata (%" PRId64 " keys):\n", tr_gguf_n_kv(m.gguf));
        for (int64_t i = 0; i < tr_gguf_n_kv(m.gguf); i++) print_kv(m.gguf, i);
    } else {
        info_bin(&m);
    }
    print_tensors(&m);
    inspect_model_close(&m);
    return 0;
}
