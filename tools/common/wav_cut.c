/* The WAV header check of the CLI and the server (wav_cut.h). The decoder
 * would read what is there, with a warning; both tools answer that the
 * file is damaged instead of transcribing part of it. The header is read by
 * the library's parser (transcribe_wav_read_header), as the bytes it asks
 * for; anything it refuses is left to the decoder. */
#include "wav_cut.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "transcribe.h"

bool cli_wav_cut_short(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool cut = false;
    unsigned char *buf = NULL;
    size_t have = 0, need = 12;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) need = 0;
    while (need > 0 && need <= (size_t)sb.st_size) {
        unsigned char *grown = realloc(buf, need);
        if (!grown || fread(grown + have, 1, need - have, f) != need - have) {
            buf = grown ? grown : buf;
            break;
        }
        buf = grown;
        have = need;
        if (memcmp(buf, "RIFF", 4) && memcmp(buf, "RF64", 4)) break; /* not WAV: not asked */
        struct transcribe_wav_info info;
        transcribe_wav_info_init(&info);
        if (transcribe_wav_read_header(buf, have, false, &info, &need) != TRANSCRIBE_OK) break;
        if (need == 0) /* -1: a writer that could not seek back */
            cut = info.data_bytes >= 0 && info.data_offset + info.data_bytes > (int64_t)sb.st_size;
    }
    free(buf);
    fclose(f);
    return cut;
}
