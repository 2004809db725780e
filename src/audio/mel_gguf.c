/* stt.frontend.* keys and baked frontend.* tensors → tr_mel_config
 * (docs/formats/gguf.md §7). Reads are tri-state: absent keys keep the caller's
 * defaults, wrongly typed keys are fatal (TRANSCRIBE_ERR_GGUF). Which
 * values a family accepts is the family's business; this only rejects
 * values no front end can mean. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "audio/mel.h"
#include "gguf/gguf_keys.h"
#include "tensor/dtype.h"
#include "util/log.h"

#define K "stt.frontend."

/* The shared typed readers (gguf/gguf_keys.h), collecting failures in *bad
 * so every malformed key is logged; absent keys keep *dst. */
static void get_int(const gguf_file *f, const char *key, int *dst, bool *bad) {
    if (tr_gguf_opt_u32(f, key, *dst, 0, 1 << 30, dst)) *bad = true;
}

static void get_float(const gguf_file *f, const char *key, float *dst, bool *bad) {
    if (tr_gguf_opt_f32(f, key, *dst, dst)) *bad = true;
}

static void get_bool(const gguf_file *f, const char *key, bool *dst, bool *bad) {
    if (tr_gguf_opt_bool(f, key, *dst, dst)) *bad = true;
}

static const char *get_str(const gguf_file *f, const char *key, bool *bad) {
    const char *s = NULL;
    if (tr_gguf_opt_str(f, key, NULL, &s)) *bad = true;
    return s && *s ? s : NULL; /* absent and empty are alike (docs/formats/gguf.md §2.1) */
}

static bool unknown(const char *key, const char *v) {
    TR_ERROR("gguf: %s has unknown value '%s'", key, v);
    return true;
}

/* A baked F32 tensor of exactly `count` elements, or NULL (absent). */
static const float *baked(const gguf_file *f, const char *name, int64_t count, bool *bad) {
    const tr_tensor *t = tr_gguf_find_tensor(f, name);
    if (!t) return NULL;
    if (t->type != TR_F32 || tr_tensor_nelements(t) != count || !t->data) {
        TR_ERROR("gguf: %s must be F32 with %lld elements (type %s, %lld elements)", name,
                 (long long)count, tr_type_name(t->type), (long long)tr_tensor_nelements(t));
        *bad = true;
        return NULL;
    }
    return (const float *)t->data;
}

transcribe_status tr_mel_config_from_gguf(tr_mel_config *c, const struct gguf_file *f) {
    bool bad = false;
    const char *s;
    if ((s = get_str(f, K "type", &bad))) {
        if (!strcmp(s, "mel"))
            c->type = TR_FRONTEND_MEL;
        else if (!strcmp(s, "kaldi_fbank_lfr"))
            c->type = TR_FRONTEND_KALDI_FBANK_LFR;
        else if (!strcmp(s, "raw"))
            c->type = TR_FRONTEND_RAW;
        else
            bad = unknown(K "type", s);
    }
    get_int(f, K "sample_rate", &c->sample_rate, &bad);
    get_int(f, K "num_mels", &c->n_mels, &bad);
    get_int(f, K "n_fft", &c->n_fft, &bad);
    get_int(f, K "win_length", &c->win_length, &bad);
    get_int(f, K "hop_length", &c->hop_length, &bad);
    if ((s = get_str(f, K "window", &bad))) {
        if (!strcmp(s, "hann_periodic"))
            c->window = TR_WIN_HANN_PERIODIC;
        else if (!strcmp(s, "hann") || !strcmp(s, "hann_symmetric"))
            c->window = TR_WIN_HANN_SYMMETRIC;
        else if (!strcasecmp(s, "hamming"))
            c->window = TR_WIN_HAMMING;
        else
            bad = unknown(K "window", s);
    }
    if ((s = get_str(f, K "normalize", &bad))) {
        if (!strcmp(s, "per_feature"))
            c->normalize = TR_NORM_PER_FEATURE;
        else if (!strcmp(s, "per_utterance") || !strcmp(s, "whisper_logmel"))
            c->normalize = TR_NORM_PER_UTTERANCE;
        else if (!strcmp(s, "global"))
            c->normalize = TR_NORM_GLOBAL;
        else if (!strcmp(s, "none"))
            c->normalize = TR_NORM_NONE;
        else
            bad = unknown(K "normalize", s);
    }
    float dither = 0; /* read for its type only: inference never dithers */
    get_float(f, K "dither", &dither, &bad);
    get_float(f, K "pre_emphasis", &c->pre_emphasis, &bad);
    get_float(f, K "f_min", &c->f_min, &bad);
    get_float(f, K "f_max", &c->f_max, &bad);
    if ((s = get_str(f, K "pad_mode", &bad))) {
        if (!strcmp(s, "reflect"))
            c->pad_mode = TR_PAD_REFLECT;
        else if (!strcmp(s, "constant"))
            c->pad_mode = TR_PAD_CONSTANT;
        else if (!strcmp(s, "none"))
            c->pad_mode = TR_PAD_NONE;
        else
            bad = unknown(K "pad_mode", s);
    }
    bool center = true;
    get_bool(f, K "center", &center, &bad);
    if (!center) c->pad_mode = TR_PAD_NONE;
    if ((s = get_str(f, K "mel_norm", &bad))) {
        /* "<scale>" or "<scale>+<norm>"; a bare "slaney" is both. */
        const char *plus = strchr(s, '+');
        size_t sl = plus ? (size_t)(plus - s) : strlen(s);
        if (sl == 6 && !strncmp(s, "slaney", 6))
            c->mel_scale = TR_MELSCALE_SLANEY;
        else if (sl == 3 && !strncmp(s, "htk", 3))
            c->mel_scale = TR_MELSCALE_HTK;
        else
            bad = unknown(K "mel_norm", s);
        const char *norm = plus ? plus + 1 : s;
        c->mel_area_norm = !strcmp(norm, "slaney");
    }
    get_bool(f, K "log", &c->log, &bad);
    get_float(f, K "global_log_mel_max", &c->global_log_mel_max, &bad);
    get_float(f, K "log_clamp_min", &c->log_clamp_min, &bad);
    get_int(f, K "lfr_m", &c->lfr_m, &bad);
    get_int(f, K "lfr_n", &c->lfr_n, &bad);
    get_bool(f, K "snip_edges", &c->snip_edges, &bad);
    get_bool(f, K "upscale_samples", &c->upscale_samples, &bad);
    get_bool(f, K "apply_cmvn", &c->apply_cmvn, &bad);
    if (bad) return TRANSCRIBE_ERR_GGUF;

    if (c->n_mels <= 0 || c->n_fft <= 0 || c->win_length <= 0) {
        TR_ERROR("gguf: front end needs positive num_mels, n_fft and win_length");
        return TRANSCRIBE_ERR_GGUF;
    }
    const float *fb =
        baked(f, "frontend.mel_filterbank", (int64_t)c->n_mels * (c->n_fft / 2 + 1), &bad);
    const float *win = baked(f, "frontend.window", c->win_length, &bad);
    if (fb) c->filterbank = fb;
    if (win) c->baked_window = win;
    if (c->type == TR_FRONTEND_KALDI_FBANK_LFR && c->lfr_m > 0) {
        int64_t d = (int64_t)c->n_mels * c->lfr_m;
        const float *sh = baked(f, "frontend.cmvn.shift", d, &bad);
        const float *sc = baked(f, "frontend.cmvn.scale", d, &bad);
        if (sh && sc) {
            c->cmvn_shift = sh;
            c->cmvn_scale = sc;
        }
    }
    return bad ? TRANSCRIBE_ERR_GGUF : TRANSCRIBE_OK;
}

transcribe_status tr_mel_check_stft_keys(const struct gguf_file *f, const char *who, int n_mels) {
    const char *const mel[] = {"mel", NULL};
    transcribe_status st;
    int v;
    if ((st = tr_gguf_req_str_in(f, "stt.frontend.type", mel))) return st;
    if ((st = tr_gguf_req_u32(f, "stt.frontend.num_mels", 1, 4096, &v))) return st;
    if (v != n_mels) {
        TR_ERROR("%s: stt.frontend.num_mels %d does not fit the encoder (%d mel bins)", who, v,
                 n_mels);
        return TRANSCRIBE_ERR_GGUF;
    }
    if ((st = tr_gguf_req_u32(f, "stt.frontend.sample_rate", 16000, 16000, &v))) return st;
    if ((st = tr_gguf_req_u32(f, "stt.frontend.n_fft", 2, 1 << 16, &v))) return st;
    if ((st = tr_gguf_req_u32(f, "stt.frontend.win_length", 1, 1 << 16, &v))) return st;
    return tr_gguf_req_u32(f, "stt.frontend.hop_length", 1, 1 << 16, &v);
}

transcribe_status tr_mel_kaldi_lfr_from_gguf(const struct gguf_file *g, const char *normalize,
                                             int d_input, const char *d_input_key,
                                             tr_mel_config *c) {
    static const char *const req[] = {"type",       "num_mels",   "sample_rate", "n_fft",
                                      "win_length", "hop_length", "window",      "normalize",
                                      "dither",     "lfr_m",      "lfr_n",       "fbank_style"};
    char key[64];
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        snprintf(key, sizeof key, K "%s", req[i]);
        if (!tr_gguf_has(g, key)) return tr_gguf_key_error(key, "any type", "required but missing");
    }
    transcribe_status st;
    int v;
    float dither = 0;
    bool b;
    if ((st = tr_gguf_req_str_is(g, K "type", "kaldi_fbank_lfr", NULL)) ||
        (st = tr_gguf_req_str_is(g, K "window", "hamming", NULL)) ||
        (st = tr_gguf_req_str_is(g, K "normalize", normalize, NULL)) ||
        (st = tr_gguf_req_str_is(g, K "fbank_style", "kaldi_htk", NULL)) ||
        (st = tr_gguf_req_u32(g, K "num_mels", 1, 4096, &v)) ||
        (st = tr_gguf_req_u32(g, K "sample_rate", 1, 1000000, &v)) ||
        (st = tr_gguf_req_u32(g, K "n_fft", 1, 1 << 16, &v)) ||
        (st = tr_gguf_req_u32(g, K "win_length", 2, 1 << 16, &v)) ||
        (st = tr_gguf_req_u32(g, K "hop_length", 1, 1 << 16, &v)) ||
        (st = tr_gguf_req_u32(g, K "lfr_m", 1, 64, &v)) ||
        (st = tr_gguf_req_u32(g, K "lfr_n", 1, 64, &v)) ||
        (st = tr_gguf_req_f32(g, K "dither", &dither)) ||
        (st = tr_gguf_opt_bool(g, K "upscale_samples", true, &b)) ||
        (st = tr_gguf_opt_bool(g, K "snip_edges", true, &b)) ||
        (st = tr_gguf_opt_bool(g, K "apply_cmvn", false, &b)))
        return st;
    tr_mel_config_kaldi(c, 80);
    if ((st = tr_mel_config_from_gguf(c, g))) return st;
    /* docs/formats/sensevoice.md §4: no dither, triangles from 20 Hz to
     * Nyquist, frames always snip (snip_edges is read, not used) */
    c->snip_edges = true;
    c->f_min = 20.0f;
    c->f_max = 0.5f * (float)c->sample_rate;
    if (c->n_mels * c->lfr_m != d_input)
        return tr_gguf_key_error(d_input_key, "UINT32", "%d is not num_mels %d × lfr_m %d", d_input,
                                 c->n_mels, c->lfr_m);
    return TRANSCRIBE_OK;
}
