/* Streams begun with a VAD model (transcribe_run_params.vad_model): a
 * streaming detector hears the same audio as the generic window driver.
 * While it hears no speech the window decodes nothing and keeps only a
 * short lead-in (once any region it may still publish is settled), so
 * audio outside speech gives no text (the decoder is
 * never run on it, and tentative text from a blip that never became a
 * region is withdrawn). When the detector closes a region, the region's
 * audio is decoded alone and everything up to its end is committed at
 * once: the committed text advances at every pause instead of waiting for
 * agreeing hypotheses. */
#include "api/api_internal.h"
#include "util/log.h"

/* Audio fed to detector and window together, at most this much at a time,
 * so the window holds little more than a lead-in of silence. */
#define PIECE_MS 100
/* Audio kept before the detector hears speech: covers its onset latency
 * (a window of 32 ms) and the region's leading pad. */
#define LEAD_IN_MS 500
/* Silence decoded with a region on each side (as far as the window holds
 * it): a model cut right at a region's 30 ms pad mishears its last word.
 * Offline VAD runs likewise join regions with 100 ms pauses. */
#define REGION_MARGIN_MS 200

/* Commits every region the detector has closed since the last call. */
static transcribe_status commit_closed(struct transcribe_session *s, tr_stream_ctx *ctx) {
    tr_stream_state *st = &s->stream;
    int n = transcribe_vad_n_segments(st->vad);
    for (; st->vad_done < n; st->vad_done++) {
        struct transcribe_vad_segment sg;
        transcribe_status rc = transcribe_vad_get_segment(st->vad, st->vad_done, &sg);
        const int64_t margin = (int64_t)st->win.rate * REGION_MARGIN_MS / 1000;
        if (rc == TRANSCRIBE_OK)
            rc = tr_stream_window_commit_region(s, ctx, sg.start - margin, sg.end + margin);
        if (rc != TRANSCRIBE_OK) return rc;
        TR_DEBUG("stream: speech region %.2f..%.2f s committed", (double)sg.t0_ms / 1000,
                 (double)sg.t1_ms / 1000);
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_stream_vad_feed(struct transcribe_session *s, const float *pcm, int n,
                                     tr_stream_ctx *ctx) {
    tr_stream_state *st = &s->stream;
    tr_stream_window *w = &st->win;
    const int piece = w->rate * PIECE_MS / 1000;
    const int64_t lead = (int64_t)w->rate * LEAD_IN_MS / 1000;
    w->gated = true;
    for (int pos = 0; pos < n; pos += piece) {
        int take = n - pos < piece ? n - pos : piece;
        transcribe_status rc = transcribe_vad_feed(st->vad, pcm + pos, take);
        if (rc != TRANSCRIBE_OK) return rc;
        int64_t end = w->win_start + w->n + take; /* after this piece */
        if (transcribe_vad_in_speech(st->vad)) st->vad_heard = end;
        /* A region the detector has ended may still wait for its end
         * padding to be settled: its audio stays until the hold is over. */
        bool held = st->vad_heard >= 0 && end - st->vad_heard <= st->vad_hold;
        w->speech_live = held || transcribe_vad_n_segments(st->vad) > st->vad_done;
        rc = tr_stream_window_feed(s, pcm + pos, take, ctx);
        if (rc == TRANSCRIBE_OK) rc = commit_closed(s, ctx);
        if (rc == TRANSCRIBE_OK && !held) rc = tr_stream_window_drop_silence(s, ctx, end - lead);
        if (rc != TRANSCRIBE_OK) return rc;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_stream_vad_finalize(struct transcribe_session *s, tr_stream_ctx *ctx) {
    tr_stream_state *st = &s->stream;
    tr_stream_window *w = &st->win;
    /* finish closes a region still open at the audio's end. */
    transcribe_status rc = transcribe_vad_finish(st->vad);
    if (rc == TRANSCRIBE_OK) rc = commit_closed(s, ctx);
    /* What is left lies outside every region: it gives no text. */
    if (rc == TRANSCRIBE_OK) rc = tr_stream_window_drop_silence(s, ctx, w->win_start + w->n);
    if (rc == TRANSCRIBE_OK) rc = tr_stream_window_finalize(s, ctx);
    return rc;
}
