/* Model loading and model-level queries (docs/c-api.md §7.2, §8). The format is
 * recognised from the first four bytes (docs/formats/gguf.md §1); GGUF files are
 * dispatched on general.architecture, any other format goes, as a read-only
 * mapping, to the family whose probe_file claims it (e.g. legacy .bin). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "core/status.h"
#include "gguf/gguf.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/timer.h"

#define MAGIC_GGUF 0x46554747u /* "GGUF" */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static void model_destroy(struct transcribe_model *m) {
    if (!m) return;
    if (m->fmodel && m->family && m->family->free_model) m->family->free_model(m->fmodel);
    for (int i = 0; i < m->n_meta; i++) {
        free(m->meta[i].key);
        free(m->meta[i].val);
    }
    free(m->meta);
    free(m->arch);
    free(m->variant);
    tr_gguf_close(m->gguf);
    if (m->bin_map) munmap(m->bin_map, m->bin_size);
    free(m);
}

/* Reads the first four bytes. FILE_NOT_FOUND only when the path does not
 * exist; everything else unreadable is a load (GGUF) error. */
static transcribe_status read_magic(const char *path, uint32_t *magic) {
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            TR_ERROR("model load: '%s' does not exist", path);
            return TRANSCRIBE_ERR_FILE_NOT_FOUND;
        }
        TR_ERROR("model load: cannot stat '%s': %s", path, strerror(errno));
        return TRANSCRIBE_ERR_GGUF;
    }
    if (!S_ISREG(st.st_mode)) {
        TR_ERROR("model load: '%s' is not a regular file", path);
        return TRANSCRIBE_ERR_GGUF;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        TR_ERROR("model load: cannot open '%s': %s", path, strerror(errno));
        return TRANSCRIBE_ERR_GGUF;
    }
    unsigned char b[4];
    size_t got = fread(b, 1, 4, f);
    fclose(f);
    if (got != 4) {
        TR_ERROR("model load: '%s' is too short to be a model file", path);
        return TRANSCRIBE_ERR_GGUF;
    }
    *magic = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return TRANSCRIBE_OK;
}

static transcribe_status map_file(const char *path, void **out, size_t *size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        TR_ERROR("model load: cannot open '%s': %s", path, strerror(errno));
        return TRANSCRIBE_ERR_GGUF;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        TR_ERROR("model load: cannot size '%s'", path);
        return TRANSCRIBE_ERR_GGUF;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        TR_ERROR("model load: cannot map '%s': %s", path, strerror(errno));
        return TRANSCRIBE_ERR_GGUF;
    }
    *out = p;
    *size = (size_t)st.st_size;
    return TRANSCRIBE_OK;
}

/* Copies every top-level STRING KV into the metadata map (docs/formats/gguf.md §3.3). */
static transcribe_status copy_string_meta(struct transcribe_model *m) {
    int64_t n = tr_gguf_n_kv(m->gguf);
    if (n <= 0) return TRANSCRIBE_OK;
    m->meta = calloc((size_t)n, sizeof *m->meta);
    if (!m->meta) return TRANSCRIBE_ERR_OOM;
    for (int64_t i = 0; i < n; i++) {
        if (tr_gguf_kv_type(m->gguf, i) != GGUF_T_STRING) continue;
        const char *key = tr_gguf_key_name(m->gguf, i);
        const char *val = NULL;
        if (!key || tr_gguf_get_str(m->gguf, key, &val) != 1 || !val) continue;
        tr_meta_kv *kv = &m->meta[m->n_meta];
        kv->key = dup_str(key);
        kv->val = dup_str(val);
        if (!kv->key || !kv->val) {
            free(kv->key);
            free(kv->val);
            kv->key = kv->val = NULL;
            return TRANSCRIBE_ERR_OOM;
        }
        m->n_meta++;
    }
    return TRANSCRIBE_OK;
}

/* Opens a GGUF file, reads its identity and picks the family. */
static transcribe_status open_gguf(struct transcribe_model *m, const char *path) {
    transcribe_status st = tr_gguf_open(path, &m->gguf);
    if (st != TRANSCRIBE_OK) {
        m->gguf = NULL;
        return st;
    }
    const char *arch = NULL;
    int r = tr_gguf_get_str(m->gguf, "general.architecture", &arch);
    if (r != 1 || !arch) {
        TR_ERROR("model load: '%s' has no string general.architecture", path);
        return TRANSCRIBE_ERR_GGUF;
    }
    const char *variant = NULL;
    if (tr_gguf_get_str(m->gguf, "stt.variant", &variant) < 0) {
        TR_ERROR("model load: stt.variant is not a string");
        return TRANSCRIBE_ERR_GGUF;
    }
    m->arch = dup_str(arch);
    if (!m->arch) return TRANSCRIBE_ERR_OOM;
    if (variant) {
        m->variant = dup_str(variant);
        if (!m->variant) return TRANSCRIBE_ERR_OOM;
    }
    m->family = tr_family_find(arch);
    if (!m->family) {
        if (tr_family_is_known_arch(arch)) {
            TR_ERROR("model load: architecture '%s' is known but not implemented in this build",
                     arch);
            return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
        }
        TR_ERROR("model load: unsupported architecture '%s'", arch);
        return TRANSCRIBE_ERR_UNSUPPORTED_ARCH;
    }
    st = copy_string_meta(m);
    if (st != TRANSCRIBE_OK) TR_ERROR("model load: out of memory copying metadata");
    return st;
}

/* A non-GGUF file a family's probe claimed: mapped read-only for it. */
static transcribe_status open_claimed(struct transcribe_model *m, const tr_family *fam,
                                      const char *path) {
    transcribe_status st = map_file(path, &m->bin_map, &m->bin_size);
    if (st != TRANSCRIBE_OK) {
        m->bin_map = NULL;
        return st;
    }
    m->arch = dup_str(fam->arch);
    if (!m->arch) return TRANSCRIBE_ERR_OOM;
    m->family = fam;
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API transcribe_status
transcribe_model_load_file(const char *path, const struct transcribe_model_load_params *params,
                           struct transcribe_model **out_model) {
    if (out_model) *out_model = NULL;
    if (!out_model || !path) {
        TR_ERROR("transcribe_model_load_file: %s is NULL", out_model ? "path" : "out_model");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_model_load_params lp;
    transcribe_model_load_params_init(&lp);
    if (params) {
        if (params->struct_size < TR_MIN_LOAD_PARAMS) {
            TR_ERROR("transcribe_model_load_file: load params struct_size %llu < %u",
                     (unsigned long long)params->struct_size, TR_MIN_LOAD_PARAMS);
            return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
        }
        lp.backend = params->backend;
        lp.device = params->device;
        if (params->struct_size >=
            offsetof(struct transcribe_model_load_params, gpu_device) + sizeof params->gpu_device)
            lp.gpu_device = params->gpu_device;
    }
    if ((int)lp.backend < TRANSCRIBE_BACKEND_AUTO || (int)lp.backend > TRANSCRIBE_BACKEND_ROCM) {
        TR_ERROR("transcribe_model_load_file: invalid backend value %d", (int)lp.backend);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    double t0 = tr_time_ms();
    uint32_t magic = 0;
    transcribe_status st = read_magic(path, &magic);
    if (st != TRANSCRIBE_OK) return st;
    const unsigned char head[4] = {(unsigned char)magic, (unsigned char)(magic >> 8),
                                   (unsigned char)(magic >> 16), (unsigned char)(magic >> 24)};
    const tr_family *claimed = magic == MAGIC_GGUF ? NULL : tr_family_for_file(head, sizeof head);
    if (magic != MAGIC_GGUF && !claimed) {
        TR_ERROR("model load: '%s' is neither GGUF nor a format a model family reads (magic "
                 "0x%08x)",
                 path, (unsigned)magic);
        return TRANSCRIBE_ERR_GGUF;
    }
    struct transcribe_model *m = calloc(1, sizeof *m);
    if (!m) {
        TR_ERROR("model load: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    st = claimed ? open_claimed(m, claimed, path) : open_gguf(m, path);
    if (st == TRANSCRIBE_OK) st = tr_api_check_backend(lp.backend, lp.device);
    if (st == TRANSCRIBE_OK) st = tr_api_check_gpu_device(lp.gpu_device);
    if (st == TRANSCRIBE_OK) {
        tr_load_ctx lc = {
            .path = path, .gguf = m->gguf, .bin_data = m->bin_map, .bin_size = m->bin_size};
        if (!m->family->load) {
            TR_ERROR("model load: family '%s' has no loader", m->arch);
            st = TRANSCRIBE_ERR_NOT_IMPLEMENTED;
        } else {
            st = m->family->load(&lc, &m->fmodel, &m->desc);
            if (st != TRANSCRIBE_OK) {
                /* The family frees its own partial state on failure. */
                m->fmodel = NULL;
                TR_ERROR("model load: %s loader failed: %s", m->arch, tr_status_string(st));
            }
        }
    }
    if (st != TRANSCRIBE_OK) {
        model_destroy(m);
        return st;
    }
    if (!m->desc.variant) m->desc.variant = m->variant ? m->variant : "";
    /* supports_streaming is the family's word (native streaming, as in
     * transcribe.cpp); every model with an offline run path also streams
     * through the generic window driver (stream_window.c) when a stream
     * asks for it (transcribe_stream_params.window_fallback). */
    m->desc.caps.supports_window_streaming = m->family->run != NULL;
    m->load_ms = (float)(tr_time_ms() - t0);
    TR_DEBUG("model load: %s (%s) in %.1f ms", m->arch, m->desc.variant, (double)m->load_ms);
    *out_model = m;
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API void transcribe_model_free(struct transcribe_model *model) {
    model_destroy(model);
}

TRANSCRIBE_API transcribe_status transcribe_model_get_capabilities(
    const struct transcribe_model *model, struct transcribe_capabilities *out_caps) {
    if (!model || !out_caps) {
        TR_ERROR("transcribe_model_get_capabilities: %s is NULL", model ? "out_caps" : "model");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (out_caps->struct_size < TR_MIN_CAPABILITIES) {
        TR_ERROR("transcribe_model_get_capabilities: struct_size %llu < %u",
                 (unsigned long long)out_caps->struct_size, TR_MIN_CAPABILITIES);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    struct transcribe_capabilities c = model->desc.caps;
    c.struct_size = sizeof c;
    tr_copy_out(out_caps, &c, sizeof c);
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API bool transcribe_model_supports(const struct transcribe_model *model,
                                              transcribe_feature feature) {
    int f = (int)feature;
    if (!model || f < 0 || f >= TR_N_FEATURES) return false;
    return model->desc.features[f];
}

TRANSCRIBE_API const char *transcribe_model_arch_string(const struct transcribe_model *model) {
    return (model && model->arch) ? model->arch : "";
}

TRANSCRIBE_API const char *transcribe_model_variant_string(const struct transcribe_model *model) {
    return (model && model->desc.variant) ? model->desc.variant : "";
}

TRANSCRIBE_API const char *transcribe_model_backend(const struct transcribe_model *model) {
    return model ? "CPU" : "";
}

TRANSCRIBE_API const char *transcribe_model_meta_val_str(const struct transcribe_model *model,
                                                         const char *key) {
    if (!model || !key) return "";
    for (int i = 0; i < model->n_meta; i++) {
        if (strcmp(model->meta[i].key, key) == 0) return model->meta[i].val;
    }
    return "";
}

TRANSCRIBE_API int transcribe_tokenize(const struct transcribe_model *model, const char *text,
                                       int32_t *tokens, size_t n_max) {
    if (!model || !text) {
        TR_ERROR("transcribe_tokenize: %s is NULL", model ? "text" : "model");
        return INT_MIN;
    }
    if (!model->desc.tokenizer) {
        TR_ERROR("transcribe_tokenize: the %s tokenizer cannot encode text", model->arch);
        return INT_MIN;
    }
    /* A NULL buffer is a size query: never let the encoder write through it. */
    int n = tr_tokenizer_encode(model->desc.tokenizer, text, tokens, tokens ? n_max : 0);
    if (n == INT_MIN) {
        TR_ERROR("transcribe_tokenize: the %s tokenizer cannot encode text", model->arch);
        return INT_MIN;
    }
    if (!tokens && n < 0 && (size_t)(-(int64_t)n) <= n_max) {
        TR_ERROR("transcribe_tokenize: tokens is NULL but n_max %zu would hold the result", n_max);
        return INT_MIN;
    }
    return n;
}

TRANSCRIBE_API bool transcribe_model_accepts_ext_kind(const struct transcribe_model *model,
                                                      transcribe_ext_slot slot, uint32_t kind) {
    if (!model) return false;
    if ((int)slot != TRANSCRIBE_EXT_SLOT_RUN && (int)slot != TRANSCRIBE_EXT_SLOT_STREAM) {
        return false; /* judged before the model is touched */
    }
    const tr_family *f = model->family;
    if (!f || (!f->accepts_ext_kind && !f->model_accepts_ext_kind)) return false;
    if (f->model_accepts_ext_kind) return f->model_accepts_ext_kind(model->fmodel, kind, (int)slot);
    return f->accepts_ext_kind(kind, (int)slot);
}
