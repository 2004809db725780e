/* Sortformer bad input and runs on a tiny synthetic file (sf_synth.h): copies
 * with one key missing or mistyped (upstream aborts on a mistyped key; we
 * return TRANSCRIBE_ERR_GGUF), a tensor missing, misshaped (Conformer ones
 * included, which upstream never checks) or of a type its slot refuses, and
 * the docs/formats/sortformer.md §9 value rules must fail to load with a specific status; runs
 * refuse input under two mel frames, a foreign or malformed run extension, an out-of-range preset,
 * translation and finer timestamps, and honour abort before and in the middle of the chunk loop;
 * the speaker rows are in time order and equal across F32 / F16 / Q8_0 copies and thread counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "sf_synth.h"
#include "tensor/dtype.h"
#include "test_util.h"
#include "transcribe.h"
#include "transcribe/sortformer.h"

static char g_base[512];

typedef tr_gguf_edit edit;

static void expect_load(const edit *e, transcribe_status want, const char *what) {
    tr_expect_load(g_base, e, want, what);
}

#define A  "stt.sortformer."
#define FE "stt.frontend."

static void bad_files(void) {
    const transcribe_status G = TRANSCRIBE_ERR_GGUF, OK = TRANSCRIBE_OK;
    expect_load(&(edit){0}, OK, "unchanged copy");
    /* docs/formats/sortformer.md §2: every required key, missing and mistyped */
    static const char *const required[] = {
        FE "sample_rate",
        FE "num_mels",
        FE "n_fft",
        FE "hop_length",
        FE "win_length",
        FE "window",
        FE "normalize",
        FE "pre_emphasis",
        FE "dither",
        A "max_speakers",
        A "frame_hop",
        A "encoder.n_layers",
        A "encoder.d_model",
        A "encoder.n_heads",
        A "encoder.d_ff",
        A "encoder.conv_kernel",
        A "encoder.subsampling_factor",
        A "encoder.subsampling_channels",
        A "encoder.feat_in",
        A "encoder.pos_emb_max_len",
        A "encoder.conv_norm_type",
        A "transformer.n_layers",
        A "transformer.d_model",
        A "transformer.n_heads",
        A "transformer.d_ff",
        A "transformer.activation",
        A "stream.chunk_len",
        A "stream.spkcache_len",
        A "stream.fifo_len",
        A "stream.spkcache_update_period",
    };
    /* a file without general.architecture is not a model of any family: it is only retyped */
    expect_load(&(edit){.retype_kv = "general.architecture"}, G, "mistyped general.architecture");
    tr_expect_required_keys(g_base, required, sizeof required / sizeof required[0], NULL);
    /* optional keys: absent is fine, mistyped is not */
    static const char *const optional[] = {"stt.variant",
                                           "general.languages",
                                           "stt.capability.streaming",
                                           "stt.capability.speaker_diarization",
                                           "stt.capability.timestamps",
                                           A "transformer.pre_ln"};
    tr_expect_optional_keys(g_base, optional, sizeof optional / sizeof optional[0]);
    /* docs/formats/sortformer.md §9 value rules */
    expect_load(&(edit){.kv_u32 = A "transformer.n_heads", .kv_u32_value = 0}, G, "0 heads");
    expect_load(&(edit){.kv_u32 = A "transformer.n_heads", .kv_u32_value = 5}, G,
                "heads not dividing d_model");
    expect_load(&(edit){.kv_bool = A "transformer.pre_ln", .kv_bool_value = true}, G,
                "pre_ln true");
    expect_load(&(edit){.kv_u32 = A "encoder.subsampling_factor", .kv_u32_value = 4}, G,
                "subsampling 4");
    expect_load(&(edit){.kv_u32 = A "stream.chunk_len", .kv_u32_value = 0}, OK,
                "chunk_len 0 = 188");
    /* docs/formats/sortformer.md §3: every tensor kind missing, misshaped */
    static const char *const tensors[] = {
        "enc.pre_encode.conv.0.weight",
        "enc.pre_encode.out.weight",
        "enc.blocks.0.attn.linear_q.weight",
        "enc.blocks.1.conv.depthwise.weight",
        "enc.blocks.1.attn.pos_bias_u",
        "enc.blocks.0.conv.bn.running_var",
        "tf.blocks.0.norm_1.weight",
        "tf.blocks.1.attn.k.weight",
        "tf.blocks.1.attn.out.bias",
        "tf.blocks.0.ff.in.weight",
        "tf.blocks.1.ff.out.weight",
        "diar.encoder_proj.weight",
        "diar.fc1.bias",
        "diar.spk_head.weight",
        "diar.single_spk_head.weight",
        "diar.single_spk_head.bias",
    };
    tr_expect_required_tensors(g_base, tensors, sizeof tensors / sizeof tensors[0]);
    /* types: norms and biases stay F32; matrices may be F16 */
    expect_load(&(edit){.to_f16 = "tf.blocks.0.norm_2.weight"}, G, "F16 norm");
    expect_load(&(edit){.to_f16 = "diar.fc1.bias"}, G, "F16 bias");
    expect_load(&(edit){.to_f16 = "tf.blocks.0.attn.q.weight"}, OK, "F16 linear");
    expect_load(&(edit){.to_f16 = "diar.single_spk_head.weight"}, OK, "F16 head");
}

/* ---- runs ---- */

static bool abort_after(void *user) {
    int *calls = user;
    return ++*calls > 2;
}

/* Two alternating "voices" (pitch and timbre differ) with a pause. */
static float *voices(int n) {
    float *x = malloc(sizeof(float) * (size_t)n);
    uint32_t s = 9;
    double ph = 0;
    for (int i = 0; x && i < n; i++) {
        const int sec = i / 16000;
        const double f = sec % 3 == 0 ? 180.0 : sec % 3 == 1 ? 620.0 : 0.0;
        ph += 2.0 * M_PI * f / 16000.0;
        x[i] = f > 0 ? (float)(0.4 * sin(ph) + 0.2 * sin(3 * ph) + 0.02 * fc_rand(&s))
                     : (float)(0.002 * fc_rand(&s));
    }
    return x;
}

typedef struct rows {
    int n;
    struct transcribe_speaker_segment r[256];
} rows;

static void get_rows(struct transcribe_session *s, rows *out) {
    out->n = transcribe_n_speaker_segments(s);
    if (out->n > 256) out->n = 256;
    for (int i = 0; i < out->n; i++) {
        transcribe_speaker_segment_init(&out->r[i]);
        CHECK(transcribe_get_speaker_segment(s, i, &out->r[i]) == TRANSCRIBE_OK);
    }
}

static bool same_rows(const rows *a, const rows *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (a->r[i].t0_ms != b->r[i].t0_ms || a->r[i].t1_ms != b->r[i].t1_ms ||
            a->r[i].speaker_id != b->r[i].speaker_id)
            return false;
    return true;
}

static transcribe_status run_with(struct transcribe_session *s, const float *pcm, int n,
                                  const struct transcribe_ext *ext) {
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.family = ext;
    return transcribe_run(s, pcm, n, &p);
}

static struct transcribe_session *open_synth(const char *path, int threads) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = threads;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, &sp, &s) == TRANSCRIBE_OK);
    return s;
}

static rows g_ref;

static void runs(void) {
    const int n = 9 * 16000;
    float *pcm = voices(n);
    struct transcribe_session *s = open_synth(g_base, 2);
    if (!s || !pcm) {
        transcribe_session_free(s);
        free(pcm);
        return;
    }
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_NONE && c.max_audio_ms == 0);
    CHECK(!c.supports_language_detect && !c.supports_translate);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_DIARIZATION));
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!strcmp(transcribe_model_arch_string(m), "sortformer"));

    CHECK(run_with(s, pcm, n, NULL) == TRANSCRIBE_OK);
    get_rows(s, &g_ref);
    printf("%d speaker rows\n", g_ref.n);
    CHECK(g_ref.n >= 1);
    int64_t prev = -1;
    for (int i = 0; i < g_ref.n; i++) {
        const struct transcribe_speaker_segment *r = &g_ref.r[i];
        printf("  [%lld, %lld] speaker %d\n", (long long)r->t0_ms, (long long)r->t1_ms,
               (int)r->speaker_id);
        CHECK(r->t0_ms >= prev && r->t1_ms > r->t0_ms && r->t1_ms <= 9 * 1000 + 80);
        CHECK(r->t0_ms % 80 == 0 && r->speaker_id >= 1 && r->speaker_id <= 4);
        prev = r->t0_ms;
    }
    CHECK(!strcmp(transcribe_full_text(s), ""));
    CHECK(transcribe_n_segments(s) == g_ref.n);

    /* presets (docs/formats/sortformer.md §6.1): each a valid run; an SFST ext with DEFAULT is the
     * plain run */
    struct transcribe_sortformer_stream_ext x;
    transcribe_sortformer_stream_ext_init(&x);
    CHECK(x.ext.kind == TRANSCRIBE_EXT_KIND_SORTFORMER_STREAM && x.ext.size == sizeof x);
    rows r;
    CHECK(run_with(s, pcm, n, &x.ext) == TRANSCRIBE_OK);
    get_rows(s, &r);
    CHECK(same_rows(&r, &g_ref));
    for (int p = 1; p <= 3; p++) {
        x.preset = (transcribe_sortformer_preset)p;
        CHECK_MSG(run_with(s, pcm, n, &x.ext) == TRANSCRIBE_OK, "preset %d", p);
    }
    /* bad extensions keep the previous result */
    const int before = transcribe_n_speaker_segments(s);
    x.preset = (transcribe_sortformer_preset)99;
    CHECK(run_with(s, pcm, n, &x.ext) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_n_speaker_segments(s) == before);
    x.preset = TRANSCRIBE_SORTFORMER_PRESET_DEFAULT;
    x.ext.kind = 1;
    CHECK(run_with(s, pcm, n, &x.ext) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_sortformer_stream_ext_init(&x);
    x.ext.size = sizeof(struct transcribe_ext);
    CHECK(run_with(s, pcm, n, &x.ext) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);

    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    p.target_language = "de";
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    transcribe_run_params_init(&p);
    p.language = "fr";
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);

    /* too short: T_mel = ceil(n / 160) >= 2 needs 161 samples (docs/formats/sortformer.md §4) */
    CHECK(run_with(s, pcm, 160, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    const char *why = transcribe_session_last_error(s);
    CHECK_MSG(why && strstr(why, "161"), "reason '%s'", why ? why : "(null)");
    CHECK(run_with(s, pcm, 161, NULL) == TRANSCRIBE_OK);

    /* abort before the run and mid-run (polled before every chunk and block) */
    int calls = 0;
    transcribe_set_abort_callback(s, abort_after, &calls);
    CHECK(run_with(s, pcm, n, NULL) == TRANSCRIBE_ERR_ABORTED);
    CHECK_MSG(transcribe_was_aborted(s) && calls == 3, "calls %d", calls);
    calls = 100;
    CHECK(run_with(s, pcm, n, NULL) == TRANSCRIBE_ERR_ABORTED);
    transcribe_set_abort_callback(s, NULL, NULL);
    CHECK(run_with(s, pcm, n, NULL) == TRANSCRIBE_OK);
    get_rows(s, &r);
    CHECK(same_rows(&r, &g_ref));
    transcribe_session_free(s);

    /* thread count does not change the rows */
    s = open_synth(g_base, 1);
    CHECK(s && run_with(s, pcm, n, NULL) == TRANSCRIBE_OK);
    get_rows(s, &r);
    CHECK(same_rows(&r, &g_ref));
    transcribe_session_free(s);
    free(pcm);
}

/* Long input through several chunks with a cache that compresses (docs/formats/sortformer.md
 * §6.3–§6.4). */
static void long_run(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/sf_long_%d.gguf", TR_BINARY_DIR, (int)getpid());
    sf_synth_cfg c = sf_synth_default();
    c.chunk_len = 20;
    c.spkcache_len = 24;
    c.fifo_len = 10;
    c.update_period = 20;
    CHECK(sf_synth_write(&c, path));
    const int n = 30 * 16000;
    float *pcm = voices(n);
    struct transcribe_session *s = open_synth(path, 2);
    if (s && pcm) {
        CHECK(run_with(s, pcm, n, NULL) == TRANSCRIBE_OK);
        rows r;
        get_rows(s, &r);
        printf("long: %d rows\n", r.n);
        CHECK(r.n >= 1);
        for (int i = 0; i < r.n; i++) CHECK(r.r[i].t1_ms <= 30 * 1000 + 80);
    }
    transcribe_session_free(s);
    free(pcm);
    remove(path);
}

/* The published weight types (docs/formats/sortformer.md §3): F16 and Q8_0 copies of the
 * file give the F32 file's speaker rows on the clip of runs(). */
static void weight_types(void) {
    const int n = 9 * 16000;
    float *pcm = voices(n);
    for (int k = 0; k < 2 && pcm; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/sf_types_%d.gguf", TR_BINARY_DIR, (int)getpid());
        sf_synth_cfg c = sf_synth_default();
        if (k == 0)
            c.enc.f16 = true;
        else
            c.enc.lin_type = TR_Q8_0;
        CHECK(sf_synth_write(&c, path));
        struct transcribe_session *s = open_synth(path, 2);
        rows r;
        CHECK(s && run_with(s, pcm, n, NULL) == TRANSCRIBE_OK);
        if (s) get_rows(s, &r);
        CHECK_MSG(s && same_rows(&r, &g_ref), "%s rows differ from F32", k ? "Q8_0" : "F16");
        transcribe_session_free(s);
        remove(path);
    }
    free(pcm);
}

int main(void) {
    snprintf(g_base, sizeof g_base, "%s/sf_errors_%d.gguf", TR_BINARY_DIR, (int)getpid());
    sf_synth_cfg c = sf_synth_default();
    CHECK(sf_synth_write(&c, g_base));
    bad_files();
    runs();
    weight_types();
    long_run();
    remove(g_base);
    return TEST_DONE();
}
