/* The ext_query codes (family.h) behind the public family-extension entry
 * points: the entry point is defined in src/api (e.g. src/api/whisper_api.c
 * for include/transcribe/whisper.h) and asks the session's family through
 * its ext_query hook; the family answers. The codes live here, beside the
 * interface, so that neither side includes the other. A family that does
 * not know a code answers -1. */
#ifndef TR_CORE_EXT_QUERY_H
#define TR_CORE_EXT_QUERY_H

#include "core/family.h"

/* include/transcribe/whisper.h: the number of chunk traces of the latest
 * run (index and out unused), and trace `index` into a
 * struct transcribe_whisper_chunk_trace. */
#define TR_QUERY_WHISPER_CHUNK_COUNT TR_EXT_QUERY('W', 'H', 1)
#define TR_QUERY_WHISPER_CHUNK_TRACE TR_EXT_QUERY('W', 'H', 2)

#endif
