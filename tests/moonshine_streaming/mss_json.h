/* The moonshine_streaming tests' data folders (tests/data/moonshine_streaming/README.md);
 * their decode.json / stream.json are read with golden_json.h. */
#ifndef TR_TEST_MSS_JSON_H
#define TR_TEST_MSS_JSON_H

#include "golden_json.h"
#include "test_files.h"

#define MSS_DATA TR_SOURCE_DIR "/tests/data/moonshine_streaming"
#define MSS_DIR  MSS_DATA "/tiny"

#endif
