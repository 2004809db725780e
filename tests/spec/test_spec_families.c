/* Speculative decoding through the public API on every autoregressive
 * family's tiny test model: spec_k_drafts 0, 1, 4 and 8 give the status,
 * text and token ids (where the run returns them) of the default run (plain greedy) bit for bit,
 * the capability says which families use it (every autoregressive one), and a value below -1 is
 * refused. The MOSS loop model repeats a cycle until its guard / budget stops it, so its drafts are
 * accepted, cut short by the budget and rejected in turn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_session.h"
#include "test_util.h"
#include "transcribe.h"

#define DATA TR_SOURCE_DIR "/tests/data"
#define JFK  TR_SOURCE_DIR "/samples/jfk.wav"

typedef tr_test_run_out run_out;

static run_out run(struct transcribe_session *s, const float *pcm, int n, int k) {
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.spec_k_drafts = k;
    return tr_test_run_take(s, transcribe_run(s, pcm, n, &rp));
}

static void run_free(run_out *o) {
    tr_test_run_out_free(o);
}

static void check_family(const char *model, const char *wav, bool spec) {
    float *pcm = NULL;
    int n = 0;
    struct transcribe_session *s = NULL;
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    if (transcribe_audio_load_file(wav, 16000, &pcm, &n) != TRANSCRIBE_OK ||
        transcribe_open(model, NULL, &sp, &s) != TRANSCRIBE_OK) {
        CHECK_MSG(false, "cannot open %s / %s", model, wav);
        transcribe_audio_free(pcm);
        return;
    }
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    CHECK(transcribe_model_get_capabilities(transcribe_get_model(s), &caps) == TRANSCRIBE_OK);
    CHECK_MSG(caps.supports_spec_decode == spec, "%s: supports_spec_decode %d", model,
              caps.supports_spec_decode);
    run_out ref = run(s, pcm, n, -1);
    CHECK_MSG(ref.st == TRANSCRIBE_OK || ref.st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "%s: status %d",
              model, ref.st);
    CHECK(ref.text[0] != 0);
    const int ks[4] = {0, 1, 4, 8};
    for (int i = 0; i < 4; i++) {
        run_out o = run(s, pcm, n, ks[i]);
        CHECK_MSG(tr_test_run_same(&o, &ref),
                  "%s k %d: status %d/%d, %d/%d tokens, text '%s' vs '%s'", model, ks[i], o.st,
                  ref.st, o.n_tok, ref.n_tok, o.text, ref.text);
        run_free(&o);
    }
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.spec_k_drafts = -2;
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    run_free(&ref);
    transcribe_session_free(s);
    transcribe_audio_free(pcm);
}

int main(void) {
    check_family(DATA "/qwen3_asr/tiny/qwen3-asr-tiny-ref-F16.gguf", JFK, true);
    check_family(DATA "/qwen3_asr/tiny/qwen3-asr-tiny-ref-Q8_0.gguf", JFK, true);
    check_family(DATA "/granite/tiny-1b/granite-tiny-1b-ref-F16.gguf", JFK, true);
    check_family(DATA "/granite/tiny-plus/granite-tiny-plus-ref-F32.gguf", JFK, true);
    check_family(DATA "/moss/tiny/moss-tiny-ref-F16.gguf", DATA "/moss/mix.wav", true);
    check_family(DATA "/moss/tiny/moss-tiny-loop-nosplit-F16.gguf", DATA "/moss/mix.wav", true);
    check_family(DATA "/whisper/tiny/whisper-tiny-ref-F16.gguf", JFK, true);
    check_family(DATA "/canary/tiny-canary2/tiny-canary2-ref-F16.gguf", JFK, true);
    check_family(DATA "/cohere/tiny/cohere-tiny-ref-F16.gguf", DATA "/cohere/clip.wav", true);
    check_family(DATA "/cohere/tiny/cohere-tiny-ref-Q8_0.gguf", JFK, true);
    check_family(DATA "/moonshine/tiny/moonshine-tiny-ref-F16.gguf", DATA "/moonshine/clip.wav",
                 true);
    check_family(DATA "/moonshine/tiny/moonshine-tiny-ref-Q8_0.gguf", JFK, true);
    check_family(DATA "/moonshine_streaming/tiny/moonshine-streaming-tiny-ref-F16.gguf",
                 DATA "/moonshine_streaming/clip.wav", true);
    check_family(DATA "/moonshine_streaming/tiny/moonshine-streaming-tiny-ref-Q8_0.gguf", JFK,
                 true);
    check_family(DATA "/canary_qwen/canary-qwen-tiny-ref-F16.gguf", JFK, true);
    check_family(DATA "/canary_qwen/canary-qwen-tiny-ref-Q8_0.gguf", JFK, true);
    check_family(DATA "/voxtral/voxtral-tiny-ref-F16.gguf", DATA "/voxtral/clip.wav", true);
    check_family(DATA "/voxtral/voxtral-tiny-ref-Q8_0.gguf", DATA "/voxtral/clip.wav", true);
    check_family(DATA "/voxtral_realtime/voxtral-realtime-tiny-ref-F16.gguf",
                 DATA "/voxtral_realtime/clip.wav", true);
    check_family(DATA "/voxtral_realtime/voxtral-realtime-tiny-ref-Q8_0.gguf", JFK, true);
    return TEST_DONE();
}
