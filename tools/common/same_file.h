/* Whether two paths name one existing file (the same device and inode,
 * whatever the spelling): the tools' guard against writing an output over
 * a file they read (the CLI's -o, the quantizer's output). Header only, so
 * a tool that links no other common code can use it. */
#ifndef TR_TOOLS_SAME_FILE_H
#define TR_TOOLS_SAME_FILE_H

#include <stdbool.h>
#include <sys/stat.h>

static inline bool tool_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

#endif
