/* One input rule for the CLI and the server: a WAV file whose data chunk
 * runs past the end of the file was cut short (a download or an upload
 * that stopped) and is refused with that reason, not transcribed in part. */
#ifndef TR_TOOLS_WAV_CUT_H
#define TR_TOOLS_WAV_CUT_H

#include <stdbool.h>

/* True when path is a RIFF/WAVE (or RF64) file whose header, read by the
 * library's parser, claims more data than the file holds. A header the
 * parser refuses, a size the writer could not fill in, or any other format
 * is left to the decoder (false). */
bool cli_wav_cut_short(const char *path);

/* The reason both tools give. */
#define CLI_WAV_CUT_SHORT_MSG "the WAV file is cut short (its data chunk runs past the end)"

#endif
