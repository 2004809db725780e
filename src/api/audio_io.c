/* Entry points over the audio module's WAV header reader and streaming
 * resampler (transcribe.h "WAV headers and live resampling"): argument
 * checks here, the work in src/audio (wav.c, resample_stream.c). */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "audio/audio_internal.h"
#include "util/log.h"

/* Smallest struct_size accepted: every field of the first version. */
#define TR_MIN_WAV_INFO (offsetof(struct transcribe_wav_info, data_bytes) + sizeof(int64_t))

TRANSCRIBE_API void transcribe_wav_info_init(struct transcribe_wav_info *info) {
    if (!info) return;
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
}

static transcribe_status check_info(const struct transcribe_wav_info *info, const char *where) {
    if (!info) {
        TR_ERROR("%s: info is NULL", where);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (info->struct_size < TR_MIN_WAV_INFO) {
        TR_ERROR("%s: struct_size %llu < %zu", where, (unsigned long long)info->struct_size,
                 (size_t)TR_MIN_WAV_INFO);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API transcribe_status transcribe_wav_read_header(const void *data, size_t size,
                                                            bool complete,
                                                            struct transcribe_wav_info *info,
                                                            size_t *out_need) {
    static const char *const where = "transcribe_wav_read_header";
    if (out_need) *out_need = 0;
    transcribe_status st = check_info(info, where);
    if (st != TRANSCRIBE_OK) return st;
    if (!out_need || (!data && size)) {
        TR_ERROR("%s: %s is NULL", where, out_need ? "data" : "out_need");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_wav_header h;
    st = tr_wav_read_header(data, size, complete, &h, out_need);
    if (st != TRANSCRIBE_OK || *out_need) return st;
    struct transcribe_wav_info w = {0};
    w.struct_size = sizeof w;
    w.sample_rate = (int32_t)h.rate;
    w.channels = h.channels;
    w.bits_per_sample = h.bits;
    w.format_tag = h.tag;
    w.block_align = h.block_align;
    w.data_offset = (int64_t)h.data_off;
    w.data_bytes =
        tr_wav_length_open(&h) || h.data_len > (uint64_t)INT64_MAX ? -1 : (int64_t)h.data_len;
    tr_copy_out(info, &w, sizeof w);
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API transcribe_status
transcribe_wav_decode_frames(const struct transcribe_wav_info *info, const void *data,
                             size_t n_bytes, float *out, int64_t *out_frames) {
    static const char *const where = "transcribe_wav_decode_frames";
    if (out_frames) *out_frames = 0;
    transcribe_status st = check_info(info, where);
    if (st != TRANSCRIBE_OK) return st;
    if (!out_frames || (n_bytes && (!data || !out))) {
        TR_ERROR("%s: a pointer argument is NULL", where);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    bool pcm =
        info->format_tag == 1 && (info->bits_per_sample == 8 || info->bits_per_sample == 16 ||
                                  info->bits_per_sample == 24 || info->bits_per_sample == 32);
    bool flt =
        info->format_tag == 3 && (info->bits_per_sample == 32 || info->bits_per_sample == 64);
    bool g711 = (info->format_tag == 6 || info->format_tag == 7) && info->bits_per_sample == 8;
    if (!(pcm || flt || g711) || info->channels < 1 || info->channels > TR_AUDIO_MAX_CHANNELS ||
        info->block_align != info->channels * (info->bits_per_sample / 8)) {
        TR_ERROR("%s: info does not describe a sample format (tag %d, %d bits, %d channels, "
                 "block_align %d)",
                 where, info->format_tag, info->bits_per_sample, info->channels, info->block_align);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_wav_header h = {0};
    h.tag = info->format_tag;
    h.channels = info->channels;
    h.bits = info->bits_per_sample;
    h.block_align = info->block_align;
    h.rate = (uint32_t)info->sample_rate;
    size_t frames = n_bytes / (size_t)h.block_align, nonfinite = 0;
    tr_wav_to_mono(&h, data, frames, out, &nonfinite);
    *out_frames = (int64_t)frames;
    return TRANSCRIBE_OK;
}

struct transcribe_resampler {
    tr_resampler r;
};

TRANSCRIBE_API transcribe_status transcribe_resampler_init(int rate_in, int rate_out,
                                                           struct transcribe_resampler **out) {
    if (!out) {
        TR_ERROR("transcribe_resampler_init: out is NULL");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *out = NULL;
    struct transcribe_resampler *r = calloc(1, sizeof *r);
    if (!r) {
        TR_ERROR("transcribe_resampler_init: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    transcribe_status st = tr_resampler_init(&r->r, rate_in, rate_out);
    if (st != TRANSCRIBE_OK) {
        free(r);
        return st;
    }
    *out = r;
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API int64_t transcribe_resampler_max_out(const struct transcribe_resampler *r,
                                                    int64_t n_in) {
    return r ? tr_resampler_max_out(&r->r, n_in) : 0;
}

TRANSCRIBE_API transcribe_status transcribe_resampler_feed(struct transcribe_resampler *r,
                                                           const float *in, int64_t n_in,
                                                           float *out, int64_t *out_n) {
    if (out_n) *out_n = 0;
    if (!r || !out_n) {
        TR_ERROR("transcribe_resampler_feed: %s is NULL", r ? "out_n" : "resampler");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return tr_resampler_feed(&r->r, in, n_in, out, out_n);
}

TRANSCRIBE_API transcribe_status transcribe_resampler_finish(struct transcribe_resampler *r,
                                                             float *out, int64_t *out_n) {
    if (out_n) *out_n = 0;
    if (!r || !out_n) {
        TR_ERROR("transcribe_resampler_finish: %s is NULL", r ? "out_n" : "resampler");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return tr_resampler_finish(&r->r, out, out_n);
}

TRANSCRIBE_API void transcribe_resampler_free(struct transcribe_resampler *r) {
    if (!r) return;
    tr_resampler_free(&r->r);
    free(r);
}
