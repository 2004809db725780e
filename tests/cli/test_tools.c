/* Runs the other programs as a person meets them (argv[1..3]: paths of
 * transcribe-bench, transcribe-inspect, transcribe-quantize): help texts
 * that exit 0 and name every mode, the model bench's audio-LLM figures on
 * a tiny model (fields present, no timing judged), a family's encoder count
 * (Fun-ASR-Nano: the SAN-M rows, timed apart from its adaptor), errors for
 * out-of-range token ids, a quantization that says which tensors fell back
 * and why, and a clear refusal of a whisper.cpp .bin input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "test_util.h"

static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *bin, const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s", bin, args);
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

#define EXPECT_RUN(bin, args, code, stream, needle)                                                \
    do {                                                                                           \
        int rc_ = run(bin, args);                                                                  \
        CHECK_MSG(rc_ == (code), "`%s`: exit %d, want %d; stderr: %s", args, rc_, code, g_err);    \
        CHECK_MSG(strstr(stream, needle) != NULL, "`%s`: missing \"%s\" in: %s%s", args, needle,   \
                  g_out, g_err);                                                                   \
    } while (0)

static void bench_help(const char *bench) {
    EXPECT_RUN(bench, "--help", 0, g_out, "usage: transcribe-bench MODE");
    static const char *const modes[] = {"kernels", "frontend", "model"};
    for (int i = 0; i < 3; i++) CHECK_MSG(strstr(g_out, modes[i]), "no %s in: %s", modes[i], g_out);
    EXPECT_RUN(bench, "kernels --help", 0, g_out, "usage: transcribe-bench kernels");
    CHECK(strstr(g_out, "--isa") && strstr(g_out, "--gemv") && strstr(g_out, "--reps"));
    EXPECT_RUN(bench, "frontend -h", 0, g_out, "usage: transcribe-bench frontend");
    EXPECT_RUN(bench, "model --help", 0, g_out, "usage: transcribe-bench model -m MODEL AUDIO");
    EXPECT_RUN(bench, "", 2, g_err, "usage: transcribe-bench MODE");
    EXPECT_RUN(bench, "bogus", 2, g_err, "unknown mode 'bogus'");
    /* the model bench's OpenBLAS probe runs as a process of its own: the
     * fastest call's ms (-1 without OpenBLAS) and the call count */
    EXPECT_RUN(bench, "sgemm-probe 0 32 32 1", 2, g_out, "");
    EXPECT_RUN(bench, "sgemm-probe 64 32 32 1", 0, g_out, " ");
    double ms = 0, calls = 0;
    CHECK_MSG(sscanf(g_out, "%lf %lf", &ms, &calls) == 2 && (ms < 0 ? calls == 0 : calls >= 3),
              "sgemm-probe printed: %s", g_out);
}

/* The model mode on the tiny Qwen3-ASR file: one JSON line with the
 * prefill's FLOP count and baseline shape (158 prompt rows on jfk.wav;
 * the decoder's d_model 64 and d_ffn 128) and the step probe. */
static void bench_model_llm(const char *bench) {
    char args[2048];
    snprintf(args, sizeof args,
             "model -m '%s/tests/data/qwen3_asr/tiny/qwen3-asr-tiny-ref-Q8_0.gguf' "
             "'%s/samples/jfk.wav' --threads 2 --step-pairs 2",
             TR_SOURCE_DIR, TR_SOURCE_DIR);
    EXPECT_RUN(bench, args, 0, g_out, "\"T_prompt\":158");
    static const char *const fields[] = {
        "\"prefill_gflop\":", "\"prefill_gflops\":", "\"prefill_sgemm_shape\":\"158x64x128\"",
        "\"prefill_vs_sgemm\":", "\"probe_step_vs_floor\":"};
    for (int i = 0; i < 5; i++)
        CHECK_MSG(strstr(g_out, fields[i]), "no %s in: %s", fields[i], g_out);
}

/* The model mode on the tiny Fun-ASR-Nano file: its enc_cost hook counts the
 * SAN-M stack over the clip's 42 LFR rows (d_model 32, d_ff 64; 0.0071
 * GFLOP, docs/formats/funasr_nano.md §4) and the encoder's time is split
 * from the adaptor's (encoder_ms / projector_ms). */
static void bench_model_fn(const char *bench) {
    char args[2048];
    snprintf(args, sizeof args,
             "model -m '%s/tests/data/funasr_nano/fun-asr-nano-tiny-ref-F32.gguf' "
             "'%s/tests/data/funasr_nano/clip.wav' --threads 2 --step-pairs 0",
             TR_SOURCE_DIR, TR_SOURCE_DIR);
    EXPECT_RUN(bench, args, 0, g_out, "\"enc_family\":\"funasr_nano\"");
    static const char *const fields[] = {
        "\"enc_windows\":1,\"enc_gflop\":0.01,", "\"enc_frames\":42,\"sgemm_shape\":\"1500x32x64\"",
        "\"encoder_ms\":", "\"projector_ms\":", "\"step_vs_floor\":"};
    for (int i = 0; i < 5; i++)
        CHECK_MSG(strstr(g_out, fields[i]), "no %s in: %s", fields[i], g_out);
}

static void inspect(const char *insp, const char *model) {
    char args[2048];
    EXPECT_RUN(insp, "--help", 0, g_out, "detokenize MODEL ID...");
    /* a model file where the command goes: the hint names the command */
    snprintf(args, sizeof args, "'%s'", model);
    EXPECT_RUN(insp, args, 2, g_err,
               "is a file, not a command; did you mean 'transcribe-inspect info ");
    EXPECT_RUN(insp, "frobnicate", 2, g_err, "unknown command 'frobnicate'");
    snprintf(args, sizeof args, "detokenize '%s' 99999", model);
    EXPECT_RUN(insp, args, 1, g_err, "token id 99999 is out of range (the vocabulary has ids 0 to");
    CHECK(g_out[0] == '\0');
    snprintf(args, sizeof args, "detokenize '%s' 50 -1", model);
    EXPECT_RUN(insp, args, 1, g_err, "token id -1 is out of range");
    snprintf(args, sizeof args, "detokenize '%s' 12x", model);
    EXPECT_RUN(insp, args, 2, g_err, "'12x' is not a token id");
    snprintf(args, sizeof args, "detokenize '%s' 50 51", model);
    EXPECT_RUN(insp, args, 0, g_out, "ST");
    /* -o naming the file it reads: refused, the file kept */
    snprintf(args, sizeof args, "tensor '%s' enc.conv1.weight -o '%s'", model, model);
    EXPECT_RUN(insp, args, 2, g_err, "is the model it reads");
    const char *wav = TR_SOURCE_DIR "/samples/jfk.wav";
    snprintf(args, sizeof args, "mel --kind whisper '%s' -o '%s'", wav, wav);
    EXPECT_RUN(insp, args, 2, g_err, "is the file it reads");
    snprintf(args, sizeof args, "mel --kind bogus '%s' -o x.npy", wav);
    EXPECT_RUN(insp, args, 2, g_err, "--kind is whisper, nemo or kaldi, not 'bogus'");
    /* tokenize, then detokenize: the same text, no leading space (the
     * bundled model's SentencePiece vocabulary encodes; the Whisper
     * reference's has no merges) */
    const char *spm = TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf";
    snprintf(args, sizeof args, "tokenize '%s' 'hello world'", spm);
    EXPECT_RUN(insp, args, 0, g_out, " ");
    char ids[256];
    snprintf(ids, sizeof ids, "%.*s", (int)strcspn(g_out, "\n"), g_out);
    snprintf(args, sizeof args, "detokenize '%s' %s", spm, ids);
    EXPECT_RUN(insp, args, 0, g_out, "hello world");
    CHECK_MSG(strcmp(g_out, "hello world\n") == 0, "'%s'", g_out);
}

static void quantize(const char *quant, const char *model, const char *bin) {
    char out[512], args[2048];
    snprintf(out, sizeof out, "%s/tools_test_%d.gguf", TR_BINARY_DIR, (int)getpid());
    /* The reference model's rows (32 and 128 values) are shorter than a
     * K-quant block (256): every such tensor is named in a fallback line. */
    snprintf(args, sizeof args, "'%s' '%s' --quant Q4_K_M", model, out);
    EXPECT_RUN(quant, args, 0, g_out, "fallback: 27 tensors could not take the preset's type");
    CHECK_MSG(strstr(g_out, "22 x Q4_K -> Q8_0: rows of 32 values are not a multiple of Q4_K's "
                            "256-value block (e.g. enc.blocks.0.attn.q.weight)"),
              "%s", g_out);
    CHECK(strstr(g_out, "1 x Q6_K -> Q8_0: rows of 32 values"));
    /* Q8_0 fits every row: nothing falls back, nothing is said. */
    snprintf(args, sizeof args, "'%s' '%s' --quant Q8_0", model, out);
    EXPECT_RUN(quant, args, 0, g_out, "done. wrote");
    CHECK(!strstr(g_out, "fallback"));
    remove(out);
    if (access(bin, R_OK) == 0) {
        snprintf(args, sizeof args, "'%s' '%s' --quant Q8_0", bin, out);
        EXPECT_RUN(quant, args, 1, g_err,
                   "is a legacy whisper.cpp .bin file; this tool reads and "
                   "writes GGUF only");
        CHECK(access(out, F_OK) != 0);
    }
    snprintf(args, sizeof args, "/nonexistent/m.gguf '%s' --quant Q8_0", out);
    EXPECT_RUN(quant, args, 1, g_err, "cannot read /nonexistent/m.gguf: no such file");
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: test_tools BENCH INSPECT QUANTIZE\n");
        return 2;
    }
    bench_help(argv[1]);
    bench_model_llm(argv[1]);
    bench_model_fn(argv[1]);
    const char *model = TR_SOURCE_DIR "/tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf";
    const char *bin = TR_SOURCE_DIR "/tests/data/whisper/tiny/whisper-tiny-ref-F16.bin";
    inspect(argv[2], model);
    quantize(argv[3], model, bin);
    return TEST_DONE();
}
