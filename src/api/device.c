/* Backends and devices (docs/c-api.md §5). This library computes on the CPU
 * only, with compiled-in kernels: there is exactly one device, the CPU, and
 * backend initialisation has nothing to load. */
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "tensor/cpu.h"
#include "util/log.h"

struct transcribe_device {
    const char *name;
    const char *kind;
    transcribe_device_type type;
};

/* Immutable after compile time: safe to share between threads. */
static struct transcribe_device k_cpu = {"CPU", "cpu", TRANSCRIBE_DEVICE_TYPE_CPU};

/* The description names the kernels the CPU runs now (the best level it
 * has, or the one TRANSCRIBE_CPU caps it at): static strings, one a level. */
static const char *cpu_description(void) {
    switch (tr_cpu_level_active()) {
    case TR_CPU_AVX2:
        return "CPU (AVX2 + FMA kernels)";
    case TR_CPU_AVX512:
        return "CPU (AVX-512 kernels)";
    case TR_CPU_NEON:
        return "CPU (NEON kernels)";
    case TR_CPU_NEON_DOTPROD:
        return "CPU (NEON + dot-product kernels)";
    default:
        return "CPU (portable C kernels)";
    }
}

TRANSCRIBE_API transcribe_status transcribe_init_backends(const char *artifact_dir) {
    if (!artifact_dir || !*artifact_dir) {
        TR_ERROR("transcribe_init_backends: artifact_dir is NULL or empty");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct stat st;
    if (stat(artifact_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        TR_ERROR("transcribe_init_backends: '%s' is not an existing directory", artifact_dir);
        return TRANSCRIBE_ERR_FILE_NOT_FOUND;
    }
    return TRANSCRIBE_OK; /* compiled-in CPU backend: nothing to load */
}

TRANSCRIBE_API transcribe_status transcribe_init_backends_default(void) {
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API int transcribe_device_count(void) {
    return 1;
}

TRANSCRIBE_API transcribe_device_t transcribe_device_get(int index) {
    return index == 0 ? &k_cpu : NULL;
}

TRANSCRIBE_API transcribe_status transcribe_device_get_info(transcribe_device_t device,
                                                            struct transcribe_device_info *out) {
    if (!out) {
        TR_ERROR("transcribe_device_get_info: out is NULL");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (out->struct_size < TR_MIN_DEVICE_INFO) {
        TR_ERROR("transcribe_device_get_info: struct_size %llu < %u",
                 (unsigned long long)out->struct_size, TR_MIN_DEVICE_INFO);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    if (device != &k_cpu) {
        TR_ERROR("transcribe_device_get_info: not a registered device handle");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_device_info info = {0};
    info.struct_size = sizeof info;
    info.name = device->name;
    info.description = cpu_description();
    info.kind = device->kind;
    info.device_id = NULL;
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) info.memory_total = (uint64_t)pages * (uint64_t)page;
    if (avail > 0 && page > 0) info.memory_free = (uint64_t)avail * (uint64_t)page;
    info.device_type = device->type;
    tr_copy_out(out, &info, sizeof info);
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API bool transcribe_backend_available(transcribe_backend_request kind) {
    switch ((int)kind) {
    case TRANSCRIBE_BACKEND_AUTO:
    case TRANSCRIBE_BACKEND_CPU:
    case TRANSCRIBE_BACKEND_CPU_ACCEL:
        return true;
    default:
        return false; /* no GPU backends; unknown values are false too */
    }
}

TRANSCRIBE_API transcribe_device_t transcribe_model_device(const struct transcribe_model *model) {
    return model ? &k_cpu : NULL;
}

/* ---- the same by index, under later transcribe.cpp names ---- */

TRANSCRIBE_API int transcribe_backend_device_count(void) {
    return transcribe_device_count();
}

/* struct transcribe_backend_device has transcribe_device_info's fields in
 * its order: the one filler serves both. */
_Static_assert(sizeof(struct transcribe_backend_device) == sizeof(struct transcribe_device_info),
               "the two device structs share one layout");
_Static_assert(offsetof(struct transcribe_backend_device, device_type) ==
                   offsetof(struct transcribe_device_info, device_type),
               "the two device structs share one layout");

static transcribe_status fill_backend_device(const char *who, transcribe_device_t device,
                                             struct transcribe_backend_device *out) {
    if (!out) {
        TR_ERROR("%s: out is NULL", who);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (out->struct_size < TR_MIN_DEVICE_INFO) {
        TR_ERROR("%s: struct_size %llu < %u", who, (unsigned long long)out->struct_size,
                 TR_MIN_DEVICE_INFO);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    struct transcribe_device_info info;
    transcribe_device_info_init(&info);
    transcribe_status st = transcribe_device_get_info(device, &info);
    if (st != TRANSCRIBE_OK) return st;
    tr_copy_out(out, &info, sizeof info);
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API transcribe_status
transcribe_get_backend_device(int index, struct transcribe_backend_device *out) {
    if (index < 0 || index >= transcribe_device_count()) {
        TR_ERROR("transcribe_get_backend_device: index %d is outside [0, %d)", index,
                 transcribe_device_count());
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return fill_backend_device("transcribe_get_backend_device", transcribe_device_get(index), out);
}

TRANSCRIBE_API transcribe_status transcribe_model_get_device(
    const struct transcribe_model *model, struct transcribe_backend_device *out) {
    if (!model) {
        TR_ERROR("transcribe_model_get_device: model is NULL");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return fill_backend_device("transcribe_model_get_device", transcribe_model_device(model), out);
}

/* Load-time device rules (docs/c-api.md §5.3) for the one CPU device. */
transcribe_status tr_api_check_gpu_device(int gpu_device) {
    if (gpu_device == 0) return TRANSCRIBE_OK;
    TR_ERROR("model load: gpu_device %d names no GPU (this build has only the CPU; 0 is "
             "automatic)",
             gpu_device);
    return TRANSCRIBE_ERR_INVALID_ARG;
}

transcribe_status tr_api_check_backend(transcribe_backend_request backend,
                                       transcribe_device_t device) {
    if (device && device != &k_cpu) {
        TR_ERROR("model load: device handle is not a registered device");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    switch (backend) {
    case TRANSCRIBE_BACKEND_AUTO:
    case TRANSCRIBE_BACKEND_CPU:
    case TRANSCRIBE_BACKEND_CPU_ACCEL:
        return TRANSCRIBE_OK;
    default:
        if (device) {
            TR_ERROR("model load: device kind 'cpu' does not match the requested backend %d",
                     (int)backend);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        TR_ERROR("model load: backend %d is not available in this build (CPU only)", (int)backend);
        return TRANSCRIBE_ERR_BACKEND;
    }
}
