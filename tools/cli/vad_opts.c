/* --vad and its knobs: parsing, and the VAD model they name (by default the
 * bundled models/silero-vad-v4.gguf, found like the bundled ASR model). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CLI_VAD_FILE "silero-vad-v4.gguf"

const char *const cli_vad_usage =
    "  voice activity detection (Silero VAD v4; any --vad-* flag implies --vad):\n"
    "      --vad                     transcribe only the speech regions (times stay on the\n"
    "                                file's clock); long audio is cut at VAD pauses;\n"
    "                                with --stream, text is committed at each pause\n"
    "      --vad-model FILE          VAD model (default: the bundled " CLI_VAD_FILE ")\n"
    "      --vad-threshold P         speech onset probability in [0, 1] (default 0.5)\n"
    "      --vad-neg-threshold P     offset probability (default threshold - 0.15)\n"
    "      --vad-min-speech-ms N     drop shorter regions (default 250)\n"
    "      --vad-min-silence-ms N    shorter pauses do not end a region (default 100)\n"
    "      --vad-speech-pad-ms N     padding on each side of a region (default 30)\n"
    "      --vad-max-speech-s S      cut longer regions at a pause (default 0 = no limit)\n"
    "      --vad-window N            samples per VAD window: 512, 1024 or 1536 (default 512)\n";

static int bad(const cli_opts *o, const char *flag, const char *what, const char *val) {
    fprintf(stderr, "error: %s %s (got '%s')\nrun '%s --help' for the options\n", flag, what, val,
            o->argv0);
    return 1;
}

static bool num(const char *s, double lo, double hi, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

int cli_vad_parse(cli_opts *o, int argc, char **argv, int *i) {
    const char *arg = argv[*i];
    if (strncmp(arg, "--vad", 5) != 0) return -2;
    if (o->vad_params.struct_size == 0) transcribe_vad_params_init(&o->vad_params);
    o->vad = true;
    if (!strcmp(arg, "--vad")) return -1;
    static const char *const flags[] = {
        "--vad-model",          "--vad-threshold",     "--vad-neg-threshold", "--vad-min-speech-ms",
        "--vad-min-silence-ms", "--vad-speech-pad-ms", "--vad-max-speech-s",  "--vad-window"};
    int k = 0;
    while (k < 8 && strcmp(arg, flags[k]) != 0) k++;
    if (k == 8) return -2; /* not ours: the caller reports it */
    if (*i + 1 >= argc) {
        fprintf(stderr, "error: %s requires an argument\n", arg);
        return 1;
    }
    const char *val = argv[++*i];
    struct transcribe_vad_params *p = &o->vad_params;
    double v = 0;
    switch (k) {
    case 0:
        o->vad_model = val;
        return -1;
    case 1:
        if (!num(val, 0, 1, &v)) return bad(o, arg, "must be a probability in [0, 1]", val);
        p->threshold = (float)v;
        return -1;
    case 2:
        if (!num(val, 0, 1, &v)) return bad(o, arg, "must be a probability in [0, 1]", val);
        p->neg_threshold = (float)v;
        return -1;
    case 6:
        if (!num(val, 0, 86400, &v)) return bad(o, arg, "must be seconds from 0 to 86400", val);
        p->max_speech_s = (float)v;
        return -1;
    default:
        break;
    }
    if (!num(val, 0, 3600000, &v) || v != floor(v))
        return bad(o, arg, "must be a whole number from 0 to 3600000", val);
    int32_t *dst[] = {&p->min_speech_ms, &p->min_silence_ms, &p->speech_pad_ms, NULL,
                      &p->window_samples};
    *dst[k - 3] = (int32_t)v;
    return -1;
}

int cli_vad_load(const cli_opts *o, struct transcribe_vad_model **out) {
    *out = NULL;
    if (!o->vad) return 0;
    char path[4096];
    if (o->vad_model)
        snprintf(path, sizeof path, "%s", o->vad_model);
    else
        snprintf(path, sizeof path, "%s/%s", TR_BUNDLED_MODEL_DIR, CLI_VAD_FILE);
    char why[512];
    cli_load_capture(why, sizeof why);
    transcribe_status st = transcribe_vad_model_load(path, out);
    cli_load_reason(why, sizeof why, path, st);
    if (st != TRANSCRIBE_OK) {
        cli_load_error("the VAD model", path, why, st);
        return 1;
    }
    /* threshold order and window size against the model's rate, before any audio */
    struct transcribe_vad *v = NULL;
    st = transcribe_vad_init(*out, 16000, &o->vad_params, &v);
    transcribe_vad_free(v);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "error: VAD settings rejected: %s\n", transcribe_status_string(st));
        transcribe_vad_model_free(*out);
        *out = NULL;
        return 1;
    }
    if (!o->quiet && !o->vad_model) fprintf(stderr, "using bundled VAD model %s\n", path);
    return 0;
}
