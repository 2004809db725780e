/* A library error message as the tools show it: without the entry point
 * that logged it ("transcribe_run: language 'xx' is not supported..."
 * reads "language 'xx' is not supported..."), which names our C function,
 * not anything the user did. Header only. */
#ifndef TR_TOOLS_REASON_H
#define TR_TOOLS_REASON_H

#include <string.h>

static inline const char *tool_reason(const char *why) {
    if (!why || strncmp(why, "transcribe_", 11) != 0) return why;
    size_t n = strspn(why, "abcdefghijklmnopqrstuvwxyz_");
    return why[n] == ':' && why[n + 1] == ' ' && why[n + 2] ? why + n + 2 : why;
}

#endif
