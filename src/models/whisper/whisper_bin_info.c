/* Whisper properties a legacy .bin file implies but does not store
 * (docs/formats/gguf.md §11.3): special token ids, languages, variant name and
 * the non-speech suppression list. */
#include "models/whisper/whisper_bin_info.h"

static const char *const k_languages[] = {
    "en", "zh", "de", "es",  "ru", "ko", "fr", "ja", "pt", "tr",  "pl", "ca", "nl", "ar", "sv",
    "it", "id", "hi", "fi",  "vi", "he", "uk", "el", "ms", "cs",  "ro", "da", "hu", "ta", "no",
    "th", "ur", "hr", "bg",  "lt", "la", "mi", "ml", "cy", "sk",  "te", "fa", "lv", "bn", "sr",
    "az", "sl", "kn", "et",  "mk", "br", "eu", "is", "hy", "ne",  "mn", "bs", "kk", "sq", "sw",
    "gl", "mr", "pa", "si",  "km", "sn", "yo", "so", "af", "oc",  "ka", "be", "tg", "sd", "gu",
    "am", "yi", "lo", "uz",  "fo", "ht", "ps", "tk", "nn", "mt",  "sa", "lb", "my", "bo", "tl",
    "mg", "as", "tt", "haw", "ln", "ha", "ba", "jw", "su", "yue",
};

static const int32_t k_nonspeech_en[] = {
    1,     2,     7,     8,     9,     10,    14,    25,    26,    27,    28,    29,
    31,    58,    59,    60,    61,    62,    63,    90,    91,    92,    93,    357,
    366,   438,   532,   685,   705,   796,   930,   1058,  1220,  1267,  1279,  1303,
    1343,  1377,  1391,  1635,  1782,  1875,  2162,  2361,  2488,  3467,  4008,  4211,
    4600,  4808,  5299,  5855,  6329,  7203,  9609,  9959,  10563, 10786, 11420, 11709,
    11907, 13163, 13697, 13700, 14808, 15306, 16410, 16791, 17992, 19203, 19510, 20724,
    22305, 22935, 27007, 30109, 30420, 33409, 34949, 40283, 40493, 40549, 47282, 49146,
};

static const int32_t k_nonspeech_multi[] = {
    1,     2,     7,     8,     9,     10,    14,    25,    26,    27,    28,    29,
    31,    58,    59,    60,    61,    62,    63,    90,    91,    92,    93,    359,
    503,   522,   542,   873,   893,   902,   918,   922,   931,   1350,  1853,  1982,
    2460,  2627,  3246,  3253,  3268,  3536,  3846,  3961,  4183,  4667,  6585,  6647,
    7273,  9061,  9383,  10428, 10929, 11938, 12033, 12331, 12562, 13793, 14157, 14635,
    15265, 15618, 16553, 16604, 18362, 18956, 20075, 21675, 22520, 26130, 26161, 26435,
    28279, 29464, 31650, 32302, 32470, 36865, 42863, 47425, 49870, 50254,
};

const char *tr_whisper_bin_language(int i) {
    return i >= 0 && i < (int)(sizeof k_languages / sizeof k_languages[0]) ? k_languages[i] : NULL;
}

const int32_t *tr_whisper_bin_nonspeech(bool multilingual, int *n) {
    if (multilingual) {
        *n = (int)(sizeof k_nonspeech_multi / sizeof k_nonspeech_multi[0]);
        return k_nonspeech_multi;
    }
    *n = (int)(sizeof k_nonspeech_en / sizeof k_nonspeech_en[0]);
    return k_nonspeech_en;
}

static const char *variant_of(const tr_ggml_bin_hparams *hp, bool multi) {
    switch (hp->n_audio_layer) {
    case 4:
        return multi ? "tiny" : "tiny.en";
    case 6:
        return multi ? "base" : "base.en";
    case 12:
        return multi ? "small" : "small.en";
    case 24:
        return multi ? "medium" : "medium.en";
    case 32:
        if (hp->n_mels == 128) return hp->n_text_layer == 4 ? "large-v3-turbo" : "large-v3";
        return "large";
    default:
        return "whisper";
    }
}

void tr_whisper_bin_info_from(const tr_ggml_bin_hparams *hp, tr_whisper_bin_info *o) {
    o->multilingual = hp->n_vocab >= 51865;
    if (!o->multilingual) {
        o->num_languages = 1;
        o->eot = 50256, o->sot = 50257;
        o->translate = 50357;
    } else {
        o->num_languages = hp->n_vocab - 51765 - 1;
        o->eot = 50257, o->sot = 50258;
        o->translate = 50357 + (o->num_languages - 98);
    }
    o->transcribe = o->translate + 1;
    o->startoflm = o->translate + 2;
    o->startofprev = o->translate + 3;
    o->nospeech = o->translate + 4;
    o->notimestamps = o->translate + 5;
    o->timestamp_begin = o->translate + 6;
    o->variant = variant_of(hp, o->multilingual);
}
