/* transcribe-inspect: look inside model files and run the front end and
 * tokenizer in isolation (debugging and golden generation). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "inspect.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: transcribe-inspect COMMAND [ARGS]\n"
            "\n"
            "commands:\n"
            "  info MODEL                      metadata (arrays abbreviated) and the tensor table\n"
            "                                  of a GGUF or legacy whisper.cpp .bin file\n"
            "  tensor MODEL NAME -o OUT.npy    dequantize a tensor to float32 .npy, shape in\n"
            "                                  PyTorch order (reversed ne)\n"
            "  mel --kind whisper|nemo|kaldi [--n-mels N] [--model MODEL.gguf] AUDIO -o OUT.npy\n"
            "                                  features [n_features, n_frames] of an audio file\n"
            "  tokenize MODEL TEXT             token ids of TEXT\n"
            "  detokenize MODEL ID...          text of token ids\n"
            "\n"
            "  -h, --help                      this text\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
    }
    if (!strcmp(cmd, "info")) return inspect_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "tensor")) return inspect_tensor(argc - 2, argv + 2);
    if (!strcmp(cmd, "mel")) return inspect_mel(argc - 2, argv + 2);
    if (!strcmp(cmd, "tokenize")) return inspect_tokenize(argc - 2, argv + 2);
    if (!strcmp(cmd, "detokenize")) return inspect_detokenize(argc - 2, argv + 2);
    struct stat sb;
    if (stat(cmd, &sb) == 0 && S_ISREG(sb.st_mode)) { /* a model file where the command goes */
        fprintf(stderr,
                "transcribe-inspect: '%s' is a file, not a command; did you mean "
                "'transcribe-inspect info %s'?\n",
                cmd, cmd);
        return 2;
    }
    fprintf(stderr, "transcribe-inspect: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
