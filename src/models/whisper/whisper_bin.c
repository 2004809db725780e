/* Legacy whisper.cpp .bin adapter (docs/formats/gguf.md §11.3): derived
 * hyperparameters, special ids, suppression lists, languages, front end and
 * tokenizer, on top of the .bin container parser (src/gguf/ggml_bin.h),
 * which exposes the tensors under their canonical GGUF names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_bin.h"
#include "models/whisper/whisper_bin_info.h"
#include "gguf/gguf.h"
#include "models/whisper/whisper_src.h"
#include "text/tokenizer.h"
#include "util/log.h"

static const tr_tensor *bin_tensor(const tr_ggml_bin *b, const char *name, uint32_t mask,
                                   int n_dims, const int64_t *ne) {
    const tr_tensor *t = tr_ggml_bin_find_tensor(b, name);
    if (!t) {
        TR_ERROR("whisper: tensor '%s' is missing from the .bin model", name);
        return NULL;
    }
    if (t->type < 0 || t->type >= 32 || !(mask & (1u << t->type))) {
        TR_ERROR("whisper: tensor '%s' has type %d, not allowed here", name, t->type);
        return NULL;
    }
    for (int d = 0; d < 4; d++) {
        int64_t want = d < n_dims ? ne[d] : 1;
        if (t->ne[d] != want) {
            TR_ERROR("whisper: tensor '%s' has ne[%d] = %lld, expected %lld", name, d,
                     (long long)t->ne[d], (long long)want);
            return NULL;
        }
    }
    return t;
}

const tr_tensor *tr_wh_src_tensor(wh_src *src, const char *name, uint32_t types_mask, int n_dims,
                                  const int64_t *ne) {
    if (src->gguf) return tr_gguf_require_tensor(src->gguf, name, types_mask, n_dims, ne);
    if (src->bin) return bin_tensor(src->bin, name, types_mask, n_dims, ne);
    TR_ERROR("whisper: tensor '%s' unavailable (no weight source)", name);
    return NULL;
}

/* Vocabulary of n_vocab pieces: the file's raw byte pieces, then the special
 * literals at their derived ids (lookup only, CONTROL). */
static transcribe_status build_tokenizer(const tr_ggml_bin *b, const tr_whisper_bin_info *in,
                                         wh_model *m) {
    const int V = m->hp.n_vocab, nf = tr_ggml_bin_n_tokens(b);
    char **own = calloc((size_t)V, sizeof *own);
    const char **pieces = calloc((size_t)V, sizeof *pieces);
    size_t *lens = calloc((size_t)V, sizeof *lens);
    int32_t *types = calloc((size_t)V, sizeof *types);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (!own || !pieces || !lens || !types) goto done;
    for (int i = 0; i < V; i++) {
        char lit[48];
        const char *p = NULL;
        size_t len = 0;
        types[i] = 1;
        if (i < nf && i != in->eot && i < in->sot) p = tr_ggml_bin_token(b, i, &len);
        if (!p) {
            types[i] = 3;
            if (i == in->eot)
                snprintf(lit, sizeof lit, "<|endoftext|>");
            else if (i == in->sot)
                snprintf(lit, sizeof lit, "<|startoftranscript|>");
            else if (in->multilingual && i > in->sot && i <= in->sot + in->num_languages &&
                     tr_whisper_bin_language(i - in->sot - 1))
                snprintf(lit, sizeof lit, "<|%s|>", tr_whisper_bin_language(i - in->sot - 1));
            else if (i == in->translate)
                snprintf(lit, sizeof lit, "<|translate|>");
            else if (i == in->transcribe)
                snprintf(lit, sizeof lit, "<|transcribe|>");
            else if (i == in->startoflm)
                snprintf(lit, sizeof lit, "<|startoflm|>");
            else if (i == in->startofprev)
                snprintf(lit, sizeof lit, "<|startofprev|>");
            else if (i == in->nospeech)
                snprintf(lit, sizeof lit, "<|nospeech|>");
            else if (i == in->notimestamps)
                snprintf(lit, sizeof lit, "<|notimestamps|>");
            else if (i >= in->timestamp_begin)
                snprintf(lit, sizeof lit, "<|%.2f|>", (i - in->timestamp_begin) * 0.02);
            else
                snprintf(lit, sizeof lit, "<|unused_%d|>", i);
            own[i] = strdup(lit);
            if (!own[i]) goto done;
            p = own[i];
            len = strlen(p);
        }
        pieces[i] = p;
        lens[i] = len;
    }
    st = tr_tokenizer_create_raw(pieces, lens, V, types, &m->tok);
    if (st == TRANSCRIBE_OK) m->n_tok_pieces = tr_tokenizer_n_vocab(m->tok);
done:
    for (int i = 0; own && i < V; i++) free(own[i]);
    free(own);
    free(pieces);
    free(lens);
    free(types);
    return st;
}

transcribe_status tr_wh_load_bin(const void *data, size_t size, wh_model *m) {
    tr_ggml_bin *b = NULL;
    transcribe_status st = tr_ggml_bin_open_memory(data, size, &b);
    if (st != TRANSCRIBE_OK) return st;
    m->bin = b;
    if (tr_ggml_bin_n_file_tensors(b) <= 0) {
        TR_ERROR("whisper: the .bin file holds no weights");
        return TRANSCRIBE_ERR_GGUF;
    }
    const tr_ggml_bin_hparams *h = tr_ggml_bin_hparams_of(b);
    if (h->n_audio_state != h->n_text_state || h->n_audio_head != h->n_text_head) {
        TR_ERROR("whisper: .bin encoder/decoder widths differ");
        return TRANSCRIBE_ERR_GGUF;
    }
    wh_hparams *hp = &m->hp;
    hp->n_enc_layers = h->n_audio_layer;
    hp->n_dec_layers = h->n_text_layer;
    hp->d_model = h->n_audio_state;
    hp->n_head = h->n_audio_head;
    hp->head_dim = hp->d_model / hp->n_head;
    hp->enc_ffn = hp->dec_ffn = 4 * hp->d_model;
    hp->n_mels = h->n_mels;
    hp->n_audio_ctx = h->n_audio_ctx;
    hp->n_text_ctx = h->n_text_ctx;
    hp->n_vocab = h->n_vocab;
    hp->n_samples_window = 480000;
    hp->n_frames_window = 3000;
    if (hp->n_frames_window > 2 * hp->n_audio_ctx) {
        TR_ERROR("whisper: .bin n_audio_ctx %d is too small for 3000 mel frames", hp->n_audio_ctx);
        return TRANSCRIBE_ERR_GGUF;
    }

    /* front end: fixed Whisper values, filterbank from the header, window synthesised */
    tr_mel_config_whisper(&m->mel, hp->n_mels);
    int n_mel = 0, n_freq = 0;
    m->mel.filterbank = tr_ggml_bin_filters(b, &n_mel, &n_freq);
    const tr_tensor *win = tr_ggml_bin_find_tensor(b, "frontend.window");
    if (win && win->type == 0 && win->ne[0] == m->mel.n_fft) m->mel.baked_window = win->data;
    if (n_mel != hp->n_mels || n_freq != m->mel.n_fft / 2 + 1) {
        TR_ERROR("whisper: .bin filterbank is %dx%d", n_mel, n_freq);
        return TRANSCRIBE_ERR_GGUF;
    }

    tr_whisper_bin_info in;
    tr_whisper_bin_info_from(h, &in);
    m->eot = in.eot;
    m->sot = in.sot;
    m->translate = in.multilingual ? in.translate : -1;
    m->transcribe = in.multilingual ? in.transcribe : -1;
    m->prev_sot = in.startofprev;
    m->no_ts = in.notimestamps;
    m->ts_begin = in.notimestamps + 1;
    m->no_speech = in.notimestamps - 1;
    m->multilingual = m->can_translate = in.multilingual;
    if (m->ts_begin >= hp->n_vocab) return TRANSCRIBE_ERR_GGUF;

    int n_ns = 0;
    const int32_t *ns = tr_whisper_bin_nonspeech(in.multilingual, &n_ns);
    m->suppress = malloc((size_t)(n_ns + 6) * sizeof(int32_t));
    m->begin_suppress = malloc(2 * sizeof(int32_t));
    if (!m->suppress || !m->begin_suppress) return TRANSCRIBE_ERR_OOM;
    for (int i = 0; i < n_ns; i++)
        if (ns[i] >= 0 && ns[i] < hp->n_vocab) m->suppress[m->n_suppress++] = ns[i];
    int32_t ctl[6] = {in.sot,       in.translate,   in.transcribe,
                      in.startoflm, in.startofprev, in.nospeech};
    for (int i = 0; i < 6; i++)
        if (ctl[i] >= 0 && ctl[i] < hp->n_vocab) m->suppress[m->n_suppress++] = ctl[i];
    m->begin_suppress[0] = 220;
    m->begin_suppress[1] = in.eot;
    m->n_begin_suppress = 2;

    int nl = in.multilingual ? in.num_languages : 1;
    m->lang = calloc((size_t)nl, sizeof *m->lang);
    m->lang_tok = calloc((size_t)nl, sizeof *m->lang_tok);
    if (!m->lang || !m->lang_tok) return TRANSCRIBE_ERR_OOM;
    m->n_lang = nl;
    for (int i = 0; i < nl; i++) {
        const char *code = in.multilingual ? tr_whisper_bin_language(i) : "en";
        m->lang[i] = strdup(code ? code : "");
        if (!m->lang[i]) return TRANSCRIBE_ERR_OOM;
        m->lang_tok[i] = in.multilingual ? in.sot + 1 + i : -1;
    }
    char vb[64];
    snprintf(vb, sizeof vb, "whisper-%s", in.variant ? in.variant : "");
    m->variant = strdup(vb);
    if (!m->variant) return TRANSCRIBE_ERR_OOM;
    return build_tokenizer(b, &in, m);
}

void tr_wh_bin_free(void *bin) {
    tr_ggml_bin_close(bin);
}
