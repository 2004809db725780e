/* Dispatcher tests: status strings, ABI table, params init, struct_size
 * rules, NULL defaults, enum range checks, accessor sentinels, the docs/c-api.md §10.1
 * check order, batch fallback, abort plumbing and the streaming state
 * machine. A fake family (below) stands in for a real model so every path
 * runs without model files. */
#include <limits.h>
#include <math.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "test_util.h"
#include "transcribe/extensions.h"

/* ---- layout (docs/c-api.md §19, LP64) ---- */
#if UINTPTR_MAX == 0xffffffffffffffffu
#define SZ(T, s) _Static_assert(sizeof(struct T) == (s) && alignof(struct T) == 8, #T)
SZ(transcribe_model_load_params, 32); /* 24 + the appended gpu_device */
SZ(transcribe_session_params, 24);
SZ(transcribe_run_params, 128);   /* 72 + the appended VAD, vocabulary, chunking, diarizer fields */
SZ(transcribe_stream_params, 32); /* 24 + the appended window_fallback */
SZ(transcribe_capabilities, 64);  /* 56 + the appended supports_window_streaming */
SZ(transcribe_timings, 24);
SZ(transcribe_segment, 56);
SZ(transcribe_word, 56); /* 48 + the appended speaker_id */
SZ(transcribe_token, 48);
SZ(transcribe_stream_update, 48);
SZ(transcribe_stream_text, 64);
SZ(transcribe_session_limits, 32);
SZ(transcribe_ext, 16);
SZ(transcribe_device_info, 64);
SZ(transcribe_backend_device, 64);
SZ(transcribe_speaker_segment, 32);
SZ(transcribe_piece, 32);
SZ(transcribe_whisper_run_ext, 80);
SZ(transcribe_whisper_chunk_trace, 48);
SZ(transcribe_parakeet_stream_ext, 24);
SZ(transcribe_parakeet_buffered_stream_ext, 32);
SZ(transcribe_moonshine_streaming_stream_ext, 24);
SZ(transcribe_voxtral_realtime_stream_ext, 24);
SZ(transcribe_sortformer_stream_ext, 24);
#define OFF(T, f, o) _Static_assert(offsetof(struct T, f) == (o), #T "." #f)
OFF(transcribe_run_params, task, 8);
OFF(transcribe_run_params, timestamps, 12);
OFF(transcribe_run_params, pnc, 16);
OFF(transcribe_run_params, itn, 20);
OFF(transcribe_run_params, diarize, 24);
OFF(transcribe_run_params, language, 32);
OFF(transcribe_run_params, target_language, 40);
OFF(transcribe_run_params, keep_special_tags, 48);
OFF(transcribe_run_params, family, 56);
OFF(transcribe_run_params, spec_k_drafts, 64);
OFF(transcribe_run_params, vad_model, 72);
OFF(transcribe_run_params, vad_params, 80);
OFF(transcribe_run_params, vocabulary, 88);
OFF(transcribe_run_params, n_vocabulary, 96);
OFF(transcribe_run_params, chunk_max_ms,
    104); /* 8-aligned: never inside an older caller's padding */
OFF(transcribe_run_params, chunking, 112);
OFF(transcribe_run_params, chunk_batch, 116);
OFF(transcribe_run_params, diarizer, 120);
OFF(transcribe_word, speaker_id, 48);
OFF(transcribe_capabilities, supports_streaming, 30);
OFF(transcribe_capabilities, max_audio_ms, 32);
OFF(transcribe_capabilities, supports_window_streaming, 56);
OFF(transcribe_stream_params, window_fallback, 24);
OFF(transcribe_segment, text, 40);
OFF(transcribe_segment, speaker_id, 48);
OFF(transcribe_stream_update, buffered_ms, 32);
OFF(transcribe_stream_update, committed_changed, 40);
OFF(transcribe_device_info, kind, 24);
OFF(transcribe_whisper_run_ext, max_prev_context_tokens, 48);
OFF(transcribe_whisper_run_ext, max_initial_timestamp, 76);
#endif
_Static_assert(sizeof(transcribe_status) == sizeof(int), "enums are int-sized");
_Static_assert(sizeof(enum transcribe_pnc_mode) == sizeof(int), "enums are int-sized");
_Static_assert(TRANSCRIBE_VERSION_NUMBER == 201, "version number");

/* ---- fake family ---- */

static transcribe_status g_run_status = TRANSCRIBE_OK; /* what fake_run returns */
static int g_run_calls;

typedef struct fake_session {
    int n_fed;
} fake_session;

static transcribe_status fake_session_init(void *model, const tr_session_cfg *cfg, void **out) {
    (void)model;
    CHECK(cfg->n_threads >= 1 && cfg->pool != NULL);
    *out = calloc(1, sizeof(fake_session));
    return *out ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

static void fake_session_free(void *s) {
    free(s);
}

static bool fake_accepts(uint32_t kind, int slot) {
    return (slot == TRANSCRIBE_EXT_SLOT_RUN && kind == TRANSCRIBE_EXT_KIND_WHISPER_RUN) ||
           (slot == TRANSCRIBE_EXT_SLOT_STREAM &&
            kind == TRANSCRIBE_EXT_KIND_VOXTRAL_REALTIME_STREAM);
}

static transcribe_status fake_validate(void *model, const struct transcribe_run_params *p) {
    (void)model;
    return transcribe_ext_check(p->family, TRANSCRIBE_EXT_KIND_WHISPER_RUN,
                                sizeof(struct transcribe_whisper_run_ext));
}

static transcribe_status fake_run(void *s, const float *pcm, int n, tr_run_ctx *ctx) {
    (void)s;
    (void)pcm;
    g_run_calls++;
    tr_result *r = ctx->result;
    int seg = tr_result_add_segment(r, 0, (int64_t)n / 16, " hello");
    tr_result_add_word(r, 0, 100, seg, "hello");
    tr_result_add_token(r, 7, 0.5f, 0, 100, seg, 0, " hello");
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    seg = tr_result_add_segment(r, 100, 200, " world");
    tr_result_set_raw_text(r, "<|0.00|> hello world");
    tr_result_set_timestamp_kind(r, TRANSCRIBE_TIMESTAMPS_SEGMENT);
    r->mel_ms = 1.0f;
    r->encode_ms = 2.0f;
    r->decode_ms = 3.0f;
    if (ctx->params->language == NULL) tr_result_set_language(r, "en");
    return g_run_status;
}

/* Streaming: the hypothesis is the first n_fed words of a fixed sentence. */
static const char *const k_words[] = {"one", "two", "three", "four", "five"};

static void hypothesis(fake_session *fs, tr_result *r) {
    tr_result_clear(r);
    char buf[64] = "";
    for (int i = 0; i < fs->n_fed && i < 5; i++) {
        if (i) strcat(buf, " ");
        strcat(buf, k_words[i]);
    }
    tr_result_add_segment(r, 0, 0, buf);
    tr_result_set_full_text(r, buf);
}

static transcribe_status fake_begin(void *s, tr_stream_ctx *ctx) {
    ((fake_session *)s)->n_fed = 0;
    hypothesis(s, ctx->result);
    return TRANSCRIBE_OK;
}

static transcribe_status fake_feed(void *s, const float *pcm, int n, tr_stream_ctx *ctx) {
    (void)pcm;
    (void)n;
    if (ctx->abort_cb && ctx->abort_cb(ctx->abort_user_data)) return TRANSCRIBE_ERR_ABORTED;
    ((fake_session *)s)->n_fed++;
    hypothesis(s, ctx->result);
    ctx->buffered_ms = 80;
    return TRANSCRIBE_OK;
}

static transcribe_status fake_finalize(void *s, tr_stream_ctx *ctx) {
    ((fake_session *)s)->n_fed = 5;
    hypothesis(s, ctx->result);
    return TRANSCRIBE_OK;
}

static const tr_family k_fake = {
    .arch = "fake",
    .session_init = fake_session_init,
    .session_free = fake_session_free,
    .validate_run = fake_validate,
    .run = fake_run,
    .accepts_ext_kind = fake_accepts,
    .stream_begin = fake_begin,
    .stream_feed = fake_feed,
    .stream_finalize = fake_finalize,
};

static const char *const k_langs[] = {"en", "de"};
static const char *const k_targets[] = {"en"};

static struct transcribe_model *fake_model(bool streaming) {
    struct transcribe_model *m = calloc(1, sizeof *m);
    m->family = &k_fake;
    m->arch = strdup("fake");
    m->desc.variant = "v1";
    m->desc.caps.native_sample_rate = 16000;
    m->desc.caps.n_languages = 2;
    m->desc.caps.languages = k_langs;
    m->desc.caps.max_timestamp_kind = TRANSCRIBE_TIMESTAMPS_SEGMENT;
    m->desc.caps.supports_translate = true;
    m->desc.caps.supports_streaming = streaming;
    m->desc.caps.n_translate_target_languages = 1;
    m->desc.caps.translate_target_languages = k_targets;
    m->desc.features[TRANSCRIBE_FEATURE_CANCELLATION] = true;
    m->load_ms = 12.5f;
    return m;
}

/* ---- tests ---- */

static void test_status_strings(void) {
    static const char *const want[] = {
        "ok",
        "invalid argument",
        "not implemented",
        "file not found",
        "gguf load error",
        "unsupported architecture",
        "unsupported variant",
        "out of memory",
        "backend error",
        "sample rate mismatch",
        "unsupported language",
        "unsupported task",
        "unsupported timestamp granularity",
        "aborted by callback",
        "caller-owned struct missing or has bad struct_size",
        "model does not support runtime PNC control (reserved; not currently returned)",
        "model does not support runtime ITN control (reserved; not currently returned)",
        "input audio too long for model context",
        "output truncated: decode hit the context/generation cap before end-of-stream",
    };
    for (int i = 0; i < 19; i++)
        CHECK_MSG(strcmp(transcribe_status_string(i), want[i]) == 0, "%d", i);
    CHECK(strcmp(transcribe_status_string(-1), "unknown status") == 0);
    CHECK(strcmp(transcribe_status_string(19), "unknown status") == 0);
    CHECK(strcmp(transcribe_version(), "0.2.1") == 0);
    CHECK(strcmp(TRANSCRIBE_VERSION, "0.2.1") == 0);
    CHECK(transcribe_version_commit() != NULL && *transcribe_version_commit());
}

static void test_abi(void) {
    static const size_t sizes[] = {32, 24, 128, 32, 64, 24, 56, 56, 48, 48, 64, 32, 16, 64, 32, 64};
    for (int i = 0; i < 16; i++) {
        CHECK_MSG(transcribe_abi_struct_size((transcribe_abi_struct)i) == sizes[i], "id %d", i);
        CHECK(transcribe_abi_struct_align((transcribe_abi_struct)i) == 8);
    }
    CHECK(transcribe_abi_struct_size((transcribe_abi_struct)16) == 0);
    CHECK(transcribe_abi_struct_size((transcribe_abi_struct)-1) == 0);
    CHECK(transcribe_abi_struct_align((transcribe_abi_struct)99) == 0);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    CHECK(rp.struct_size == transcribe_abi_struct_size(TRANSCRIBE_ABI_RUN_PARAMS));
}

static void test_inits(void) {
    transcribe_model_load_params_init(NULL);
    transcribe_session_params_init(NULL);
    transcribe_run_params_init(NULL);
    transcribe_stream_params_init(NULL);
    transcribe_whisper_run_ext_init(NULL);
    struct transcribe_whisper_run_ext w;
    transcribe_whisper_run_ext_init(&w);
    CHECK(w.ext.size == 80 && w.ext.kind == 0x4E524857u);
    CHECK(w.max_prev_context_tokens == 223 && w.temperature == 0.0f);
    CHECK_NEAR(w.temperature_inc, 0.2, 1e-7);
    CHECK_NEAR(w.compression_ratio_thold, 2.4, 1e-6);
    CHECK(w.logprob_thold == -1.0f && w.no_speech_thold == 0.6f && w.max_initial_timestamp == 1.0f);
    CHECK(isinf(TRANSCRIBE_WHISPER_THOLD_DISABLED) && TRANSCRIBE_WHISPER_LOGPROB_DISABLED < 0);
    struct transcribe_parakeet_buffered_stream_ext pb;
    transcribe_parakeet_buffered_stream_ext_init(&pb);
    CHECK(pb.ext.size == 32 && pb.ext.kind == 0x53424B50u && pb.left_ms == -1 && pb.right_ms == -1);
    struct transcribe_voxtral_realtime_stream_ext vx;
    transcribe_voxtral_realtime_stream_ext_init(&vx);
    CHECK(vx.ext.kind == 0x54535256u && vx.num_delay_tokens == -1);
    struct transcribe_sortformer_stream_ext sf;
    transcribe_sortformer_stream_ext_init(&sf);
    CHECK(sf.ext.kind == 0x54534653u && sf.preset == TRANSCRIBE_SORTFORMER_PRESET_DEFAULT);
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    CHECK(sp.struct_size == 32 && sp.commit_policy == TRANSCRIBE_STREAM_COMMIT_AUTO &&
          !sp.window_fallback);

    /* ext_check order */
    CHECK(transcribe_ext_check(NULL, 1, 80) == TRANSCRIBE_OK);
    struct transcribe_ext e = {8, TRANSCRIBE_EXT_KIND_WHISPER_RUN};
    CHECK(transcribe_ext_check(&e, 1, 80) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    e.size = 16;
    CHECK(transcribe_ext_check(&e, 1, 80) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_ext_check(&e, TRANSCRIBE_EXT_KIND_WHISPER_RUN, 80) ==
          TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_ext_check(&w.ext, TRANSCRIBE_EXT_KIND_WHISPER_RUN, 80) == TRANSCRIBE_OK);
}

static void test_null_sentinels(void) {
    CHECK(strcmp(transcribe_full_text(NULL), "") == 0);
    CHECK(strcmp(transcribe_raw_text(NULL), "") == 0);
    CHECK(strcmp(transcribe_detected_language(NULL), "") == 0);
    CHECK(transcribe_returned_timestamp_kind(NULL) == TRANSCRIBE_TIMESTAMPS_NONE);
    CHECK(transcribe_n_segments(NULL) == 0 && transcribe_n_words(NULL) == 0);
    CHECK(transcribe_n_tokens(NULL) == 0 && transcribe_n_speaker_segments(NULL) == 0);
    CHECK(transcribe_batch_n_results(NULL) == 0);
    CHECK(transcribe_batch_status(NULL, 0) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(strcmp(transcribe_batch_full_text(NULL, 0), "") == 0);
    CHECK(!transcribe_was_aborted(NULL) && !transcribe_was_truncated(NULL));
    CHECK(transcribe_stream_get_state(NULL) == TRANSCRIBE_STREAM_IDLE);
    CHECK(transcribe_stream_revision(NULL) == 0);
    CHECK(transcribe_stream_last_status(NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_get_whisper_chunk_count(NULL) == 0);
    CHECK(strcmp(transcribe_model_arch_string(NULL), "") == 0);
    CHECK(strcmp(transcribe_model_variant_string(NULL), "") == 0);
    CHECK(strcmp(transcribe_model_backend(NULL), "") == 0);
    CHECK(strcmp(transcribe_model_meta_val_str(NULL, "general.name"), "") == 0);
    CHECK(!transcribe_model_supports(NULL, TRANSCRIBE_FEATURE_PNC));
    CHECK(!transcribe_model_accepts_ext_kind(NULL, TRANSCRIBE_EXT_SLOT_RUN, 0));
    CHECK(transcribe_tokenize(NULL, "x", NULL, 0) == INT_MIN);
    CHECK(transcribe_model_device(NULL) == NULL);

    struct transcribe_segment seg;
    seg.struct_size = sizeof seg;
    seg.t0_ms = 99;
    seg.text = "junk";
    CHECK(transcribe_get_segment(NULL, 0, &seg) == TRANSCRIBE_OK);
    CHECK(seg.text == NULL && seg.t0_ms == 0 && seg.struct_size == sizeof seg);
    CHECK(transcribe_get_segment(NULL, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    seg.struct_size = 40;
    CHECK(transcribe_get_segment(NULL, 0, &seg) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    struct transcribe_token tok;
    transcribe_token_init(&tok);
    tok.p = 5.0f;
    CHECK(transcribe_get_token(NULL, 3, &tok) == TRANSCRIBE_OK && tok.p == 0.0f && !tok.text);
    struct transcribe_speaker_segment spk;
    transcribe_speaker_segment_init(&spk);
    CHECK(transcribe_get_speaker_segment(NULL, 0, &spk) == TRANSCRIBE_OK && spk.speaker_id == 0);

    struct transcribe_stream_text st;
    transcribe_stream_text_init(&st);
    CHECK(transcribe_stream_get_text(NULL, &st) == TRANSCRIBE_OK);
    CHECK(st.full_text && !*st.full_text && st.committed_text && st.tentative_text);
    CHECK(transcribe_stream_get_text(NULL, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    struct transcribe_timings t;
    transcribe_timings_init(&t);
    CHECK(transcribe_get_timings(NULL, &t) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_print_timings(NULL);
    transcribe_reset_timings(NULL);
    transcribe_stream_reset(NULL);
    transcribe_set_abort_callback(NULL, NULL, NULL);
}

static void test_load_params(void) {
    struct transcribe_model *m = (struct transcribe_model *)&m; /* garbage in */
    CHECK(transcribe_model_load_file("x", NULL, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_model_load_file(NULL, NULL, &m) == TRANSCRIBE_ERR_INVALID_ARG && m == NULL);
    struct transcribe_model_load_params lp;
    transcribe_model_load_params_init(&lp);
    CHECK(lp.struct_size == 32 && lp.backend == TRANSCRIBE_BACKEND_AUTO && lp.device == NULL &&
          lp.gpu_device == 0);
    lp.struct_size = 0;
    CHECK(transcribe_model_load_file("/nonexistent/x.gguf", &lp, &m) ==
          TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    lp.struct_size = 16;
    CHECK(transcribe_model_load_file("/nonexistent/x.gguf", &lp, &m) ==
          TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    /* A larger (newer) struct is accepted: the next check is the path. */
    struct {
        struct transcribe_model_load_params p;
        char tail[32];
    } big;
    memset(&big, 0x7f, sizeof big);
    transcribe_model_load_params_init(&big.p);
    big.p.struct_size = sizeof big;
    CHECK(transcribe_model_load_file("/nonexistent/x.gguf", &big.p, &m) ==
          TRANSCRIBE_ERR_FILE_NOT_FOUND);
    /* gpu_device (later releases' GPU index): any value but 0 names a GPU
     * this build does not have; a 24-byte caller's struct has no such field */
    transcribe_model_load_params_init(&lp);
    const char *model = TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf";
    lp.gpu_device = 1;
    CHECK(transcribe_model_load_file(model, &lp, &m) == TRANSCRIBE_ERR_INVALID_ARG && m == NULL);
    CHECK(transcribe_model_load_file("/nonexistent/x.gguf", &lp, &m) ==
          TRANSCRIBE_ERR_FILE_NOT_FOUND); /* the file is checked first, as upstream does */
    lp.gpu_device = -1;
    CHECK(transcribe_model_load_file(model, &lp, &m) == TRANSCRIBE_ERR_INVALID_ARG && m == NULL);
    lp.struct_size = 24;
    CHECK(transcribe_model_load_file(model, &lp, &m) == TRANSCRIBE_OK && m != NULL);
    transcribe_model_free(m);
    m = NULL;
    transcribe_model_load_params_init(&lp);
    lp.backend = (transcribe_backend_request)7;
    CHECK(transcribe_model_load_file("/nonexistent/x.gguf", &lp, &m) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_model_load_file("/nonexistent/x.gguf", NULL, &m) ==
          TRANSCRIBE_ERR_FILE_NOT_FOUND);
    CHECK(transcribe_model_load_file(TR_SOURCE_DIR, NULL, &m) == TRANSCRIBE_ERR_GGUF);
    CHECK(transcribe_model_load_file(TR_SOURCE_DIR "/CMakeLists.txt", NULL, &m) ==
          TRANSCRIBE_ERR_GGUF);
    CHECK(m == NULL);
}

static void test_devices(void) {
    CHECK(transcribe_init_backends_default() == TRANSCRIBE_OK);
    CHECK(transcribe_init_backends(NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_init_backends("") == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_init_backends("/nonexistent-dir") == TRANSCRIBE_ERR_FILE_NOT_FOUND);
    CHECK(transcribe_init_backends(TR_SOURCE_DIR) == TRANSCRIBE_OK);
    CHECK(transcribe_device_count() == 1);
    transcribe_device_t d = transcribe_device_get(0);
    CHECK(d != NULL && transcribe_device_get(1) == NULL && transcribe_device_get(-1) == NULL);
    struct transcribe_device_info info;
    transcribe_device_info_init(&info);
    CHECK(transcribe_device_get_info(d, &info) == TRANSCRIBE_OK);
    CHECK(strcmp(info.kind, "cpu") == 0 && strcmp(info.name, "CPU") == 0);
    CHECK(info.device_type == TRANSCRIBE_DEVICE_TYPE_CPU && info.device_id == NULL);
    CHECK(transcribe_device_get_info(NULL, &info) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_device_get_info(d, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    info.struct_size = 24;
    CHECK(transcribe_device_get_info(d, &info) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_backend_available(TRANSCRIBE_BACKEND_AUTO));
    CHECK(transcribe_backend_available(TRANSCRIBE_BACKEND_CPU));
    CHECK(!transcribe_backend_available(TRANSCRIBE_BACKEND_CUDA));
    CHECK(!transcribe_backend_available((transcribe_backend_request)42));
    /* the same by index (later releases' names, c-api.md §5.4) */
    CHECK(transcribe_backend_device_count() == transcribe_device_count());
    struct transcribe_backend_device bd;
    memset(&bd, 0x5a, sizeof bd);
    transcribe_backend_device_init(&bd);
    CHECK(bd.struct_size == sizeof bd && bd.name == NULL && bd.memory_total == 0);
    CHECK(transcribe_get_backend_device(0, &bd) == TRANSCRIBE_OK);
    CHECK(strcmp(bd.name, info.name) == 0 && strcmp(bd.kind, "cpu") == 0 &&
          strcmp(bd.description, info.description) == 0);
    CHECK(bd.device_type == TRANSCRIBE_DEVICE_TYPE_CPU && bd.device_id == NULL);
    CHECK(transcribe_get_backend_device(-1, &bd) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_get_backend_device(1, &bd) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_get_backend_device(1 << 20, &bd) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_get_backend_device(0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    bd.struct_size = 24;
    CHECK(transcribe_get_backend_device(0, &bd) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    transcribe_backend_device_init(&bd);
    CHECK(transcribe_model_get_device(NULL, &bd) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_abi_struct_size(TRANSCRIBE_ABI_BACKEND_DEVICE) ==
          sizeof(struct transcribe_backend_device));
    CHECK(transcribe_abi_struct_align(TRANSCRIBE_ABI_BACKEND_DEVICE) ==
          alignof(struct transcribe_backend_device));
}

static void test_sessions(struct transcribe_model *m) {
    struct transcribe_session *s = (struct transcribe_session *)&s;
    CHECK(transcribe_session_init(NULL, NULL, &s) == TRANSCRIBE_ERR_INVALID_ARG && s == NULL);
    CHECK(transcribe_session_init(m, NULL, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    CHECK(sp.struct_size == 24 && sp.n_threads == 0 && sp.n_ctx == 0);
    sp.struct_size = 0;
    CHECK(transcribe_session_init(m, &sp, &s) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    sp.struct_size = 12;
    CHECK(transcribe_session_init(m, &sp, &s) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    /* 16 bytes: n_ctx not covered, so its garbage is ignored */
    sp.struct_size = 16;
    sp.n_ctx = -5;
    CHECK(transcribe_session_init(m, &sp, &s) == TRANSCRIBE_OK && s != NULL);
    transcribe_session_free(s);
    transcribe_session_params_init(&sp);
    sp.n_ctx = -5;
    CHECK(transcribe_session_init(m, &sp, &s) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_session_params_init(&sp);
    sp.n_threads = -1;
    CHECK(transcribe_session_init(m, &sp, &s) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_session_params_init(&sp);
    sp.kv_type = (transcribe_kv_type)3;
    CHECK(transcribe_session_init(m, &sp, &s) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    CHECK(transcribe_session_init(m, &sp, &s) == TRANSCRIBE_OK);
    CHECK(transcribe_get_model(s) == m);
    CHECK(s->cfg.n_threads == 2);

    /* before any run */
    CHECK(strcmp(transcribe_full_text(s), "") == 0 && transcribe_n_segments(s) == 0);
    CHECK(transcribe_batch_n_results(s) == 0);
    struct transcribe_timings t;
    transcribe_timings_init(&t);
    CHECK(transcribe_get_timings(s, &t) == TRANSCRIBE_OK && t.load_ms == 12.5f && t.mel_ms == 0);
    t.struct_size = 16;
    CHECK(transcribe_get_timings(s, &t) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    struct transcribe_session_limits l;
    transcribe_session_limits_init(&l);
    CHECK(transcribe_session_get_limits(s, &l) == TRANSCRIBE_OK && l.effective_n_ctx == 0);
    CHECK(transcribe_session_get_limits(s, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    l.struct_size = 24;
    CHECK(transcribe_session_get_limits(s, &l) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    caps.struct_size = 30;
    CHECK(transcribe_model_get_capabilities(m, &caps) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    caps.struct_size = 31; /* prefix through supports_streaming */
    CHECK(transcribe_model_get_capabilities(m, &caps) == TRANSCRIBE_OK);
    CHECK(caps.struct_size == 31 && caps.native_sample_rate == 16000 && caps.max_audio_ms == 0);
    CHECK(strcmp(transcribe_model_arch_string(m), "fake") == 0);
    CHECK(strcmp(transcribe_model_variant_string(m), "v1") == 0);
    CHECK(strcmp(transcribe_model_backend(m), "CPU") == 0);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!transcribe_model_supports(m, (transcribe_feature)7));
    CHECK(transcribe_tokenize(m, "hi", NULL, 0) == INT_MIN); /* no tokenizer */
    transcribe_session_free(s);
}

static bool abort_after(void *ud) {
    int *n = ud;
    return --*n < 0;
}

static void test_run(struct transcribe_model *m) {
    struct transcribe_session *s = NULL;
    CHECK(transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    float pcm[1600] = {0};
    struct transcribe_run_params p;

    /* step 1 */
    CHECK(transcribe_run(s, NULL, 10, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, pcm, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    /* NULL params = defaults */
    g_run_calls = 0;
    CHECK(transcribe_run(s, pcm, 1600, NULL) == TRANSCRIBE_OK && g_run_calls == 1);
    CHECK(strcmp(transcribe_full_text(s), "hello world") == 0);
    CHECK(strcmp(transcribe_raw_text(s), "<|0.00|> hello world") == 0);
    CHECK(strcmp(transcribe_detected_language(s), "en") == 0);
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_SEGMENT);
    CHECK(transcribe_n_segments(s) == 2 && transcribe_n_words(s) == 1 &&
          transcribe_n_tokens(s) == 1);
    CHECK(transcribe_batch_n_results(s) == 1 && transcribe_batch_status(s, 0) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_INVALID_ARG);
    struct transcribe_segment seg;
    transcribe_segment_init(&seg);
    CHECK(transcribe_get_segment(s, 0, &seg) == TRANSCRIBE_OK);
    CHECK(strcmp(seg.text, " hello") == 0 && seg.t1_ms == 100 && seg.n_words == 1 &&
          seg.n_tokens == 1);
    CHECK(transcribe_get_segment(s, 2, &seg) == TRANSCRIBE_OK && seg.text == NULL);
    CHECK(transcribe_get_segment(s, -1, &seg) == TRANSCRIBE_OK && seg.text == NULL);
    struct transcribe_word w;
    transcribe_word_init(&w);
    CHECK(transcribe_get_word(s, 0, &w) == TRANSCRIBE_OK && strcmp(w.text, "hello") == 0);
    CHECK(w.seg_index == 0 && w.first_token == 0 && w.n_tokens == 1);
    struct transcribe_token tk;
    transcribe_token_init(&tk);
    CHECK(transcribe_get_token(s, 0, &tk) == TRANSCRIBE_OK && tk.id == 7 && tk.p == 0.5f);
    CHECK(tk.word_index == 0 && strcmp(tk.text, " hello") == 0);
    CHECK(transcribe_batch_get_token(s, 0, 0, &tk) == TRANSCRIBE_OK && tk.id == 7);
    CHECK(transcribe_batch_get_token(s, 1, 0, &tk) == TRANSCRIBE_OK && tk.text == NULL);
    struct transcribe_timings t;
    transcribe_timings_init(&t);
    CHECK(transcribe_get_timings(s, &t) == TRANSCRIBE_OK && t.encode_ms == 2.0f &&
          t.decode_ms == 3.0f);
    CHECK(transcribe_batch_get_timings(s, 0, &t) == TRANSCRIBE_OK && t.mel_ms == 1.0f);
    CHECK(transcribe_batch_get_timings(s, 1, &t) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_reset_timings(s);
    CHECK(transcribe_get_timings(s, &t) == TRANSCRIBE_OK && t.encode_ms == 0 && t.load_ms == 12.5f);
    /* offline results count as fully committed in the stream text view */
    struct transcribe_stream_text stx;
    transcribe_stream_text_init(&stx);
    CHECK(transcribe_stream_get_text(s, &stx) == TRANSCRIBE_OK);
    CHECK(strcmp(stx.full_text, "hello world") == 0 && stx.tentative_text_bytes == 0);

    /* Rejections in check order leave the previous result intact. */
    g_run_calls = 0;
    transcribe_run_params_init(&p);
    p.struct_size = 0;
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    p.struct_size = 64;          /* 0.1 layout */
    p.task = (transcribe_task)9; /* would be INVALID_ARG, but size wins */
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    p.struct_size = 68;
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_run_params_init(&p);
    struct transcribe_ext bad = {8, TRANSCRIBE_EXT_KIND_WHISPER_RUN};
    p.family = &bad;
    p.timestamps = TRANSCRIBE_TIMESTAMPS_TOKEN; /* ext shape is checked first */
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    struct transcribe_voxtral_realtime_stream_ext vx;
    transcribe_voxtral_realtime_stream_ext_init(&vx);
    p.family = &vx.ext; /* stream kind on the run slot */
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_INVALID_ARG);
    p.family = NULL;
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_SEGMENT;
    p.pnc = (enum transcribe_pnc_mode)3;
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_INVALID_ARG);
    p.pnc = TRANSCRIBE_PNC_MODE_DEFAULT;
    p.diarize = (enum transcribe_diarize_mode) - 1;
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_INVALID_ARG);
    p.diarize = TRANSCRIBE_DIARIZE_MODE_DEFAULT;
    p.language = "EN"; /* case-sensitive */
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    p.language = "de";
    p.target_language = "fr";
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    struct transcribe_whisper_run_ext wx;
    transcribe_whisper_run_ext_init(&wx);
    wx.ext.size = 48; /* family validation (step 10) */
    p.target_language = "en";
    p.family = &wx.ext;
    CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(g_run_calls == 0);
    CHECK(strcmp(transcribe_full_text(s), "hello world") == 0);
    CHECK(transcribe_batch_n_results(s) == 1);

    /* A larger caller struct is accepted; advisory toggles only warn. */
    struct {
        struct transcribe_run_params p;
        char tail[16];
    } big;
    memset(&big, 0x55, sizeof big);
    transcribe_run_params_init(&big.p);
    big.p.struct_size = sizeof big;
    big.p.pnc = TRANSCRIBE_PNC_MODE_ON;
    big.p.language = "de";
    CHECK(transcribe_run(s, pcm, 1600, &big.p) == TRANSCRIBE_OK && g_run_calls == 1);
    CHECK(strcmp(transcribe_detected_language(s), "") == 0); /* hints are not echoed */

    /* family outcomes */
    g_run_status = TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    CHECK(transcribe_run(s, pcm, 1600, NULL) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    CHECK(transcribe_was_truncated(s) && !transcribe_was_aborted(s));
    CHECK(strcmp(transcribe_full_text(s), "hello world") == 0);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    g_run_status = TRANSCRIBE_ERR_INPUT_TOO_LONG;
    CHECK(transcribe_run(s, pcm, 1600, NULL) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    CHECK(!transcribe_was_truncated(s) && strcmp(transcribe_full_text(s), "") == 0);
    CHECK(transcribe_batch_n_results(s) == 0);
    g_run_status = TRANSCRIBE_OK;

    /* abort: partial result readable */
    int budget = 0;
    transcribe_set_abort_callback(s, abort_after, &budget);
    CHECK(transcribe_run(s, pcm, 1600, NULL) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_was_aborted(s) && transcribe_n_segments(s) == 1);
    CHECK(strcmp(transcribe_full_text(s), "hello") == 0);
    transcribe_set_abort_callback(s, NULL, NULL);
    CHECK(transcribe_run(s, pcm, 1600, NULL) == TRANSCRIBE_OK && !transcribe_was_aborted(s));

    /* batch: sequential fallback with per-utterance statuses */
    const float *pcms[3] = {pcm, NULL, pcm};
    int ns[3] = {1600, 1600, 800};
    CHECK(transcribe_run_batch(s, NULL, ns, 3, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run_batch(s, pcms, ns, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    p.struct_size = 8;
    CHECK(transcribe_run_batch(s, pcms, ns, 3, &p) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_batch_n_results(s) == 1);
    CHECK(transcribe_run_batch(s, pcms, ns, 3, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_n_results(s) == 3);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_OK);
    /* the failed utterance says why; the others, and indices out of range, say nothing */
    CHECK(strstr(transcribe_batch_error(s, 1), "utterance 1 has NULL pcm") != NULL);
    CHECK(!strcmp(transcribe_batch_error(s, 0), "") && !strcmp(transcribe_batch_error(s, 2), ""));
    CHECK(!strcmp(transcribe_batch_error(s, 3), "") &&
          !strcmp(transcribe_batch_error(NULL, 0), ""));
    CHECK(strcmp(transcribe_batch_full_text(s, 2), "hello world") == 0);
    CHECK(strcmp(transcribe_batch_full_text(s, 1), "") == 0);
    CHECK(transcribe_batch_n_segments(s, 2) == 2);
    transcribe_segment_init(&seg);
    CHECK(transcribe_batch_get_segment(s, 2, 0, &seg) == TRANSCRIBE_OK && seg.t1_ms == 50);
    CHECK(transcribe_get_timings(s, &t) == TRANSCRIBE_OK && t.decode_ms == 6.0f);
    budget = 2; /* polls: before utt 0, inside utt 0, before utt 1 → abort there */
    transcribe_set_abort_callback(s, abort_after, &budget);
    const float *pcms2[3] = {pcm, pcm, pcm};
    CHECK(transcribe_run_batch(s, pcms2, ns, 3, NULL) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_batch_n_results(s) == 3 && transcribe_was_aborted(s));
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_ERR_ABORTED);
    transcribe_set_abort_callback(s, NULL, NULL);

    /* streaming on a non-streaming model */
    CHECK(transcribe_stream_begin(s, NULL, NULL) == TRANSCRIBE_ERR_NOT_IMPLEMENTED);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);
    struct transcribe_stream_update u;
    transcribe_stream_update_init(&u);
    CHECK(transcribe_stream_feed(s, pcm, 10, &u) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_finalize(s, &u) == TRANSCRIBE_ERR_INVALID_ARG && u.is_final);
    transcribe_session_free(s);
}

static void test_stream(struct transcribe_model *m) {
    struct transcribe_session *s = NULL;
    CHECK(transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    float pcm[1600] = {0};
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    sp.struct_size = 0;
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    sp.struct_size = 16; /* through `family`: the optional fields take defaults */
    sp.commit_policy = (transcribe_stream_commit_policy)77;
    sp.stable_prefix_agreement_n = 99;
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_OK);
    transcribe_stream_reset(s);
    sp.struct_size = sizeof sp;
    sp.stable_prefix_agreement_n = 0;
    sp.commit_policy = (transcribe_stream_commit_policy)3;
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_ERR_INVALID_ARG);
    sp.commit_policy = TRANSCRIBE_STREAM_COMMIT_AUTO;
    sp.stable_prefix_agreement_n = 33;
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_ERR_INVALID_ARG);
    sp.stable_prefix_agreement_n = 2;
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.task = TRANSCRIBE_TASK_TRANSLATE;
    CHECK(transcribe_stream_begin(s, &rp, &sp) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    struct transcribe_whisper_run_ext wx;
    transcribe_whisper_run_ext_init(&wx);
    sp.family = &wx.ext; /* run kind on the stream slot */
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_ERR_INVALID_ARG);
    sp.family = NULL;
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_ACTIVE);
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, pcm, 1600, NULL) == TRANSCRIBE_ERR_INVALID_ARG);

    struct transcribe_stream_update u;
    transcribe_stream_update_init(&u);
    u.struct_size = 32;
    CHECK(transcribe_stream_feed(s, pcm, 1600, &u) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    transcribe_stream_update_init(&u);
    CHECK(transcribe_stream_feed(s, pcm, 1600, &u) == TRANSCRIBE_OK);
    CHECK(u.result_changed && u.revision == 1 && u.input_received_ms == 100 && u.buffered_ms == 80);
    CHECK(strcmp(transcribe_full_text(s), "one") == 0);
    struct transcribe_stream_text tx;
    transcribe_stream_text_init(&tx);
    CHECK(transcribe_stream_get_text(s, &tx) == TRANSCRIBE_OK);
    CHECK(tx.committed_text_bytes == 0 && strcmp(tx.tentative_text, "one") == 0);
    CHECK(transcribe_stream_feed(s, pcm, 1600, &u) == TRANSCRIBE_OK); /* "one two" */
    CHECK(transcribe_stream_get_text(s, &tx) == TRANSCRIBE_OK);
    /* agreement of the last 2 hypotheses: common prefix "one" */
    CHECK(strcmp(tx.committed_text, "one") == 0 && strcmp(tx.tentative_text, " two") == 0);
    CHECK(tx.raw_tentative_start_bytes == 3 && tx.full_text_bytes == 7);
    CHECK(u.committed_changed && u.revision == 2);
    transcribe_stream_update_init(&u);
    CHECK(transcribe_stream_finalize(s, &u) == TRANSCRIBE_OK && u.is_final);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FINISHED);
    CHECK(transcribe_stream_get_text(s, &tx) == TRANSCRIBE_OK);
    CHECK(strcmp(tx.committed_text, "one two three four five") == 0 &&
          tx.tentative_text_bytes == 0);
    CHECK(transcribe_stream_feed(s, pcm, 10, NULL) == TRANSCRIBE_ERR_INVALID_ARG);

    /* abort in a feed → FAILED with last_status */
    CHECK(transcribe_stream_begin(s, NULL, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_revision(s) == 0);
    int budget = 0;
    transcribe_set_abort_callback(s, abort_after, &budget);
    CHECK(transcribe_stream_feed(s, pcm, 100, NULL) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FAILED);
    CHECK(transcribe_stream_last_status(s) == TRANSCRIBE_ERR_ABORTED && transcribe_was_aborted(s));
    transcribe_set_abort_callback(s, NULL, NULL);
    transcribe_stream_reset(s);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE && !transcribe_was_aborted(s));
    CHECK(transcribe_stream_last_status(s) == TRANSCRIBE_OK);

    /* ON_FINALIZE: nothing committed during feeds */
    transcribe_stream_params_init(&sp);
    sp.commit_policy = TRANSCRIBE_STREAM_COMMIT_ON_FINALIZE;
    CHECK(transcribe_stream_begin(s, NULL, &sp) == TRANSCRIBE_OK);
    for (int i = 0; i < 4; i++) CHECK(transcribe_stream_feed(s, pcm, 1600, &u) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_get_text(s, &tx) == TRANSCRIBE_OK && tx.committed_text_bytes == 0);
    CHECK(u.audio_committed_ms == 0);
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_get_text(s, &tx) == TRANSCRIBE_OK);
    CHECK(strcmp(tx.committed_text, "one two three four five") == 0);
    /* a finished stream is replaced by an offline run */
    CHECK(transcribe_run(s, pcm, 1600, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);
    CHECK(strcmp(transcribe_full_text(s), "hello world") == 0);
    transcribe_session_free(s);
}

int main(void) {
    transcribe_log_set(NULL, NULL); /* keep expected-error noise out of the test log */
    test_status_strings();
    test_abi();
    test_inits();
    test_null_sentinels();
    test_load_params();
    test_devices();
    struct transcribe_model *m = fake_model(false);
    test_sessions(m);
    test_run(m);
    transcribe_model_free(m);
    m = fake_model(true);
    test_stream(m);
    transcribe_model_free(m);
    return TEST_DONE();
}
