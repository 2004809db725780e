/* Granite Speech front end (docs/formats/granite_speech.md §5: per-utterance log-mel with 2-frame
 * stacking) and Conformer encoder (§6.1, the shared nn/granite_conformer.h) with the
 * cat_hidden_layers concatenation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/granite_speech/granite.h"
#include "util/log.h"

int64_t tr_gs_enc_frames(const gs_model *m, int64_t n_samples) {
    if (n_samples < m->mel.n_fft / 2 + 1) return 0;
    int64_t T_mel = n_samples / m->mel.hop_length; /* the last STFT frame is dropped */
    return T_mel / 2;                              /* an odd trailing frame is dropped */
}

int tr_gs_audio_tokens(const gs_model *m, int64_t T_enc) {
    const int64_t w = m->proj.window;
    return (int)(((T_enc + w - 1) / w) * m->proj.n_query);
}

transcribe_status tr_gs_stacked_mel(const gs_model *m, tr_pool *pool, const float *pcm, int n,
                                    float **x, int *T_enc) {
    return tr_mel_compute_stacked2(&m->mel, "granite_speech", pcm, n, pool, x, T_enc);
}

static void on_block(void *span, int done, int total) {
    tr_run_span_report(span, done, total);
}

/* The shared Conformer (nn/granite_conformer.h) with this family's captures: entry c of
 * cat_hidden_layers (1-based) takes block cat[c]−1's output before the CTC bypass, in block
 * order (ties in array order), then the final output as the last part. */
transcribe_status tr_gs_encode(const gs_model *m, tr_pool *pool, const float *in, int T,
                               float **out_p, tr_run_span *progress) {
    *out_p = NULL;
    const int d = m->enc.d, n_parts = 1 + m->n_cat;
    for (int c = 0; c < m->n_cat; c++)
        if (m->cat[c] < 1) {
            /* docs/formats/granite_speech.md §12.2: an entry 0 validates but never captures */
            TR_ERROR("granite_speech: cat_hidden_layers entry %d (0) never captures a layer", c);
            return TRANSCRIBE_ERR_GGUF;
        }
    /* the parts in block order: a stable order of the entries by block */
    int blk[GS_MAX_CAT];
    for (int c = 0, j = 0; c < m->n_cat; c++) {
        int v = m->cat[c] - 1, at = j++;
        while (at > 0 && blk[at - 1] > v) {
            blk[at] = blk[at - 1];
            at--;
        }
        blk[at] = v;
    }
    float *out = malloc((size_t)T * d * n_parts * sizeof(float));
    if (!out) {
        TR_ERROR("granite_speech: out of memory encoding %d frames", T);
        return TRANSCRIBE_ERR_OOM;
    }
    const tr_gc_run run = {.n_cap = m->n_cat,
                           .cap_block = blk,
                           .cap_after_bypass = false,
                           .cap_out = out,
                           .cap_stride = (long)d * n_parts,
                           .out = out + (size_t)m->n_cat * d,
                           .out_stride = (long)d * n_parts,
                           .on_block = progress ? on_block : NULL,
                           .block_user = progress};
    transcribe_status st = tr_gc_encode(&m->enc, &m->enc_w, pool, "granite_speech", in, T, &run);
    if (st != TRANSCRIBE_OK) {
        free(out);
        return st;
    }
    *out_p = out;
    return TRANSCRIBE_OK;
}
