/* The encoder forward of buffered streaming (chunked_limited_with_rc):
 * the offline forward on a copy of the encoder whose hyper-parameters carry
 * the (left, chunk, right) mask that fastconformer_attn.c applies. The copy
 * is shallow (it shares the weights) and lives only for this call. */
#include "nn/fastconformer_internal.h"
#include "util/log.h"

transcribe_status tr_fc_forward_buffered(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                         const float *mel, int T_mel, int left, int chunk,
                                         int right, float *out, tr_fc_abort_fn should_abort,
                                         void *abort_user) {
    if (!enc || enc->hp.att_style != TR_FC_STYLE_CHUNKED_LIMITED_RC || left < 0 || chunk < 1 ||
        right < 0) {
        TR_ERROR("fastconformer: buffered forward needs a chunked_limited_with_rc encoder and "
                 "left, right >= 0, chunk >= 1 (got %d/%d/%d)",
                 left, chunk, right);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_fc_encoder view = *enc;
    view.hp.rc_left = left;
    view.hp.rc_chunk = chunk;
    view.hp.rc_right = right;
    return tr_fc_forward(&view, pool, w, mel, T_mel, out, NULL, should_abort, abort_user);
}
