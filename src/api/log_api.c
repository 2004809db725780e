/* The logging section of include/transcribe.h: the public face of the one
 * process-wide sink that src/util/log.c keeps. */
#include "transcribe.h"
#include "util/log.h"

TRANSCRIBE_API void transcribe_log_set(transcribe_log_callback cb, void *userdata) {
    tr_log_set(cb, userdata);
}
