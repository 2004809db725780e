/* Legacy whisper.cpp .bin parser (docs/formats/gguf.md §11). Two passes over the
 * tensor records: the first validates every record against the file size
 * and sums the aligned payload sizes; the second copies payloads into one
 * aligned arena. Nothing is allocated that the file's size does not justify. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/ggml_bin.h"
#include "gguf/gguf_internal.h"
#include "tensor/dtype.h"
#include "util/log.h"
#include "util/vec.h"

#define BIN_MAX_TOKEN   1024
#define BIN_MAX_NAME    256
#define BIN_N_FREQ      201
#define BIN_WIN         400
#define BIN_ARENA_ALIGN 64

typedef struct {
    tr_tensor t;
    char *legacy;
    size_t src; /* payload offset in the image (file tensors) */
} bin_tensor;

struct tr_ggml_bin {
    tr_ggml_bin_hparams hp;
    int n_mel, n_freq;
    float *filters; /* [n_mel][n_freq] */
    float *window;  /* [400] periodic Hann */
    int32_t n_tokens;
    char **tokens; /* one block: table then strings */
    size_t *token_len;
    int64_t n_tensors, n_file_tensors, cap_tensors;
    bin_tensor *tensors;
    gguf_index index;
    void *arena;
};

typedef struct {
    const uint8_t *p;
    size_t size, pos;
} cursor;

static bool rd_i32(cursor *c, int32_t *v) {
    if (c->size - c->pos < 4) return false;
    const uint8_t *b = c->p + c->pos;
    *v = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                   (uint32_t)b[3] << 24);
    c->pos += 4;
    return true;
}

bool tr_ggml_bin_sniff(const void *head, size_t n) {
    const uint8_t *b = head;
    return n >= 4 && b[0] == 0x6c && b[1] == 0x6d && b[2] == 0x67 && b[3] == 0x67;
}

static bool geometry_ok(const tr_ggml_bin_hparams *h) {
    int ft = h->ftype % 1000;
    return h->n_audio_layer >= 1 && h->n_audio_layer <= 64 && h->n_text_layer >= 1 &&
           h->n_text_layer <= 64 && (h->n_mels == 80 || h->n_mels == 128) && h->n_vocab >= 51864 &&
           h->n_vocab <= 51866 && h->n_audio_state > 0 && h->n_audio_head > 0 &&
           h->n_audio_state % h->n_audio_head == 0 && h->n_text_state > 0 && h->n_text_head > 0 &&
           h->n_text_state % h->n_text_head == 0 && h->n_audio_ctx >= 1 && h->n_audio_ctx <= 4096 &&
           h->n_text_ctx >= 1 && h->n_text_ctx <= 4096 && ft >= 0 && ft <= 30;
}

static transcribe_status parse_header(tr_ggml_bin *b, cursor *c) {
    int32_t magic, *hv = &b->hp.n_vocab;
    if (!rd_i32(c, &magic) || (uint32_t)magic != TR_GGML_BIN_MAGIC) {
        TR_ERROR("ggml bin: bad magic (not a whisper.cpp .bin file)");
        return TRANSCRIBE_ERR_GGUF;
    }
    for (int i = 0; i < 11; i++) {
        if (!rd_i32(c, &hv[i])) {
            TR_ERROR("ggml bin: hparams truncated (file size %zu)", c->size);
            return TRANSCRIBE_ERR_GGUF;
        }
    }
    if (!geometry_ok(&b->hp)) {
        TR_ERROR("ggml bin: hparams (n_vocab %d, n_mels %d, layers %d/%d, states %d/%d, heads "
                 "%d/%d, ctx %d/%d, ftype %d) are not a Whisper model",
                 b->hp.n_vocab, b->hp.n_mels, b->hp.n_audio_layer, b->hp.n_text_layer,
                 b->hp.n_audio_state, b->hp.n_text_state, b->hp.n_audio_head, b->hp.n_text_head,
                 b->hp.n_audio_ctx, b->hp.n_text_ctx, b->hp.ftype);
        return TRANSCRIBE_ERR_UNSUPPORTED_ARCH;
    }
    int32_t n_mel, n_freq;
    if (!rd_i32(c, &n_mel) || !rd_i32(c, &n_freq)) {
        TR_ERROR("ggml bin: mel filter header truncated (file size %zu)", c->size);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (n_mel != b->hp.n_mels || n_freq != BIN_N_FREQ) {
        TR_ERROR("ggml bin: mel filters are %d x %d, expected %d x %d", n_mel, n_freq, b->hp.n_mels,
                 BIN_N_FREQ);
        return TRANSCRIBE_ERR_GGUF;
    }
    size_t bytes = (size_t)n_mel * (size_t)n_freq * 4;
    if (bytes > c->size - c->pos) {
        TR_ERROR("ggml bin: mel filters [offset %zu, size %zu] exceed file size %zu", c->pos, bytes,
                 c->size);
        return TRANSCRIBE_ERR_GGUF;
    }
    b->filters = malloc(bytes);
    if (!b->filters) return TRANSCRIBE_ERR_OOM;
    memcpy(b->filters, c->p + c->pos, bytes); /* little-endian host */
    c->pos += bytes;
    b->n_mel = n_mel;
    b->n_freq = n_freq;
    return TRANSCRIBE_OK;
}

static transcribe_status parse_vocab(tr_ggml_bin *b, cursor *c) {
    int32_t count;
    if (!rd_i32(c, &count)) {
        TR_ERROR("ggml bin: vocabulary count truncated (file size %zu)", c->size);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (count < 1 || count > b->hp.n_vocab + 64) {
        TR_ERROR("ggml bin: vocabulary count %d out of range 1..%d", count, b->hp.n_vocab + 64);
        return TRANSCRIBE_ERR_GGUF;
    }
    /* First pass: validate and size. Each entry takes >= 4 bytes, so count
     * is already bounded by the 51930 above. */
    size_t start = c->pos, chars = 0;
    for (int32_t i = 0; i < count; i++) {
        int32_t len;
        if (!rd_i32(c, &len)) {
            TR_ERROR("ggml bin: vocabulary entry %d truncated (file size %zu)", i, c->size);
            return TRANSCRIBE_ERR_GGUF;
        }
        if ((uint32_t)len > BIN_MAX_TOKEN || (size_t)len > c->size - c->pos) {
            TR_ERROR("ggml bin: vocabulary entry %d length %" PRIu32
                     " exceeds %d or the file size %zu",
                     i, (uint32_t)len, BIN_MAX_TOKEN, c->size);
            return TRANSCRIBE_ERR_GGUF;
        }
        c->pos += (size_t)len;
        chars += (size_t)len + 1;
    }
    size_t table = (size_t)count * sizeof(char *);
    char *block = malloc(table + chars);
    b->token_len = malloc((size_t)count * sizeof(size_t));
    if (!block || !b->token_len) {
        free(block);
        return TRANSCRIBE_ERR_OOM;
    }
    b->tokens = (char **)(void *)block;
    b->n_tokens = count;
    char *w = block + table;
    c->pos = start;
    for (int32_t i = 0; i < count; i++) {
        int32_t len = 0;
        rd_i32(c, &len);
        memcpy(w, c->p + c->pos, (size_t)len);
        w[len] = 0;
        b->tokens[i] = w;
        b->token_len[i] = (size_t)len;
        w += len + 1;
        c->pos += (size_t)len;
    }
    return TRANSCRIBE_OK;
}

static bin_tensor *new_tensor(tr_ggml_bin *b) {
    size_t cap = (size_t)b->cap_tensors;
    bin_tensor *p = tr_grow(b->tensors, &cap, (size_t)b->n_tensors + 1, sizeof *p, 64);
    if (!p) return NULL;
    b->tensors = p;
    b->cap_tensors = (int64_t)cap;
    bin_tensor *t = &b->tensors[b->n_tensors++];
    memset(t, 0, sizeof *t);
    return t;
}

/* Block index of a canonical block tensor name ("enc.blocks.3...."), -1 if
 * it is not a block tensor. */
static long block_of(const char *name) {
    const char *p = strstr(name, ".blocks.");
    return p ? strtol(p + 8, NULL, 10) : -1;
}

static transcribe_status parse_one_tensor(tr_ggml_bin *b, cursor *c) {
    int32_t nd, name_len, type;
    if (!rd_i32(c, &nd) || !rd_i32(c, &name_len) || !rd_i32(c, &type)) {
        TR_ERROR("ggml bin: tensor header at offset %zu truncated (file size %zu)", c->pos,
                 c->size);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (nd < 1 || nd > 4 || name_len < 1 || name_len > BIN_MAX_NAME) {
        TR_ERROR("ggml bin: tensor at offset %zu has n_dims %d / name length %d out of range",
                 c->pos - 12, nd, name_len);
        return TRANSCRIBE_ERR_GGUF;
    }
    int64_t ne[4] = {1, 1, 1, 1};
    for (int d = 0; d < nd; d++) {
        int32_t v;
        if (!rd_i32(c, &v)) {
            TR_ERROR("ggml bin: tensor dims truncated (file size %zu)", c->size);
            return TRANSCRIBE_ERR_GGUF;
        }
        ne[d] = v;
    }
    if ((size_t)name_len > c->size - c->pos) {
        TR_ERROR("ggml bin: tensor name truncated (file size %zu)", c->size);
        return TRANSCRIBE_ERR_GGUF;
    }
    char legacy[BIN_MAX_NAME + 1];
    memcpy(legacy, c->p + c->pos, (size_t)name_len);
    legacy[name_len] = 0;
    c->pos += (size_t)name_len;
    if (strlen(legacy) != (size_t)name_len) {
        TR_ERROR("ggml bin: tensor name at offset %zu contains a NUL byte",
                 c->pos - (size_t)name_len);
        return TRANSCRIBE_ERR_GGUF;
    }
    for (int d = 0; d < nd; d++) {
        if (ne[d] <= 0) {
            TR_ERROR("ggml bin: tensor '%s' ne[%d] = %" PRId64 " is not positive", legacy, d,
                     ne[d]);
            return TRANSCRIBE_ERR_GGUF;
        }
    }
    int block;
    size_t bb, nb1 = 0;
    if (type == TR_Q8_1 || !tr_gguf_type_geometry(type, &block, &bb)) {
        TR_ERROR("ggml bin: tensor '%s' has unsupported ggml type %d", legacy, type);
        return TRANSCRIBE_ERR_GGUF;
    }
    size_t nbytes = tr_gguf_tensor_bytes(type, ne, &nb1);
    if (!nbytes) {
        TR_ERROR("ggml bin: tensor '%s' ne[0] = %" PRId64 " is not a multiple of the %s block "
                 "size %d (or the size overflows)",
                 legacy, ne[0], tr_gguf_type_label(type), block);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (nbytes > c->size - c->pos) {
        TR_ERROR("ggml bin: tensor '%s' data [offset %zu, size %zu] exceeds file size %zu", legacy,
                 c->pos, nbytes, c->size);
        return TRANSCRIBE_ERR_GGUF;
    }
    char canon[BIN_MAX_NAME + 64];
    if (!tr_ggml_bin_canonical_name(legacy, canon, sizeof canon)) {
        TR_ERROR("ggml bin: tensor '%s' has no canonical Whisper name", legacy);
        return TRANSCRIBE_ERR_GGUF;
    }
    long blk = block_of(canon);
    long n_layer = canon[0] == 'e' ? b->hp.n_audio_layer : b->hp.n_text_layer;
    if (blk >= n_layer) {
        TR_ERROR("ggml bin: tensor '%s' is for block %ld but the model has %ld", legacy, blk,
                 n_layer);
        return TRANSCRIBE_ERR_GGUF;
    }
    /* whisper.cpp stores conv biases as ne [1, d]; GGUF has 1-D [d]. */
    if ((strcmp(canon, "enc.conv.0.bias") == 0 || strcmp(canon, "enc.conv.1.bias") == 0) &&
        nd == 2 && ne[0] == 1 && ne[2] == 1 && ne[3] == 1) {
        ne[0] = ne[1], ne[1] = 1, nd = 1;
        tr_gguf_tensor_bytes(type, ne, &nb1);
    }
    bin_tensor *t = new_tensor(b);
    if (!t) return TRANSCRIBE_ERR_OOM;
    t->legacy = strdup(legacy);
    char *cn = strdup(canon);
    t->t.name = cn;
    if (!t->legacy || !cn) return TRANSCRIBE_ERR_OOM;
    t->t.type = type;
    t->t.n_dims = nd;
    memcpy(t->t.ne, ne, sizeof ne);
    t->t.nb1 = nb1;
    t->t.nbytes = nbytes;
    t->src = c->pos;
    c->pos += nbytes;
    return TRANSCRIBE_OK;
}

static const char *tensor_name_of(const void *ctx, int64_t i) {
    return ((const tr_ggml_bin *)ctx)->tensors[i].t.name;
}

/* The two front-end tensors a GGUF Whisper file carries (docs/formats/gguf.md §7.1). */
static transcribe_status add_frontend(tr_ggml_bin *b) {
    b->window = malloc(BIN_WIN * sizeof(float));
    if (!b->window) return TRANSCRIBE_ERR_OOM;
    for (int k = 0; k < BIN_WIN; k++)
        b->window[k] = (float)(0.5 - 0.5 * cos(2.0 * M_PI * k / BIN_WIN));
    bin_tensor *fb = new_tensor(b);
    if (!fb) return TRANSCRIBE_ERR_OOM;
    fb->t = (tr_tensor){.name = strdup("frontend.mel_filterbank"),
                        .type = TR_F32,
                        .n_dims = 2,
                        .ne = {b->n_freq, b->n_mel, 1, 1},
                        .nb1 = (size_t)b->n_freq * 4,
                        .nbytes = (size_t)b->n_freq * (size_t)b->n_mel * 4,
                        .data = b->filters};
    bin_tensor *win = new_tensor(b);
    if (!win) return TRANSCRIBE_ERR_OOM;
    win->t = (tr_tensor){.name = strdup("frontend.window"),
                         .type = TR_F32,
                         .n_dims = 1,
                         .ne = {BIN_WIN, 1, 1, 1},
                         .nb1 = BIN_WIN * 4,
                         .nbytes = BIN_WIN * 4,
                         .data = b->window};
    return fb->t.name && win->t.name ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

static transcribe_status parse(tr_ggml_bin *b, const uint8_t *data, size_t size) {
    cursor c = {data, size, 0};
    transcribe_status st = parse_header(b, &c);
    if (st == TRANSCRIBE_OK) st = parse_vocab(b, &c);
    while (st == TRANSCRIBE_OK && c.pos < c.size) st = parse_one_tensor(b, &c);
    if (st != TRANSCRIBE_OK) return st;
    b->n_file_tensors = b->n_tensors;

    /* Payloads into one aligned arena. */
    size_t total = 0;
    for (int64_t i = 0; i < b->n_tensors; i++)
        total += (b->tensors[i].t.nbytes + BIN_ARENA_ALIGN - 1) / BIN_ARENA_ALIGN * BIN_ARENA_ALIGN;
    if (total) {
        b->arena = aligned_alloc(BIN_ARENA_ALIGN, total);
        if (!b->arena) {
            TR_ERROR("ggml bin: cannot allocate %zu bytes for the weights", total);
            return TRANSCRIBE_ERR_OOM;
        }
        uint8_t *w = b->arena;
        for (int64_t i = 0; i < b->n_tensors; i++) {
            bin_tensor *t = &b->tensors[i];
            memcpy(w, data + t->src, t->t.nbytes);
            t->t.data = w;
            w += (t->t.nbytes + BIN_ARENA_ALIGN - 1) / BIN_ARENA_ALIGN * BIN_ARENA_ALIGN;
        }
    }
    if ((st = add_frontend(b)) != TRANSCRIBE_OK) return st;
    if (!tr_gguf_index_init(&b->index, b->n_tensors, tensor_name_of, b)) return TRANSCRIBE_ERR_OOM;
    for (int64_t i = 0; i < b->n_tensors; i++) {
        if (tr_gguf_index_add(&b->index, i) >= 0) {
            const char *leg = b->tensors[i].legacy;
            TR_ERROR("ggml bin: duplicate tensor '%s'", leg ? leg : b->tensors[i].t.name);
            return TRANSCRIBE_ERR_GGUF;
        }
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_ggml_bin_open_memory(const void *data, size_t size, tr_ggml_bin **out) {
    if (!out || (!data && size)) return TRANSCRIBE_ERR_INVALID_ARG;
    *out = NULL;
    tr_ggml_bin *b = calloc(1, sizeof *b);
    if (!b) return TRANSCRIBE_ERR_OOM;
    transcribe_status st = parse(b, data, size);
    if (st != TRANSCRIBE_OK) {
        if (st == TRANSCRIBE_ERR_OOM) TR_ERROR("ggml bin: out of memory");
        tr_ggml_bin_close(b);
        return st;
    }
    *out = b;
    return TRANSCRIBE_OK;
}

transcribe_status tr_ggml_bin_open(const char *path, tr_ggml_bin **out) {
    if (!path || !out) return TRANSCRIBE_ERR_INVALID_ARG;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        TR_ERROR("ggml bin: cannot open '%s': %s", path, strerror(e));
        return e == ENOENT ? TRANSCRIBE_ERR_FILE_NOT_FOUND : TRANSCRIBE_ERR_GGUF;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 4 ||
        (uint64_t)sb.st_size > SIZE_MAX) {
        TR_ERROR("ggml bin: '%s' is not a regular, non-empty file", path);
        close(fd);
        return TRANSCRIBE_ERR_GGUF;
    }
    size_t size = (size_t)sb.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        TR_ERROR("ggml bin: cannot map '%s': %s", path, strerror(errno));
        return TRANSCRIBE_ERR_GGUF;
    }
    transcribe_status st = tr_ggml_bin_open_memory(map, size, out);
    munmap(map, size); /* everything used later was copied */
    return st;
}

void tr_ggml_bin_close(tr_ggml_bin *b) {
    if (!b) return;
    for (int64_t i = 0; i < b->n_tensors; i++) {
        free((char *)b->tensors[i].t.name);
        free(b->tensors[i].legacy);
    }
    free(b->tensors);
    tr_gguf_index_free(&b->index);
    free(b->arena);
    free(b->filters);
    free(b->window);
    free(b->tokens);
    free(b->token_len);
    free(b);
}

const tr_ggml_bin_hparams *tr_ggml_bin_hparams_of(const tr_ggml_bin *b) {
    return &b->hp;
}

const float *tr_ggml_bin_filters(const tr_ggml_bin *b, int *n_mel, int *n_freq) {
    if (n_mel) *n_mel = b->n_mel;
    if (n_freq) *n_freq = b->n_freq;
    return b->filters;
}

int32_t tr_ggml_bin_n_tokens(const tr_ggml_bin *b) {
    return b->n_tokens;
}

const char *tr_ggml_bin_token(const tr_ggml_bin *b, int32_t id, size_t *len) {
    if (id < 0 || id >= b->n_tokens) return NULL;
    if (len) *len = b->token_len[id];
    return b->tokens[id];
}

const char *const *tr_ggml_bin_tokens(const tr_ggml_bin *b) {
    return (const char *const *)b->tokens;
}

int64_t tr_ggml_bin_n_tensors(const tr_ggml_bin *b) {
    return b->n_tensors;
}

int64_t tr_ggml_bin_n_file_tensors(const tr_ggml_bin *b) {
    return b->n_file_tensors;
}

const tr_tensor *tr_ggml_bin_tensor_at(const tr_ggml_bin *b, int64_t i) {
    return i >= 0 && i < b->n_tensors ? &b->tensors[i].t : NULL;
}

const tr_tensor *tr_ggml_bin_find_tensor(const tr_ggml_bin *b, const char *name) {
    int64_t i = tr_gguf_index_find(&b->index, name);
    return i < 0 ? NULL : &b->tensors[i].t;
}

const char *tr_ggml_bin_legacy_name(const tr_ggml_bin *b, int64_t i) {
    return i >= 0 && i < b->n_tensors ? b->tensors[i].legacy : NULL;
}
