/* transcribe-quantize: re-encodes every tensor of a GGUF model according to
 * a preset (docs/cli.md §7). Metadata is copied unchanged except
 * general.file_type; the bulky tokenizer arrays go to the end of the KV list. */
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "gguf/ggml_bin.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "policy.h"
#include "same_file.h"
#include "tensor/dtype.h"

static const char *const k_bulk_keys[] = {
    "tokenizer.ggml.tokens", "tokenizer.ggml.scores",   "tokenizer.ggml.token_type",
    "tokenizer.ggml.merges", "tokenizer.chat_template",
};
enum { N_BULK = sizeof k_bulk_keys / sizeof k_bulk_keys[0] };

/* --help asked for it (stdout); a mistake gets it on stderr. */
static void usage(FILE *f, const char *argv0) {
    fprintf(f, "usage: %s INPUT.gguf OUTPUT.gguf --quant PRESET\n\n", argv0);
    fprintf(f, "  --quant PRESET   one of: %s\n", qp_preset_names());
}

typedef struct type_stats {
    int count[TR_TYPE_COUNT];
    double bytes[TR_TYPE_COUNT];
} type_stats;

static void print_stats(const char *title, const char *total_label, const type_stats *s) {
    printf("%s\n  %-8s %8s %10s\n", title, "type", "tensors", "MB");
    int n = 0;
    double b = 0;
    for (int t = 0; t < TR_TYPE_COUNT; t++) {
        if (!s->count[t]) continue;
        printf("  %-8s %8d %10.2f\n", tr_type_name(t), s->count[t], s->bytes[t] / 1e6);
        n += s->count[t];
        b += s->bytes[t];
    }
    printf("  %-8s %8d %10.2f\n", total_label, n, b / 1e6);
}

static bool is_bulk_key(const char *key) {
    for (int i = 0; i < N_BULK; i++) {
        if (strcmp(key, k_bulk_keys[i]) == 0) return true;
    }
    return false;
}

static bool copy_metadata(gguf_writer *w, const gguf_file *in, const qp_preset *p) {
    int64_t n = tr_gguf_n_kv(in);
    for (int64_t i = 0; i < n; i++) {
        const char *key = tr_gguf_key_name(in, i);
        if (is_bulk_key(key)) continue;
        if (strcmp(key, "general.file_type") == 0) {
            if (!tr_gguf_writer_set_u32(w, key, p->file_type)) return false;
            continue;
        }
        if (!tr_gguf_writer_copy_kv(w, in, i)) return false;
    }
    if (tr_gguf_find_key(in, "general.file_type") < 0 &&
        !tr_gguf_writer_set_u32(w, "general.file_type", p->file_type)) {
        return false;
    }
    for (int b = 0; b < N_BULK; b++) {
        int64_t i = tr_gguf_find_key(in, k_bulk_keys[b]);
        if (i >= 0 && !tr_gguf_writer_copy_kv(w, in, i)) return false;
    }
    return true;
}

/* Tensors the preset could not give its type, grouped by (wanted type,
 * written type, row length): the fallback is reported, never silent. */
typedef struct fallback_group {
    int wanted, got;
    int64_t ne0;
    int count;
    const char *first; /* a tensor name, for the message */
} fallback_group;

enum { MAX_FALLBACK_GROUPS = 64 };

typedef struct fallbacks {
    fallback_group g[MAX_FALLBACK_GROUPS];
    int n, total, ungrouped;
} fallbacks;

static void note_fallback(fallbacks *fb, int wanted, int got, int64_t ne0, const char *name) {
    fb->total++;
    for (int i = 0; i < fb->n; i++) {
        fallback_group *g = &fb->g[i];
        if (g->wanted == wanted && g->got == got && g->ne0 == ne0) {
            g->count++;
            return;
        }
    }
    if (fb->n == MAX_FALLBACK_GROUPS) {
        fb->ungrouped++;
        return;
    }
    fb->g[fb->n++] = (fallback_group){wanted, got, ne0, 1, name};
}

static void print_fallbacks(const fallbacks *fb, const qp_preset *p) {
    if (fb->total == 0) return;
    printf("fallback: %d tensors could not take the preset's type (%s keeps a tensor's rows in "
           "whole blocks):\n",
           fb->total, p->name);
    for (int i = 0; i < fb->n; i++) {
        const fallback_group *g = &fb->g[i];
        printf("  %d x %s -> %s: rows of %lld values are not a multiple of %s's %d-value block "
               "(e.g. %s)\n",
               g->count, tr_type_name(g->wanted), tr_type_name(g->got), (long long)g->ne0,
               tr_type_name(g->wanted), tr_type_block(g->wanted), g->first);
    }
    if (fb->ungrouped) printf("  %d more in other groups\n", fb->ungrouped);
}

/* Converts one tensor to `type` into a malloc'ed buffer (rows at a time). */
static void *convert_tensor(const tr_tensor *t, int type) {
    int64_t ne0 = t->ne[0];
    int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
    size_t out_row = tr_row_bytes(type, ne0);
    if (out_row == 0) return NULL;
    unsigned char *out = malloc(out_row * (size_t)rows);
    float *tmp = malloc(sizeof(float) * (size_t)ne0);
    if (!out || !tmp) {
        free(out);
        free(tmp);
        return NULL;
    }
    const unsigned char *src = t->data;
    for (int64_t r = 0; r < rows; r++) {
        tr_dequantize_row(t->type, src + (size_t)r * t->nb1, tmp, ne0);
        if (!tr_quantize_row(type, tmp, out + (size_t)r * out_row, ne0)) {
            free(out);
            free(tmp);
            return NULL;
        }
    }
    free(tmp);
    return out;
}

/* Whether the file starts with the legacy whisper.cpp magic ("lmgg"). */
static bool is_ggml_bin(const char *path) {
    unsigned char head[4];
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool bin = fread(head, 1, 4, f) == 4 && tr_ggml_bin_sniff(head, 4);
    fclose(f);
    return bin;
}

static int quantize(const char *in_path, const char *out_path, const qp_preset *p) {
    printf("transcribe-quantize: %s -> %s (preset %s)\n", in_path, out_path, p->name);
    if (is_ggml_bin(in_path)) {
        fprintf(stderr,
                "transcribe-quantize: %s is a legacy whisper.cpp .bin file; this tool reads and "
                "writes GGUF only.\n"
                "  A .bin header has no GGUF metadata (model name, languages, special-token "
                "table, front-end\n"
                "  parameters) to copy, so it is not converted. `transcribe -m %s` runs it "
                "as it is;\n"
                "  to quantize, start from the model's GGUF file (transcribe.cpp publishes every "
                "Whisper size).\n",
                in_path, in_path);
        return 1;
    }
    gguf_file *in = NULL;
    transcribe_status ost = tr_gguf_open(in_path, &in);
    if (ost != TRANSCRIBE_OK) {
        fprintf(stderr, "transcribe-quantize: cannot read %s: %s\n", in_path,
                ost == TRANSCRIBE_ERR_FILE_NOT_FOUND ? "no such file" : "not a valid GGUF file");
        return 1;
    }
    int64_t n = tr_gguf_n_tensors(in);
    printf("input: %lld tensors\n", (long long)n);
    gguf_writer *w = tr_gguf_writer_create();
    type_stats sin = {{0}, {0}}, sout = {{0}, {0}};
    int requantized = 0, copied = 0, requant_q = 0, rc = 1;
    fallbacks fb = {0};
    if (!w || !copy_metadata(w, in, p)) {
        fprintf(stderr, "transcribe-quantize: out of memory copying metadata\n");
        goto done;
    }
    double plan = 0;
    for (int64_t i = 0; i < n; i++) {
        const tr_tensor *t = tr_gguf_tensor_at(in, i);
        int type = qp_choose_type(p, t->name, t->ne[0]);
        plan += (double)tr_row_bytes(type, t->ne[0]) * (double)(t->ne[1] * t->ne[2] * t->ne[3]);
    }
    printf("plan: %.2f MB tensor data, %.2f MB context buffer\n", plan / 1e6, plan / 1e6);
    for (int64_t i = 0; i < n; i++) {
        const tr_tensor *t = tr_gguf_tensor_at(in, i);
        int type = qp_choose_type(p, t->name, t->ne[0]);
        int wanted = qp_wanted_type(p, t->name);
        if (type != wanted) note_fallback(&fb, wanted, type, t->ne[0], t->name);
        sin.count[t->type]++;
        sin.bytes[t->type] += (double)t->nbytes;
        const void *data = t->data;
        void *owned = NULL;
        if (type == t->type) {
            copied++;
        } else {
            if (t->type != TR_F32 && t->type != TR_F16 && t->type != TR_BF16) requant_q++;
            if (!tr_type_valid(t->type)) {
                fprintf(stderr, "transcribe-quantize: tensor '%s' has unsupported type %s\n",
                        t->name, tr_type_name(t->type));
                goto done;
            }
            owned = convert_tensor(t, type);
            if (!owned) {
                fprintf(stderr, "transcribe-quantize: cannot convert '%s' to %s\n", t->name,
                        tr_type_name(type));
                goto done;
            }
            data = owned;
            requantized++;
        }
        size_t bytes = tr_row_bytes(type, t->ne[0]) * (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
        sout.count[type]++;
        sout.bytes[type] += (double)bytes;
        bool ok = tr_gguf_writer_add_tensor(w, t->name, type, t->n_dims, t->ne, data);
        free(owned);
        if (!ok) {
            fprintf(stderr, "transcribe-quantize: out of memory adding '%s'\n", t->name);
            goto done;
        }
    }
    print_stats("input tensor types:", "total (input)", &sin);
    print_stats("output tensor types:", "total (output)", &sout);
    printf("processed: %d requantized, %d copied\n", requantized, copied);
    if (requant_q > 0) {
        fprintf(stderr,
                "transcribe-quantize: warning: %d of the requantized tensors were already "
                "quantized in %s; their rounding adds to the new one (start from the F16 or F32 "
                "file where there is one)\n",
                requant_q, in_path);
    }
    print_fallbacks(&fb, p);
    if (tr_gguf_writer_write(w, out_path) != TRANSCRIBE_OK) {
        fprintf(stderr, "transcribe-quantize: cannot write %s\n", out_path);
        goto done;
    }
    printf("done. wrote %s\n", out_path);
    rc = 0;
done:
    tr_gguf_writer_free(w);
    tr_gguf_close(in);
    return rc;
}

int main(int argc, char **argv) {
    const char *pos[2] = {NULL, NULL};
    int n_pos = 0;
    const char *preset = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout, argv[0]);
            return 0;
        }
        if (strcmp(a, "--quant") == 0 || strcmp(a, "-q") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "transcribe-quantize: %s needs a preset\n", a);
                usage(stderr, argv[0]);
                return 2;
            }
            preset = argv[++i];
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "transcribe-quantize: unknown option %s\n", a);
            usage(stderr, argv[0]);
            return 2;
        }
        if (n_pos >= 2) {
            fprintf(stderr, "transcribe-quantize: unexpected argument %s\n", a);
            usage(stderr, argv[0]);
            return 2;
        }
        pos[n_pos++] = a;
    }
    if (n_pos < 2 || !preset) {
        fprintf(stderr, "transcribe-quantize: %s\n",
                n_pos < 2 ? "give an input and an output file" : "give --quant PRESET");
        usage(stderr, argv[0]);
        return 2;
    }
    const qp_preset *p = qp_find_preset(preset);
    if (!p) {
        fprintf(stderr, "transcribe-quantize: unknown preset %s\n", preset);
        usage(stderr, argv[0]);
        return 2;
    }
    /* the input is read through a mapping while the output is written:
     * writing over it (the same path or another name of the same file)
     * would destroy the model being read, so that is refused first */
    if (tool_same_file(pos[0], pos[1])) {
        fprintf(stderr,
                "transcribe-quantize: %s and %s are the same file; the output must not "
                "overwrite the model it reads\n",
                pos[0], pos[1]);
        return 2;
    }
    /* the output's folder: checked before the work, not after it */
    char dir[4096];
    const char *slash = strrchr(pos[1], '/');
    if (slash && (size_t)(slash - pos[1]) < sizeof dir) {
        size_t n = slash == pos[1] ? 1 : (size_t)(slash - pos[1]);
        memcpy(dir, pos[1], n);
        dir[n] = 0;
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    if (access(dir, W_OK) != 0) {
        fprintf(stderr, "transcribe-quantize: cannot write %s: folder %s: %s\n", pos[1], dir,
                strerror(errno));
        return 1;
    }
    return quantize(pos[0], pos[1], p);
}
