/* `mel`: run a front end on an audio file and save the features. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "same_file.h"

#ifdef TR_INSPECT_WITH_AUDIO
#include "audio/audio.h"
#include "audio/mel.h"
#include "gguf/gguf.h"
#include "tensor/pool.h"

static int usage(const char *why, const char *arg) {
    if (why) fprintf(stderr, "transcribe-inspect mel: %s'%s'\n", why, arg);
    fprintf(stderr, "usage: transcribe-inspect mel --kind whisper|nemo|kaldi [--n-mels N] "
                    "[--model MODEL.gguf] AUDIO -o OUT.npy\n");
    return 2;
}

int inspect_mel(int argc, char **argv) {
    const char *kind = NULL, *model = NULL, *audio = NULL, *out = NULL;
    int n_mels = 0;
    const char *n_mels_arg = "";
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--kind") && has)
            kind = argv[++i];
        else if (!strcmp(a, "--n-mels") && has)
            n_mels = atoi(n_mels_arg = argv[++i]);
        else if (!strcmp(a, "--model") && has)
            model = argv[++i];
        else if (!strcmp(a, "-o") && has)
            out = argv[++i];
        else if (a[0] == '-' && a[1])
            return usage(has ? "unknown option " : "unknown option, or one without its value: ", a);
        else if (!audio)
            audio = a;
        else
            return usage("one audio file only; also got ", a);
    }
    if (n_mels < 0 || n_mels > 1024)
        return usage("--n-mels must be from 1 to 1024, not ", n_mels_arg);
    if (!kind || !audio || !out) return usage(NULL, NULL);
    if (tool_same_file(out, audio) || (model && tool_same_file(out, model))) {
        fprintf(stderr, "transcribe-inspect: -o %s is the file it reads; give another path\n", out);
        return 2;
    }
    tr_mel_config c;
    if (!strcmp(kind, "whisper"))
        tr_mel_config_whisper(&c, n_mels ? n_mels : 80);
    else if (!strcmp(kind, "nemo"))
        tr_mel_config_nemo(&c, n_mels ? n_mels : 80);
    else if (!strcmp(kind, "kaldi"))
        tr_mel_config_kaldi(&c, n_mels ? n_mels : 80);
    else
        return usage("--kind is whisper, nemo or kaldi, not ", kind);

    gguf_file *f = NULL;
    if (model) {
        transcribe_status st = tr_gguf_open(model, &f);
        if (st == TRANSCRIBE_OK) st = tr_mel_config_from_gguf(&c, f);
        if (st != TRANSCRIBE_OK) {
            fprintf(stderr, "transcribe-inspect: cannot use the front end of '%s'\n", model);
            tr_gguf_close(f);
            return 1;
        }
    }
    int rc = 1;
    tr_audio a = {0};
    if (tr_audio_load_file(audio, c.sample_rate, &a) != TRANSCRIBE_OK) {
        fprintf(stderr, "transcribe-inspect: cannot read audio '%s'\n", audio);
        goto done;
    }
    tr_pool *pool = tr_pool_create(tr_default_n_threads());
    float *feat = NULL;
    int n_frames = 0;
    transcribe_status st = tr_mel_compute(&c, a.pcm, a.n, pool, &feat, &n_frames);
    tr_pool_free(pool);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "transcribe-inspect: feature extraction failed\n");
        goto done;
    }
    int64_t shape[2] = {tr_mel_n_features(&c), n_frames};
    if (inspect_write_npy_f32(out, feat, 2, shape) == 0) {
        printf("%s: %lld samples at %d Hz -> [%lld, %lld]\n", out, (long long)a.n, a.rate,
               (long long)shape[0], (long long)shape[1]);
        rc = 0;
    } else {
        fprintf(stderr, "transcribe-inspect: cannot write '%s'\n", out);
    }
    free(feat);
done:
    tr_audio_free(&a);
    tr_gguf_close(f);
    return rc;
}

#else

int inspect_mel(int argc, char **argv) {
    (void)argc, (void)argv;
    /* TODO: built without the audio module (src/audio did not link). */
    fprintf(stderr, "transcribe-inspect: 'mel' is not available in this build\n");
    return 1;
}

#endif
