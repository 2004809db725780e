/* Where `transcribe` looks for a model when -m is omitted (see bundled_dir.c).
 * The CLI's CMakeLists force-includes this header and defines
 * TR_BUNDLED_MODEL_DIR as a call to it. */
#ifndef TR_CLI_BUNDLED_DIR_H
#define TR_CLI_BUNDLED_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* The installed model folder, <prefix>/share/transcribe, found relative to the
 * running executable (<prefix>/bin/transcribe) so an install works at any
 * prefix; else, for a binary run from its build tree, the source tree's
 * models/ folder it was built from. The string lives until exit. */
const char *tr_cli_bundled_model_dir(void);

/* The model a tool uses when none is named: the first (by name) .gguf file
 * of that folder that is not the VAD model. Writes its path into out (cap
 * bytes) and returns true, or false when there is none. */
bool tr_cli_bundled_model(char *out, size_t cap);

#endif
