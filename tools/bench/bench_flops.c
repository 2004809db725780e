/* Analytic encoder cost per family: 2 FLOPs per multiply-add of every GEMM,
 * attention product and convolution (element-wise passes, norms and the
 * softmax are not counted), from the GGUF's hyper-parameters and the input
 * length. The encode time divided into this is the achieved GFLOP/s that
 * transcribe-bench model compares against OpenBLAS.
 *
 * Whisper: conv stem (k = 3 on the 3000-frame window, then stride 2), per
 * layer Q/K/V/O and the FFN, attention 4·T²·d (QKᵀ and PV); windows are
 * counted as ceil(audio / 30 s) (seeks that move back add passes that are
 * not counted). FastConformer (Parakeet, Canary): the dw_striding
 * pre-encode (conv0, two depthwise + pointwise pairs, output projection),
 * per layer two macaron FFNs, Q/K/V/O, the positional projection of the
 * 2T − 1 table rows, attention 6·T·T_kv·d (content, position, PV), the
 * conv module (two pointwise convs, depthwise k taps); Canary adds the
 * encoder→decoder projection. Parakeet inputs over one window are counted
 * per window exactly as pk_run.c schedules them. Whisper and Canary also
 * project the decoder's cross-attention K and V inside the timed encode
 * stage (once per window, 4·T·d_src·d_dec per decoder layer): counted too,
 * since encode_ms includes them. The sgemm baseline's shape is the FFN's
 * K and N over at least BENCH_SGEMM_MIN_M rows (bench.h says why).
 * Granite Speech: the Conformer alone (its
 * Q-Former projector is timed and reported apart): the input projection,
 * per layer two macaron FFNs, Q/K/V/O, block-local attention over blocks
 * of context_size rows, 6·n²·d per block of n rows (content, the Shaw
 * relative-position term q_i·E[i−j] and PV), the conv module (pointwise
 * up to 2·c and back, depthwise k taps), and the CTC bypass once (to the
 * output_dim vocabulary and back). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "gguf/gguf.h"
#include "nn/fastconformer.h"

/* Parakeet's long-input schedule (pk_run.c tr_pk_window_cfg_default). */
#define PK_MAX_FRAMES 1280
#define PK_WIN_FRAMES 1280
#define PK_HOP_FRAMES 960

static uint32_t u32_or(const gguf_file *g, const char *key, uint32_t dflt) {
    uint32_t v = 0;
    return tr_gguf_get_u32(g, key, &v) == 1 ? v : dflt;
}

/* Output length of a 3-tap stride-2 conv with padding 1. */
static long half_up(long n) {
    return (n + 2 - 3) / 2 + 1;
}

static double whisper_window_flop(double D, double F, double L, double mels, double Tm,
                                  double L_dec) {
    const double S = Tm / 2;
    double f = 2 * Tm * D * (mels * 3) + 2 * S * D * (D * 3); /* conv stem */
    f += L * (8 * S * D * D + 4 * S * D * F + 4 * S * S * D);
    return f + L_dec * 4 * S * D * D; /* cross K/V */
}

/* One FastConformer pass over T_mel mel frames; returns the encoder frames. */
static double fc_pass_flop(const tr_fc_hparams *hp, long T_mel, long *T_out) {
    const double C = hp->sub_channels, d = hp->d_model, F = hp->d_ff, k = hp->conv_kernel;
    long t[4] = {T_mel}, w[4] = {hp->n_mels};
    for (int i = 1; i < 4; i++) {
        t[i] = half_up(t[i - 1]);
        w[i] = half_up(w[i - 1]);
    }
    double f = 2.0 * t[1] * w[1] * C * 9; /* conv0, one input channel */
    for (int i = 2; i <= 3; i++)          /* depthwise + pointwise */
        f += 2.0 * t[i] * w[i] * C * 9 + 2.0 * t[i] * w[i] * C * C;
    const double T = (double)t[3];
    f += 2 * T * (C * (double)w[3]) * d; /* flatten → d_model */
    double T_kv = T;
    if (hp->att_style == TR_FC_STYLE_REGULAR && hp->att_left >= 0 && hp->att_right >= 0) {
        double win = hp->att_left + hp->att_right + 1;
        if (win < T_kv) T_kv = win;
    }
    const double layer = 8 * T * d * F                    /* two macaron FFNs */
                         + 8 * T * d * d                  /* Q, K, V, O */
                         + 2 * (2 * T - 1) * d * d        /* positional projection */
                         + 6 * T * T_kv * d               /* content, position, PV */
                         + 6 * T * d * d + 2 * T * d * k; /* pointwise, depthwise */
    *T_out = t[3];
    return f + hp->n_layers * layer;
}

static bool fastconformer_cost(const gguf_file *g, bool canary, long n, bench_enc_cost *out,
                               const char **why) {
    tr_fc_hparams hp;
    const char *prefix = canary ? "stt.canary.encoder." : "stt.parakeet.encoder.";
    if (tr_fc_read_hparams(g, prefix, canary ? TR_FC_KEYS_CANARY : TR_FC_KEYS_PARAKEET, &hp)) {
        *why = "unreadable encoder hyper-parameters";
        return false;
    }
    const long hop = u32_or(g, "stt.frontend.hop_length", 160);
    if (hop <= 0) {
        *why = "bad hop_length";
        return false;
    }
    out->family = canary ? "canary" : "parakeet";
    out->gflop = 0;
    out->windows = 0;
    long T = 0;
    const long total = half_up(half_up(half_up(n / hop + 1)));
    if (canary || total <= PK_MAX_FRAMES) {
        out->gflop = fc_pass_flop(&hp, n / hop + 1, &T);
        out->windows = 1;
        const double d_dec = canary ? u32_or(g, "stt.canary.decoder.d_model", 0) : 0;
        if (d_dec > 0) {
            bool proj = false;
            tr_gguf_get_bool(g, "stt.canary.decoder.encoder_decoder_proj", &proj);
            const double d_src = proj ? d_dec : hp.d_model;
            if (proj) out->gflop += 2.0 * T * hp.d_model * d_dec;
            out->gflop += u32_or(g, "stt.canary.decoder.n_layers", 0) * 4.0 * T * d_src * d_dec;
        }
    } else {
        const long spf = 8 * hop;
        long start = 0, T_first = 0;
        for (;;) {
            const int last = start + PK_WIN_FRAMES >= total;
            const long a = start * spf, b = last ? n : (start + PK_WIN_FRAMES) * spf;
            out->gflop += fc_pass_flop(&hp, (b - a) / hop + 1, &T);
            if (out->windows++ == 0) T_first = T;
            if (last) break;
            long next = start + PK_HOP_FRAMES;
            if (next + PK_WIN_FRAMES > total) next = total - PK_WIN_FRAMES;
            start = next > start ? next : start + 1;
        }
        T = T_first;
    }
    out->gflop *= 1e-9;
    out->frames = (int)T;
    out->gemm_m = T > BENCH_SGEMM_MIN_M ? (int)T : BENCH_SGEMM_MIN_M;
    out->gemm_k = hp.d_model;
    out->gemm_n = hp.d_ff;
    return true;
}

/* The Whisper encoder per 30 s window: Whisper itself (keys under
 * stt.whisper.encoder., plus its decoder's cross K/V) and MOSS (under
 * stt.moss.encoder., one window per 30 s chunk; its adaptor is small and
 * not counted). */
static bool whisper_cost(const gguf_file *g, const char *family, long n, bench_enc_cost *out,
                         const char **why) {
    char k[96];
#define KEY(name) (snprintf(k, sizeof k, "stt.%s.encoder." name, family), k)
    const uint32_t L = u32_or(g, KEY("n_layers"), 0), D = u32_or(g, KEY("d_model"), 0),
                   F = u32_or(g, KEY("ffn_dim"), 0), mels = u32_or(g, KEY("num_mel_bins"), 0),
                   Tm = u32_or(g, "stt.frontend.nb_max_frames", 3000),
                   hop = u32_or(g, "stt.frontend.hop_length", 160),
                   L_dec = u32_or(g, "stt.whisper.decoder.n_layers", 0);
#undef KEY
    if (!L || !D || !F || !mels || !Tm || !hop) {
        *why = "missing whisper encoder keys";
        return false;
    }
    const long win = (long)Tm * hop;
    out->family = family;
    out->windows = n > win ? (int)((n + win - 1) / win) : 1;
    out->gflop = out->windows * whisper_window_flop(D, F, L, mels, Tm, L_dec) * 1e-9;
    out->frames = (int)(Tm / 2);
    out->gemm_m = out->frames > BENCH_SGEMM_MIN_M ? out->frames : BENCH_SGEMM_MIN_M;
    out->gemm_k = (int)D;
    out->gemm_n = (int)F;
    return true;
}

/* Granite Speech Conformer (docs/formats/granite_speech.md §6.1) on n samples. */
static bool granite_cost(const gguf_file *g, long n, bench_enc_cost *out, const char **why) {
#define GK(name) "stt.granite.encoder." name
    const double L = u32_or(g, GK("n_layers"), 0), d = u32_or(g, GK("hidden"), 0),
                 in = u32_or(g, GK("input_dim"), 0), V = u32_or(g, GK("output_dim"), 0),
                 F = d * u32_or(g, GK("feedforward_mult"), 0),
                 c = d * u32_or(g, GK("conv_expansion"), 0),
                 k = u32_or(g, GK("conv_kernel_size"), 0);
    const long C = u32_or(g, GK("context_size"), 0);
#undef GK
    const long hop = u32_or(g, "stt.frontend.hop_length", 160);
    if (!L || !d || !in || !V || !F || !c || !k || C <= 0 || hop <= 0) {
        *why = "missing granite encoder keys";
        return false;
    }
    const long T = n / hop / 2; /* stacked frames: tr_gs_enc_frames */
    double attn = 0;            /* Σ over blocks of n_b² */
    for (long r0 = 0; r0 < T; r0 += C) {
        const double nb = (double)(T - r0 < C ? T - r0 : C);
        attn += nb * nb;
    }
    const double layer = 8 * T * d * F                    /* two macaron FFNs */
                         + 8 * T * d * d                  /* Q, K, V, O */
                         + 6 * attn * d                   /* content, Shaw position, PV */
                         + 2 * T * d * 2 * c              /* pointwise 1 (GLU input) */
                         + 2 * T * c * k + 2 * T * c * d; /* depthwise, pointwise 2 */
    out->family = "granite_speech";
    out->windows = 1;
    out->gflop = (2 * T * in * d + L * layer + 4 * T * d * V) * 1e-9;
    out->frames = (int)T;
    out->gemm_m = T > BENCH_SGEMM_MIN_M ? (int)T : BENCH_SGEMM_MIN_M;
    out->gemm_k = (int)d;
    out->gemm_n = (int)F;
    return true;
}

/* Qwen3-ASR audio encoder (docs/formats/qwen3_asr.md §6) on n samples: per
 * chunk of 2 * n_window mel frames (the last zero-padded) three 3x3
 * stride-2 convolutions and conv_out, then full attention blocks over the
 * pad-trimmed rows and the proj1 / proj2 head. */
static bool qwen3_cost(const gguf_file *g, long n, bench_enc_cost *out, const char **why) {
#define QK(name) "stt.qwen3_asr.encoder." name
    const double L = u32_or(g, QK("n_layers"), 0), d = u32_or(g, QK("d_model"), 0),
                 F = u32_or(g, QK("ffn_dim"), 0), C = u32_or(g, QK("downsample_hidden"), 0),
                 V = u32_or(g, QK("output_dim"), 0);
    const long M = u32_or(g, QK("num_mel_bins"), 0), W = 2L * u32_or(g, QK("n_window"), 0);
#undef QK
    const long hop = u32_or(g, "stt.frontend.hop_length", 160);
    if (!L || !d || !F || !C || !V || M <= 0 || W <= 0 || hop <= 0) {
        *why = "missing qwen3_asr encoder keys";
        return false;
    }
    const long T_mel = n / hop;
    if (T_mel < 1) {
        *why = "input shorter than one mel frame";
        return false;
    }
    const long n_chunks = (T_mel + W - 1) / W;
    long h = M, w = W;
    double conv = 0; /* per chunk */
    for (int i = 0; i < 3; i++) {
        h = (h + 1) / 2;
        w = (w + 1) / 2;
        conv += 2.0 * C * (i == 0 ? 1 : C) * 9 * (double)h * (double)w;
    }
    const long per = w, last = T_mel - (n_chunks - 1) * W;
    long tail = last;
    for (int i = 0; i < 3; i++) tail = (tail + 1) / 2;
    const double T = (double)((n_chunks - 1) * per + tail); /* tr_qa_enc_frames */
    const double layer = 8 * T * d * d + 4 * T * T * d + 4 * T * d * F;
    out->family = "qwen3_asr";
    out->windows = (int)n_chunks;
    out->gflop = (n_chunks * (conv + 2.0 * per * C * (double)h * d) + L * layer + 2 * T * d * d +
                  2 * T * d * V) *
                 1e-9;
    out->frames = (int)T;
    out->gemm_m = T > BENCH_SGEMM_MIN_M ? (int)T : BENCH_SGEMM_MIN_M;
    out->gemm_k = (int)d;
    out->gemm_n = (int)F;
    return true;
}

bool bench_enc_cost_of(const char *model_path, long n_samples, bench_enc_cost *out,
                       const char **why) {
    memset(out, 0, sizeof *out);
    *why = NULL;
    gguf_file *g = NULL;
    if (tr_gguf_open(model_path, &g) != TRANSCRIBE_OK) {
        *why = "not a GGUF file";
        return false;
    }
    const char *arch = NULL;
    bool ok = false;
    if (tr_gguf_get_str(g, "general.architecture", &arch) != 1 || !arch)
        *why = "no general.architecture";
    else if (!strcmp(arch, "whisper") || !strcmp(arch, "moss"))
        ok = whisper_cost(g, strcmp(arch, "moss") ? "whisper" : "moss", n_samples, out, why);
    else if (!strcmp(arch, "parakeet"))
        ok = fastconformer_cost(g, false, n_samples, out, why);
    else if (!strcmp(arch, "canary"))
        ok = fastconformer_cost(g, true, n_samples, out, why);
    else if (!strcmp(arch, "granite_speech"))
        ok = granite_cost(g, n_samples, out, why);
    else if (!strcmp(arch, "qwen3_asr"))
        ok = qwen3_cost(g, n_samples, out, why);
    else
        *why = "architecture not counted";
    tr_gguf_close(g);
    return ok;
}
