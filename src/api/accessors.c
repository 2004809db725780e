/* Result accessors (docs/c-api.md §16, §17). All are NULL-safe and return the
 * documented sentinels ("" / 0 / NONE / zeroed rows) when there is no
 * session, no result or the index is out of range. Row copy-outs reset the
 * caller's struct (keeping struct_size) before filling it. */
#include <string.h>

#include "api/api_internal.h"
#include "util/log.h"

/* ---- helpers over one tr_result ---- */

static void fill_segment(const tr_result *r, int j, struct transcribe_segment *o) {
    if (!r || j < 0 || j >= r->n_segs) return;
    const tr_result_segment *s = &r->segs[j];
    o->t0_ms = s->t0_ms;
    o->t1_ms = s->t1_ms;
    o->first_word = s->first_word;
    o->n_words = s->n_words;
    o->first_token = s->first_token;
    o->n_tokens = s->n_tokens;
    o->text = tr_result_str(r, s->text_off);
    o->speaker_id = s->speaker_id;
}

static void fill_word(const tr_result *r, int j, struct transcribe_word *o) {
    if (!r || j < 0 || j >= r->n_words) return;
    const tr_result_word *w = &r->words[j];
    o->t0_ms = w->t0_ms;
    o->t1_ms = w->t1_ms;
    o->seg_index = w->seg_index;
    o->first_token = w->first_token;
    o->n_tokens = w->n_tokens;
    o->text = tr_result_str(r, w->text_off);
    o->speaker_id = w->speaker_id;
}

static void fill_token(const tr_result *r, int j, struct transcribe_token *o) {
    if (!r || j < 0 || j >= r->n_toks) return;
    const tr_result_token *t = &r->toks[j];
    o->id = t->id;
    o->p = t->p;
    o->t0_ms = t->t0_ms;
    o->t1_ms = t->t1_ms;
    o->seg_index = t->seg_index;
    o->word_index = t->word_index;
    o->text = tr_result_str(r, t->text_off);
}

/* Validates an output row struct; on success the library-side copy `lib`
 * is zeroed with its struct_size stamped. */
static transcribe_status check_row(const void *out, uint64_t min, const char *where) {
    if (!out) {
        TR_ERROR("%s: out is NULL", where);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    uint64_t sz;
    memcpy(&sz, out, sizeof sz);
    if (sz < min) {
        TR_ERROR("%s: struct_size %llu < %llu", where, (unsigned long long)sz,
                 (unsigned long long)min);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    return TRANSCRIBE_OK;
}

/* The result a row getter reads, looked up only after the caller's struct
 * passed check_row: a plain-argument error never touches the session. */
static const tr_result *pick(const struct transcribe_session *s, bool batch, int i) {
    return batch ? tr_session_batch_result(s, i) : tr_session_result(s);
}

static transcribe_status get_segment(const struct transcribe_session *s, bool batch, int i, int j,
                                     struct transcribe_segment *out, const char *where) {
    transcribe_status st = check_row(out, TR_MIN_ROW, where);
    if (st != TRANSCRIBE_OK) return st;
    const tr_result *r = pick(s, batch, i);
    struct transcribe_segment row = {0};
    row.struct_size = sizeof row;
    fill_segment(r, j, &row);
    tr_copy_out(out, &row, sizeof row);
    return TRANSCRIBE_OK;
}

static transcribe_status get_word(const struct transcribe_session *s, bool batch, int i, int j,
                                  struct transcribe_word *out, const char *where) {
    transcribe_status st = check_row(out, TR_MIN_ROW, where);
    if (st != TRANSCRIBE_OK) return st;
    const tr_result *r = pick(s, batch, i);
    struct transcribe_word row = {0};
    row.struct_size = sizeof row;
    fill_word(r, j, &row);
    tr_copy_out(out, &row, sizeof row);
    return TRANSCRIBE_OK;
}

static transcribe_status get_token(const struct transcribe_session *s, bool batch, int i, int j,
                                   struct transcribe_token *out, const char *where) {
    transcribe_status st = check_row(out, TR_MIN_ROW, where);
    if (st != TRANSCRIBE_OK) return st;
    const tr_result *r = pick(s, batch, i);
    struct transcribe_token row = {0};
    row.struct_size = sizeof row;
    fill_token(r, j, &row);
    tr_copy_out(out, &row, sizeof row);
    return TRANSCRIBE_OK;
}

/* Speaker rows (docs/c-api.md §16.4): a missing row is zeroed (speaker_id 0, p 0). */
static transcribe_status get_speaker(const struct transcribe_session *s, bool batch, int i, int j,
                                     struct transcribe_speaker_segment *out, const char *where) {
    transcribe_status st = check_row(out, TR_MIN_SPEAKER_SEGMENT, where);
    if (st != TRANSCRIBE_OK) return st;
    const tr_result *r = pick(s, batch, i);
    struct transcribe_speaker_segment row = {0};
    row.struct_size = sizeof row;
    if (r && j >= 0 && j < r->n_spk) {
        row.t0_ms = r->spk[j].t0_ms;
        row.t1_ms = r->spk[j].t1_ms;
        row.speaker_id = r->spk[j].speaker_id;
        row.p = r->spk[j].p;
    }
    tr_copy_out(out, &row, sizeof row);
    return TRANSCRIBE_OK;
}

/* Pieces of a split run (long audio): a missing row is zeroed like a
 * speaker row. */
static transcribe_status get_piece(const tr_result *r, int j, struct transcribe_piece *out,
                                   const char *where) {
    transcribe_status st = check_row(out, TR_MIN_PIECE, where);
    if (st != TRANSCRIBE_OK) return st;
    struct transcribe_piece row = {0};
    row.struct_size = sizeof row;
    if (r && j >= 0 && j < r->n_pieces) {
        row.t0_ms = r->pieces[j].t0_ms;
        row.t1_ms = r->pieces[j].t1_ms;
        row.end_kind = r->pieces[j].end_kind;
        row.status = r->pieces[j].status;
    }
    tr_copy_out(out, &row, sizeof row);
    return TRANSCRIBE_OK;
}

/* ---- single result (docs/c-api.md §16) ---- */

TRANSCRIBE_API bool transcribe_was_chunked(const struct transcribe_session *session) {
    const tr_result *r = tr_session_result(session);
    return r && r->chunked;
}

TRANSCRIBE_API int transcribe_n_pieces(const struct transcribe_session *session) {
    const tr_result *r = tr_session_result(session);
    return r ? r->n_pieces : 0;
}

TRANSCRIBE_API transcribe_status transcribe_get_piece(const struct transcribe_session *session,
                                                      int i, struct transcribe_piece *out) {
    return get_piece(tr_session_result(session), i, out, "transcribe_get_piece");
}

TRANSCRIBE_API const char *transcribe_full_text(const struct transcribe_session *session) {
    return tr_result_full_text(tr_session_result(session));
}

TRANSCRIBE_API const char *transcribe_raw_text(const struct transcribe_session *session) {
    return tr_result_raw_text(tr_session_result(session));
}

TRANSCRIBE_API transcribe_timestamp_kind
transcribe_returned_timestamp_kind(const struct transcribe_session *session) {
    const tr_result *r = tr_session_result(session);
    return r ? r->ts_kind : TRANSCRIBE_TIMESTAMPS_NONE;
}

TRANSCRIBE_API int transcribe_n_segments(const struct transcribe_session *session) {
    const tr_result *r = tr_session_result(session);
    return r ? r->n_segs : 0;
}

TRANSCRIBE_API int transcribe_n_words(const struct transcribe_session *session) {
    const tr_result *r = tr_session_result(session);
    return r ? r->n_words : 0;
}

TRANSCRIBE_API int transcribe_n_tokens(const struct transcribe_session *session) {
    const tr_result *r = tr_session_result(session);
    return r ? r->n_toks : 0;
}

TRANSCRIBE_API const char *transcribe_detected_language(const struct transcribe_session *session) {
    return tr_result_language(tr_session_result(session));
}

TRANSCRIBE_API transcribe_status transcribe_get_segment(const struct transcribe_session *session,
                                                        int i, struct transcribe_segment *out) {
    return get_segment(session, false, 0, i, out, "transcribe_get_segment");
}

TRANSCRIBE_API transcribe_status transcribe_get_word(const struct transcribe_session *session,
                                                     int i, struct transcribe_word *out) {
    return get_word(session, false, 0, i, out, "transcribe_get_word");
}

TRANSCRIBE_API transcribe_status transcribe_get_token(const struct transcribe_session *session,
                                                      int i, struct transcribe_token *out) {
    return get_token(session, false, 0, i, out, "transcribe_get_token");
}

TRANSCRIBE_API int transcribe_n_speaker_segments(const struct transcribe_session *session) {
    const tr_result *r = tr_session_result(session);
    return r ? r->n_spk : 0;
}

TRANSCRIBE_API transcribe_status transcribe_get_speaker_segment(
    const struct transcribe_session *session, int i, struct transcribe_speaker_segment *out) {
    return get_speaker(session, false, 0, i, out, "transcribe_get_speaker_segment");
}

/* ---- batch results (docs/c-api.md §17) ---- */

TRANSCRIBE_API int transcribe_batch_n_results(const struct transcribe_session *session) {
    return session ? session->n_results : 0;
}

TRANSCRIBE_API transcribe_status transcribe_batch_status(const struct transcribe_session *session,
                                                         int i) {
    const tr_result *r = tr_session_batch_result(session, i);
    return r ? r->status : TRANSCRIBE_ERR_INVALID_ARG;
}

TRANSCRIBE_API const char *transcribe_batch_error(const struct transcribe_session *session, int i) {
    const tr_result *r = tr_session_batch_result(session, i);
    if (!r || r->status == TRANSCRIBE_OK || r->status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) return "";
    return r->error[0] ? r->error : transcribe_status_string(r->status);
}

TRANSCRIBE_API const char *transcribe_batch_full_text(const struct transcribe_session *session,
                                                      int i) {
    return tr_result_full_text(tr_session_batch_result(session, i));
}

TRANSCRIBE_API const char *transcribe_batch_raw_text(const struct transcribe_session *session,
                                                     int i) {
    return tr_result_raw_text(tr_session_batch_result(session, i));
}

TRANSCRIBE_API transcribe_timestamp_kind
transcribe_batch_returned_timestamp_kind(const struct transcribe_session *session, int i) {
    const tr_result *r = tr_session_batch_result(session, i);
    return r ? r->ts_kind : TRANSCRIBE_TIMESTAMPS_NONE;
}

TRANSCRIBE_API const char *
transcribe_batch_detected_language(const struct transcribe_session *session, int i) {
    return tr_result_language(tr_session_batch_result(session, i));
}

/* Audio tags (an addition, include/transcribe.h): "" when none. */
TRANSCRIBE_API const char *transcribe_detected_emotion(const struct transcribe_session *session) {
    return tr_result_emotion(tr_session_result(session));
}

TRANSCRIBE_API const char *
transcribe_detected_audio_event(const struct transcribe_session *session) {
    return tr_result_audio_event(tr_session_result(session));
}

TRANSCRIBE_API const char *
transcribe_batch_detected_emotion(const struct transcribe_session *session, int i) {
    return tr_result_emotion(tr_session_batch_result(session, i));
}

TRANSCRIBE_API const char *
transcribe_batch_detected_audio_event(const struct transcribe_session *session, int i) {
    return tr_result_audio_event(tr_session_batch_result(session, i));
}

TRANSCRIBE_API int transcribe_batch_n_segments(const struct transcribe_session *session, int i) {
    const tr_result *r = tr_session_batch_result(session, i);
    return r ? r->n_segs : 0;
}

TRANSCRIBE_API int transcribe_batch_n_words(const struct transcribe_session *session, int i) {
    const tr_result *r = tr_session_batch_result(session, i);
    return r ? r->n_words : 0;
}

TRANSCRIBE_API int transcribe_batch_n_tokens(const struct transcribe_session *session, int i) {
    const tr_result *r = tr_session_batch_result(session, i);
    return r ? r->n_toks : 0;
}

TRANSCRIBE_API transcribe_status transcribe_batch_get_segment(
    const struct transcribe_session *session, int i, int j, struct transcribe_segment *out) {
    return get_segment(session, true, i, j, out, "transcribe_batch_get_segment");
}

TRANSCRIBE_API transcribe_status transcribe_batch_get_word(const struct transcribe_session *session,
                                                           int i, int j,
                                                           struct transcribe_word *out) {
    return get_word(session, true, i, j, out, "transcribe_batch_get_word");
}

TRANSCRIBE_API transcribe_status transcribe_batch_get_token(
    const struct transcribe_session *session, int i, int j, struct transcribe_token *out) {
    return get_token(session, true, i, j, out, "transcribe_batch_get_token");
}

TRANSCRIBE_API int transcribe_batch_n_speaker_segments(const struct transcribe_session *session,
                                                       int i) {
    const tr_result *r = tr_session_batch_result(session, i);
    return r ? r->n_spk : 0;
}

TRANSCRIBE_API transcribe_status
transcribe_batch_get_speaker_segment(const struct transcribe_session *session, int i, int j,
                                     struct transcribe_speaker_segment *out) {
    return get_speaker(session, true, i, j, out, "transcribe_batch_get_speaker_segment");
}

TRANSCRIBE_API transcribe_status transcribe_batch_get_timings(
    const struct transcribe_session *session, int i, struct transcribe_timings *out) {
    if (!session || !out) {
        TR_ERROR("transcribe_batch_get_timings: %s is NULL", session ? "out" : "session");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (out->struct_size < TR_MIN_TIMINGS) { /* judged before the session is touched */
        TR_ERROR("transcribe_batch_get_timings: struct_size %llu < %u",
                 (unsigned long long)out->struct_size, TR_MIN_TIMINGS);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    const tr_result *r = tr_session_batch_result(session, i);
    if (!r) {
        TR_ERROR("transcribe_batch_get_timings: index %d out of range [0, %d)", i,
                 session->n_results);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_timings t = {sizeof t, session->model->load_ms, r->mel_ms, r->encode_ms,
                                   r->decode_ms};
    tr_copy_out(out, &t, sizeof t);
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API bool transcribe_batch_was_chunked(const struct transcribe_session *session, int i) {
    const tr_result *r = tr_session_batch_result(session, i);
    return r && r->chunked;
}

TRANSCRIBE_API int transcribe_batch_n_pieces(const struct transcribe_session *session, int i) {
    const tr_result *r = tr_session_batch_result(session, i);
    return r ? r->n_pieces : 0;
}

TRANSCRIBE_API transcribe_status transcribe_batch_get_piece(
    const struct transcribe_session *session, int i, int j, struct transcribe_piece *out) {
    return get_piece(tr_session_batch_result(session, i), j, out, "transcribe_batch_get_piece");
}
