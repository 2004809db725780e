/* The text of every transcribe_status (c-api.md §2.1), for the library's
 * own messages; the public transcribe_status_string (src/api/version.c)
 * wraps it. */
#ifndef TR_CORE_STATUS_H
#define TR_CORE_STATUS_H

#include "transcribe.h"

/* A static string; "unknown status" for values outside the enum. */
const char *tr_status_string(int status);

#endif
