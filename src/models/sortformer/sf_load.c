/* Sortformer GGUF loader (docs/formats/sortformer.md §2–§3): every key with
 * its exact type (a mistyped key is TRANSCRIBE_ERR_GGUF naming it, where
 * upstream aborts), the front end (docs/formats/sortformer.md §4), the FastConformer through
 * nn/fastconformer.h (every Conformer tensor shape- and type-checked, which
 * upstream does not), the Transformer blocks and the head, each checked
 * against the keys. Failures free what was loaded. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/sortformer/sortformer.h"
#include "nn/weights.h"
#include "util/log.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define AK       "stt.sortformer."
#define FK       "stt.frontend."

/* docs/formats/sortformer.md §2.3: the architecture and stream keys (the encoder's are read by
 * tr_fc_read_hparams). */
static transcribe_status load_arch_keys(const gguf_file *g, sf_model *m) {
    sf_hparams *hp = &m->hp;
    int feat_in = 0;
    const tr_gguf_u32_key keys[] = {
        {"max_speakers", 1, 64, &hp->max_spk},
        {"frame_hop", 1, 1 << 20, &hp->frame_hop},
        {"encoder.feat_in", 0, 1 << 16, &feat_in},
        {"transformer.n_layers", 1, 4096, &hp->tf_layers},
        {"transformer.d_model", 1, 1 << 16, &hp->tf_d},
        {"transformer.n_heads", 0, 4096, &hp->tf_heads},
        {"transformer.d_ff", 1, 1 << 20, &hp->tf_ff},
        {"stream.chunk_len", 0, 1 << 20, &hp->chunk_len},
        {"stream.spkcache_len", 0, 1 << 20, &hp->spkcache_len},
        {"stream.fifo_len", 0, 1 << 20, &hp->fifo_len},
        {"stream.spkcache_update_period", 0, 1 << 20, &hp->update_period},
    };
    transcribe_status st = tr_gguf_req_u32_keys(g, AK, keys, sizeof keys / sizeof keys[0]);
    if (st) return st;
    const char *s = NULL;
    bool pre_ln = false;
    if ((st = tr_gguf_req_str(g, AK "encoder.conv_norm_type", &s)) ||
        (st = tr_gguf_req_str(g, AK "transformer.activation", &s)) ||
        (st = tr_gguf_opt_bool(g, AK "transformer.pre_ln", false, &pre_ln)))
        return st;
    if (hp->tf_heads == 0 || hp->tf_d % hp->tf_heads != 0)
        return tr_gguf_key_error(AK "transformer.n_heads", "UINT32",
                                 "%d does not divide d_model %d", hp->tf_heads, hp->tf_d);
    if (pre_ln)
        return tr_gguf_key_error(AK "transformer.pre_ln", "BOOL",
                                 "true (only post-LN blocks are defined)");
    /* docs/formats/sortformer.md §2.3: 0 means the built-in 188 (fifo_len 0 is a real value) */
    if (hp->chunk_len == 0) hp->chunk_len = SF_DEFAULT_LEN;
    if (hp->spkcache_len == 0) hp->spkcache_len = SF_DEFAULT_LEN;
    if (hp->update_period == 0) hp->update_period = SF_DEFAULT_LEN;
    /* docs/formats/sortformer.md §6.4: the compression keeps spkcache_len / S - 3 frames per
     * speaker */
    if (hp->spkcache_len / hp->max_spk <= SF_SIL_FRAMES_PER_SPK)
        return tr_gguf_key_error(AK "stream.spkcache_len", "UINT32",
                                 "%d leaves no frame per speaker for %d speakers", hp->spkcache_len,
                                 hp->max_spk);
    return TRANSCRIBE_OK;
}

/* docs/formats/sortformer.md §2.1 / §4: the typed front-end keys, then the NeMo mel with ceil
 * framing. */
static transcribe_status load_frontend(const gguf_file *g, sf_model *m) {
    transcribe_status st;
    int sr = 0, nm = 0, nfft = 0, hop = 0, win = 0;
    float pre = 0, dither = 0;
    const char *window = NULL, *norm = NULL;
    if ((st = tr_gguf_req_u32(g, FK "sample_rate", 1000, 1000000, &sr)) ||
        (st = tr_gguf_req_u32(g, FK "num_mels", 1, 4096, &nm)) ||
        (st = tr_gguf_req_u32(g, FK "n_fft", 2, 1 << 16, &nfft)) ||
        (st = tr_gguf_req_u32(g, FK "hop_length", 1, 1 << 16, &hop)) ||
        (st = tr_gguf_req_u32(g, FK "win_length", 1, 1 << 16, &win)) ||
        (st = tr_gguf_req_str(g, FK "window", &window)) ||
        (st = tr_gguf_req_str(g, FK "normalize", &norm)) ||
        (st = tr_gguf_req_f32_finite(g, FK "pre_emphasis", false, &pre)) ||
        (st = tr_gguf_req_f32(g, FK "dither", &dither)))
        return st;
    if (nfft & (nfft - 1))
        return tr_gguf_key_error(FK "n_fft", "UINT32", "%d is not a power of two", nfft);
    if (win > nfft)
        return tr_gguf_key_error(FK "win_length", "UINT32", "%d is wider than n_fft %d", win, nfft);
    if (strcmp(norm, "none") != 0 && strcmp(norm, "per_feature") != 0)
        return tr_gguf_key_error(FK "normalize", "STRING", "'%s' (none or per_feature)", norm);
    tr_mel_config *c = &m->mel;
    tr_mel_config_nemo(c, nm);
    if ((st = tr_mel_config_from_gguf(c, g))) return st;
    /* docs/formats/sortformer.md §4: symmetric Hann whatever the window key says, zero padding, f
     * 0..8000 (no keys), ceil framing */
    c->window = TR_WIN_HANN_SYMMETRIC;
    c->pad_mode = TR_PAD_CONSTANT;
    c->f_min = 0.0f;
    c->f_max = 8000.0f;
    c->ceil_frames = true;
    if (c->f_max > 0.5f * (float)sr) c->f_max = 0.5f * (float)sr;
    return TRANSCRIBE_OK;
}

/* docs/formats/sortformer.md §2.2: languages (["en"] when absent) and the typed capability
 * booleans. */
static transcribe_status load_caps(const gguf_file *g, sf_model *m) {
    static const char *const en[] = {"en"};
    transcribe_status st =
        tr_gguf_opt_strv_copy(g, "general.languages", 4096, en, 1, &m->lang, &m->n_lang);
    if (st) return st;
    static const char *const caps[] = {
        "stt.capability.streaming", "stt.capability.speaker_diarization",
        "stt.capability.lang_detect", "stt.capability.translate", "stt.capability.timestamps"};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        bool b = false;
        if ((st = tr_gguf_opt_bool(g, caps[i], false, &b))) return st;
    }
    return TRANSCRIBE_OK;
}

/* docs/formats/sortformer.md §3.2: the Transformer blocks; dims {D, Fd}. */
static const tr_nn_wspec k_tf_block[] = {
    {"tf.blocks.%d.norm_1", TR_NN_W_NORM, {TR_NN_DIM(0)}, 0, 0, offsetof(sf_tf_block, norm1)},
    {"tf.blocks.%d.attn.q",
     TR_NN_W_LINEAR,
     {TR_NN_DIM(0), TR_NN_DIM(0)},
     0,
     0,
     offsetof(sf_tf_block, q)},
    {"tf.blocks.%d.attn.k",
     TR_NN_W_LINEAR,
     {TR_NN_DIM(0), TR_NN_DIM(0)},
     0,
     0,
     offsetof(sf_tf_block, k)},
    {"tf.blocks.%d.attn.v",
     TR_NN_W_LINEAR,
     {TR_NN_DIM(0), TR_NN_DIM(0)},
     0,
     0,
     offsetof(sf_tf_block, v)},
    {"tf.blocks.%d.attn.out",
     TR_NN_W_LINEAR,
     {TR_NN_DIM(0), TR_NN_DIM(0)},
     0,
     0,
     offsetof(sf_tf_block, o)},
    {"tf.blocks.%d.norm_2", TR_NN_W_NORM, {TR_NN_DIM(0)}, 0, 0, offsetof(sf_tf_block, norm2)},
    {"tf.blocks.%d.ff.in",
     TR_NN_W_LINEAR,
     {TR_NN_DIM(0), TR_NN_DIM(1)},
     0,
     0,
     offsetof(sf_tf_block, ff_in)},
    {"tf.blocks.%d.ff.out",
     TR_NN_W_LINEAR,
     {TR_NN_DIM(1), TR_NN_DIM(0)},
     0,
     0,
     offsetof(sf_tf_block, ff_out)},
};

static transcribe_status load_tensors(const gguf_file *g, sf_model *m) {
    const sf_hparams *hp = &m->hp;
    const int64_t d = m->enc_hp.d_model, D = hp->tf_d, S = hp->max_spk;
    tr_nn_wsrc src = tr_nn_wsrc_gguf(g);
    const tr_nn_wspec top[] = {
        {"diar.encoder_proj", TR_NN_W_LINEAR, {d, D}, 0, 0, offsetof(sf_model, proj)},
        {"diar.fc1", TR_NN_W_LINEAR, {D, D}, 0, 0, offsetof(sf_model, fc1)},
        {"diar.spk_head", TR_NN_W_LINEAR, {2 * D, S}, 0, 0, offsetof(sf_model, spk_head)},
        {"diar.single_spk_head", TR_NN_W_LINEAR, {D, S}, 0, 0, offsetof(sf_model, single)},
    };
    bool ok = tr_nn_load_weights(&src, top, sizeof top / sizeof top[0], NULL, 0, true, m);
    m->tf = calloc((size_t)hp->tf_layers, sizeof *m->tf);
    if (!m->tf) return TRANSCRIBE_ERR_OOM;
    const int64_t dims[2] = {D, hp->tf_ff};
    ok = tr_nn_load_layers(&src, k_tf_block, sizeof k_tf_block / sizeof k_tf_block[0], dims,
                           hp->tf_layers, true, m->tf, sizeof *m->tf) &&
         ok;
    return ok ? TRANSCRIBE_OK : ERR_GGUF;
}

static transcribe_status load_all(const gguf_file *g, void *model) {
    sf_model *m = model;
    const char *s = NULL;
    transcribe_status st = tr_gguf_req_str_is(g, "general.architecture", "sortformer", NULL);
    if (st) return st;
    if ((st = tr_gguf_opt_str(g, "stt.variant", "diar_streaming_sortformer_4spk-v2.1", &s)))
        return st;
    m->variant = s;
    if ((st = tr_fc_read_hparams(g, AK "encoder.", TR_FC_KEYS_SORTFORMER, &m->enc_hp)) ||
        (st = load_arch_keys(g, m)) || (st = load_frontend(g, m)) || (st = load_caps(g, m)))
        return st;
    /* docs/formats/sortformer.md §2.3: the pre-encode is the x8 dw_striding stack (80 ms frames) */
    if (m->enc_hp.sub_factor != 8)
        return tr_gguf_key_error(AK "encoder.subsampling_factor", "UINT32", "%d (only 8)",
                                 m->enc_hp.sub_factor);
    if (m->mel.n_mels != m->enc_hp.n_mels)
        return tr_gguf_key_error(FK "num_mels", "UINT32", "%d differs from the encoder's %d",
                                 m->mel.n_mels, m->enc_hp.n_mels);
    if ((st = tr_fc_load(g, &m->enc_hp, &m->enc))) return st;
    if ((st = load_tensors(g, m))) return st;
    const sf_hparams *hp = &m->hp;
    m->ms_per_frame = 1000.0 * hp->frame_hop / m->mel.sample_rate;
    if (hp->frame_hop != m->mel.hop_length * m->enc_hp.sub_factor)
        TR_WARN("sortformer: frame_hop %d is not hop %d x %d; segment times follow frame_hop",
                hp->frame_hop, m->mel.hop_length, m->enc_hp.sub_factor);
    TR_INFO("sortformer: %s, %d conformer + %d transformer blocks, %d speakers, stream "
            "chunk %d / fifo %d / cache %d / update %d",
            m->variant, m->enc_hp.n_layers, hp->tf_layers, hp->max_spk, hp->chunk_len, hp->fifo_len,
            hp->spkcache_len, hp->update_period);
    return TRANSCRIBE_OK;
}

void tr_sf_model_free(sf_model *m) {
    if (!m) return;
    tr_fc_free(m->enc);
    free(m->tf);
    tr_strv_free(m->lang, m->n_lang);
    free(m);
}

TR_FAMILY_GGUF_LOAD(sf, "sortformer", load_all)

/* docs/formats/sortformer.md §7–§8: no transcript timestamps (speaker rows only), no detection,
 * translation or input limit; the DIARIZATION feature always. */
void tr_sf_model_describe(const sf_model *m, tr_model_desc *desc) {
    tr_model_desc_begin(desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant,
                        TRANSCRIBE_TIMESTAMPS_NONE);
    desc->features[TRANSCRIBE_FEATURE_DIARIZATION] = true;
    desc->speakers_only = true; /* speaker rows, no transcript (docs/formats/sortformer.md §6.5) */
    /* the streaming driver takes any length in one run (docs/formats/sortformer.md §8: no input
     * limit), and only one run keeps the speaker slots consistent over the input */
    desc->features[TRANSCRIBE_FEATURE_LONG_FORM] = true;
}
