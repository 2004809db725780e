/* A language code as the model spells it: the CLI's -l / --target-language
 * and the server's language= take "EN" for a model's "en". The library
 * matches codes exactly (docs/c-api.md §10.1), so the front ends fold case
 * before they pass a code on. Header only. */
#ifndef TR_TOOLS_LANG_CODE_H
#define TR_TOOLS_LANG_CODE_H

#include <string.h>
#include <strings.h>

/* code itself when list has it, else the one entry that differs from it
 * only in ASCII case, else code (the library then says it is unsupported). */
static inline const char *tool_lang_code(const char *code, const char *const *list, int n) {
    for (int i = 0; i < n; i++)
        if (list[i] && strcmp(list[i], code) == 0) return code;
    for (int i = 0; i < n; i++)
        if (list[i] && strcasecmp(list[i], code) == 0) return list[i];
    return code;
}

#endif
