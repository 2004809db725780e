/* Loads the GGUF that tools/convert_silero_vad.py writes and checks every
 * tensor's type and shape, so the forward pass can trust them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "vad/vad.h"

static const tr_tensor *req(const gguf_file *g, const char *pfx, const char *name, int n_dims,
                            int64_t a, int64_t b, int64_t c) {
    char full[96];
    snprintf(full, sizeof full, "%s%s", pfx, name);
    const int64_t ne[3] = {a, b, c};
    return tr_gguf_require_tensor(g, full, TR_TYPES_F32, n_dims, ne);
}

static const float *vec(const gguf_file *g, const char *pfx, const char *name, int64_t n) {
    const tr_tensor *t = req(g, pfx, name, 1, n, 1, 1);
    return t ? (const float *)t->data : NULL;
}

/* A kernel-1 conv weight {1, c_in, c_out} as the matrix {c_in, c_out}. */
static tr_tensor view2d(const tr_tensor *w) {
    tr_tensor v = *w;
    v.n_dims = 2;
    v.ne[0] = w->ne[1];
    v.ne[1] = w->ne[2];
    v.ne[2] = 1;
    v.nb1 = (size_t)v.ne[0] * sizeof(float);
    return v;
}

/* conv weight [out][in/groups][k] is stored with ne {k, in/groups, out} */
static bool load_net(const gguf_file *g, const char *pfx, const char *strides_key,
                     tr_vad_net *net) {
    static const int ch[TR_VAD_N_BLOCKS + 1] = {2 * TR_VAD_BINS, 16, 32, 32, 64};
    const int32_t *st = NULL;
    uint64_t n_st = 0;
    if (tr_gguf_get_arr_i32(g, strides_key, &st, &n_st) != 1 || n_st != TR_VAD_N_BLOCKS) {
        TR_ERROR("silero-vad: key %s missing or not %d INT32 values", strides_key, TR_VAD_N_BLOCKS);
        return false;
    }
    bool ok = true;
    char nm[64];
    for (int b = 0; b < TR_VAD_N_BLOCKS; b++) {
        tr_vad_block *k = &net->blocks[b];
        k->c_in = ch[b];
        k->c_out = ch[b + 1];
        if (st[b] != 1 && st[b] != 2) {
            TR_ERROR("silero-vad: %s[%d] = %d (1 or 2 expected)", strides_key, b, (int)st[b]);
            return false;
        }
        k->rp_stride = st[b];
        snprintf(nm, sizeof nm, "block.%d.dw.weight", b);
        ok &= (k->dw_w = req(g, pfx, nm, 3, 5, 1, k->c_in)) != NULL;
        snprintf(nm, sizeof nm, "block.%d.dw.bias", b);
        ok &= (k->dw_b = vec(g, pfx, nm, k->c_in)) != NULL;
        snprintf(nm, sizeof nm, "block.%d.pw.weight", b);
        ok &= (k->pw_w = req(g, pfx, nm, 3, 1, k->c_in, k->c_out)) != NULL;
        snprintf(nm, sizeof nm, "block.%d.pw.bias", b);
        ok &= (k->pw_b = vec(g, pfx, nm, k->c_out)) != NULL;
        if (k->c_in != k->c_out) { /* a residual projection where the width changes */
            snprintf(nm, sizeof nm, "block.%d.proj.weight", b);
            ok &= (k->proj_w = req(g, pfx, nm, 3, 1, k->c_in, k->c_out)) != NULL;
            snprintf(nm, sizeof nm, "block.%d.proj.bias", b);
            ok &= (k->proj_b = vec(g, pfx, nm, k->c_out)) != NULL;
        }
        snprintf(nm, sizeof nm, "reparam.%d.weight", b);
        ok &= (k->rp_w = req(g, pfx, nm, 3, 1, k->c_out, k->c_out)) != NULL;
        snprintf(nm, sizeof nm, "reparam.%d.bias", b);
        ok &= (k->rp_b = vec(g, pfx, nm, k->c_out)) != NULL;
    }
    for (int b = 0; ok && b < TR_VAD_N_BLOCKS; b++) {
        tr_vad_block *k = &net->blocks[b];
        k->pw = view2d(k->pw_w);
        k->rp = view2d(k->rp_w);
        if (k->proj_w) k->proj = view2d(k->proj_w);
    }
    for (int l = 0; l < 2; l++) {
        snprintf(nm, sizeof nm, "lstm.%d.w_ih", l);
        ok &= (net->w_ih[l] = req(g, pfx, nm, 2, TR_VAD_HIDDEN, 4 * TR_VAD_HIDDEN, 1)) != NULL;
        snprintf(nm, sizeof nm, "lstm.%d.w_hh", l);
        ok &= (net->w_hh[l] = req(g, pfx, nm, 2, TR_VAD_HIDDEN, 4 * TR_VAD_HIDDEN, 1)) != NULL;
        snprintf(nm, sizeof nm, "lstm.%d.bias", l);
        ok &= (net->lstm_b[l] = vec(g, pfx, nm, 4 * TR_VAD_HIDDEN)) != NULL;
    }
    ok &= (net->dec_w = req(g, pfx, "decoder.weight", 2, TR_VAD_HIDDEN, 1, 1)) != NULL;
    const float *db = vec(g, pfx, "decoder.bias", 1);
    ok &= db != NULL;
    if (db) net->dec_b = db[0];
    return ok;
}

/* The basis rows are Hann(n)·cos(2πkn/N) and −Hann(n)·sin(2πkn/N) in every
 * Silero v4 file; then an FFT gives the same spectra (X = Σ x·e^{−iθ}). Any
 * other basis keeps the GEMM. */
static void use_fft_if_dft(struct transcribe_vad_model *m) {
    enum { N = TR_VAD_N_FFT, B = TR_VAD_BINS };
    const float *b = (const float *)m->basis->data;
    const double pi = 3.14159265358979323846;
    double worst = 0;
    for (int n = 0; n < N; n++) m->hann[n] = 0.5 - 0.5 * cos(2 * pi * n / N);
    for (int k = 0; k < B; k++) {
        for (int n = 0; n < N; n++) {
            double th = 2 * pi * (double)((long)k * n % N) / N;
            double re = m->hann[n] * cos(th), im = -m->hann[n] * sin(th);
            /* written out: GCC 12 for aarch64 crashes vectorising fmax(fabs) */
            double e_re = fabs(b[(size_t)k * N + n] - re),
                   e_im = fabs(b[(size_t)(B + k) * N + n] - im);
            if (e_re > worst) worst = e_re;
            if (e_im > worst) worst = e_im;
        }
    }
    if (worst <= 1e-6) m->fft = tr_fft_create(N); /* NULL (OOM): the GEMM path */
}

transcribe_status tr_vad_model_load(const char *path, struct transcribe_vad_model **out) {
    *out = NULL;
    struct transcribe_vad_model *m = calloc(1, sizeof *m);
    if (!m) {
        TR_ERROR("silero-vad: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    transcribe_status st = tr_gguf_open(path, &m->gguf);
    if (st != TRANSCRIBE_OK) {
        TR_ERROR("silero-vad: cannot read '%s' as GGUF", path);
        free(m);
        return st;
    }
    const char *arch = NULL;
    if (tr_gguf_get_str(m->gguf, "general.architecture", &arch) != 1 ||
        strcmp(arch, "silero-vad")) {
        TR_ERROR("silero-vad: '%s' is not a Silero VAD model (architecture '%s')", path,
                 arch ? arch : "?");
        tr_gguf_close(m->gguf);
        free(m);
        return TRANSCRIBE_ERR_UNSUPPORTED_ARCH;
    }
    /* the scalar geometry is fixed by the network; the file must agree */
    static const char *keys[] = {"silero_vad.n_fft", "silero_vad.hop", "silero_vad.reflect_pad",
                                 "silero_vad.lstm.hidden"};
    static const uint32_t want[] = {TR_VAD_N_FFT, TR_VAD_HOP, TR_VAD_PAD, TR_VAD_HIDDEN};
    bool ok = true;
    for (int i = 0; i < 4; i++) {
        uint32_t v = 0;
        if (tr_gguf_get_u32(m->gguf, keys[i], &v) != 1 || v != want[i]) {
            TR_ERROR("silero-vad: %s must be %u", keys[i], (unsigned)want[i]);
            ok = false;
        }
    }
    const tr_tensor *basis = req(m->gguf, "", "stft.basis", 2, TR_VAD_N_FFT, 2 * TR_VAD_BINS, 1);
    m->basis = basis;
    m->norm_filter = vec(m->gguf, "", "norm.filter", TR_VAD_NORM_K);
    ok = ok && basis && m->norm_filter;
    ok = load_net(m->gguf, "sr16.", "silero_vad.sr16.strides", &m->net16) && ok;
    ok = load_net(m->gguf, "sr8.", "silero_vad.sr8.strides", &m->net8) && ok;
    if (!ok) {
        TR_ERROR("silero-vad: '%s' lacks tensors or keys the network needs", path);
        tr_gguf_close(m->gguf);
        free(m);
        return TRANSCRIBE_ERR_GGUF;
    }
    use_fft_if_dft(m);
    *out = m;
    return TRANSCRIBE_OK;
}
