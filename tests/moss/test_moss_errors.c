/* MOSS loader errors: the reference tiny file rewritten in memory with one
 * key dropped, retyped or changed, or one tensor dropped, misshaped or of
 * a refused type, must fail with TRANSCRIBE_ERR_GGUF (never crash); the
 * untouched copy loads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/family.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "models/moss/moss.h"
#include "tensor/dtype.h"
#include "test_util.h"

#define REF TR_SOURCE_DIR "/tests/data/moss/tiny/moss-tiny-ref-F32.gguf"

typedef struct edit {
    const char *key; /* KV to act on */
    int key_action;  /* 0 drop, 1 as INT32 (same value), 2 set u32 value */
    uint32_t value;
    const char *tensor; /* tensor to act on */
    int tensor_action;  /* 0 drop, 1 last dim + 1 (zero padded), 2 write as F16 */
    const char *label;
} edit;

/* f with edit e (NULL: none), loaded from memory through the family's loader. */
static transcribe_status load_edited(const gguf_file *f, const edit *e) {
    tr_gguf_edit k = {0};
    if (e && e->key) {
        if (e->key_action == 0) k.drop_kv = e->key;
        if (e->key_action == 1) k.kv_as_i32 = e->key, k.kv_as_i32_value = (int32_t)e->value;
        if (e->key_action == 2) k.kv_u32 = e->key, k.kv_u32_value = e->value;
    }
    if (e && e->tensor) {
        if (e->tensor_action == 0) k.drop_tensor = e->tensor;
        if (e->tensor_action == 1) k.longer = e->tensor;
        if (e->tensor_action == 2) k.to_f16 = e->tensor;
    }
    void *img = NULL;
    size_t size = 0;
    if (!tr_gguf_edit_memory(f, &k, &img, &size)) return TRANSCRIBE_ERR_OOM;
    gguf_file *g = NULL;
    transcribe_status st = tr_gguf_open_memory(img, size, &g);
    if (st == TRANSCRIBE_OK) {
        tr_load_ctx lc = {.path = "edited", .gguf = g};
        ms_model *m = NULL;
        st = tr_ms_model_load(&lc, &m);
        tr_ms_model_free(m);
        tr_gguf_close(g);
    }
    free(img);
    return st;
}

int main(void) {
    gguf_file *f = NULL;
    if (tr_gguf_open(REF, &f) != TRANSCRIBE_OK) {
        fprintf(stderr, "cannot open %s\n", REF);
        return 1;
    }
    CHECK(load_edited(f, NULL) == TRANSCRIBE_OK);
    static const edit cases[] = {
        {"general.architecture", 0, 0, NULL, 0, "no architecture"},
        {"stt.moss.encoder.n_layers", 0, 0, NULL, 0, "no encoder layers"},
        {"stt.moss.encoder.d_model", 1, 64, NULL, 0, "d_model as INT32"},
        {"stt.moss.encoder.n_heads", 2, 5, NULL, 0, "d_model not divisible by heads"},
        {"stt.moss.adaptor.input_dim", 2, 255, NULL, 0, "adaptor input != hidden x merge"},
        {"stt.moss.audio_merge_size", 2, 0, NULL, 0, "merge 0"},
        {"stt.moss.decoder.n_kv_heads", 2, 3, NULL, 0, "heads not a multiple of kv heads"},
        {"stt.moss.decoder.vocab_size", 2, 1000, NULL, 0, "vocab != token count"},
        {"stt.moss.prompt_prefix_tokens", 0, 0, NULL, 0, "no prompt prefix"},
        {"stt.moss.digit_tokens", 0, 0, NULL, 0, "no digit ids"},
        {"stt.moss.audio_token_id", 2, 5000, NULL, 0, "audio id past the vocabulary"},
        {"stt.moss.time_marker_every_seconds", 1, 5, NULL, 0, "marker interval as INT32"},
        {"stt.frontend.n_samples", 2, 160000, NULL, 0, "10 s chunks"},
        {"stt.frontend.num_mels", 2, 128, NULL, 0, "front-end mels != encoder mels"},
        {"tokenizer.ggml.eos_token_id", 0, 0, NULL, 0, "no EOS"},
        {NULL, 0, 0, "enc.blocks.1.attn.k.weight", 0, "missing encoder tensor"},
        {NULL, 0, 0, "enc.pos_emb.weight", 1, "positional table misshaped"},
        {NULL, 0, 0, "enc.pos_emb.weight", 2, "positional table F16"},
        {NULL, 0, 0, "adaptor.fc1.weight", 1, "adaptor fc1 misshaped"},
        {NULL, 0, 0, "adaptor.norm_out.bias", 0, "adaptor norm bias missing"},
        {NULL, 0, 0, "dec.blocks.2.attn.k_norm.weight", 0, "missing LM tensor"},
        {NULL, 0, 0, "dec.token_embd.weight", 1, "embedding misshaped"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        transcribe_status st = load_edited(f, &cases[i]);
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF, "%s: got %s", cases[i].label,
                  transcribe_status_string(st));
    }
    tr_gguf_close(f);
    return TEST_DONE();
}
