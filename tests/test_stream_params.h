/* Stream parameters for tests that stream a model through the library's
 * window driver (docs/c-api.md §14): the defaults of
 * transcribe_stream_params_init with window_fallback set, so any model with
 * an offline run path streams. */
#ifndef TR_TEST_STREAM_PARAMS_H
#define TR_TEST_STREAM_PARAMS_H

#include <stdbool.h>

#include "transcribe.h"

#define TU_WINDOW                                                                                  \
    (&(struct transcribe_stream_params){.struct_size = sizeof(struct transcribe_stream_params),    \
                                        .commit_policy = TRANSCRIBE_STREAM_COMMIT_AUTO,            \
                                        .window_fallback = true})

#endif
