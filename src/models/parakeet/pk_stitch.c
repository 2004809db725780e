/* Stitching of overlapping long-audio windows (README.md, "Long audio"). */
#include <stdlib.h>

#include "models/parakeet/parakeet.h"
#include "util/log.h"

/* The cut between windows P = [ps, pe) and Q = [qs, qe) (global frames,
 * qs < pe): the frame nearest the overlap's middle, at least `margin` from
 * both window edges, with no token of either window starting within `gap`
 * frames of it. Tokens are then taken from P below the cut and from Q at or
 * above it. A token both windows emit at frames at most 2·gap apart lies on
 * the same side of such a cut in both, so it is kept exactly once (never
 * twice, never dropped). Without a token-free frame the middle is used. */
int tr_pk_choose_cut(const pk_window_cfg *w, const pk_toks *P, const pk_toks *Q, int qs, int pe) {
    int lo = qs + w->margin, hi = pe - w->margin, mid = (qs + pe) / 2;
    if (lo > hi) return mid;
    int len = pe - qs;
    unsigned char *occ = calloc((size_t)len, 1);
    if (!occ) return mid;
    const pk_toks *lists[2] = {P, Q};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < lists[l]->n; i++) {
            int f = lists[l]->v[i].frame;
            if (f >= qs && f < pe) occ[f - qs] = 1;
        }
    int best = mid;
    for (int d = 0; d <= hi - lo; d++) {
        int cand[2] = {mid - d, mid + d};
        for (int k = 0; k < 2; k++) {
            int c = cand[k];
            if (c < lo || c > hi) continue;
            bool clear = true;
            for (int f = c - w->gap; f <= c + w->gap && clear; f++)
                if (f >= qs && f < pe && occ[f - qs]) clear = false;
            if (clear) {
                best = c;
                goto found;
            }
        }
    }
    TR_DEBUG("parakeet: no token-free cut in [%d, %d]; cutting at %d", lo, hi, mid);
found:
    free(occ);
    return best;
}

transcribe_status tr_pk_keep_range(pk_toks *all, const pk_toks *w, int from, int to) {
    for (int i = 0; i < w->n; i++)
        if (w->v[i].frame >= from && w->v[i].frame < to && !tr_pk_toks_push(all, w->v[i]))
            return TRANSCRIBE_ERR_OOM;
    return TRANSCRIBE_OK;
}
