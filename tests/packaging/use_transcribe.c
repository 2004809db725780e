/* A program a user writes against the installed package: it includes only the
 * public header and checks the library answers with its own version. */
#include <stdio.h>
#include <string.h>
#include <transcribe.h>

int main(void) {
    const char *v = transcribe_version();
    if (!v || strcmp(v, TRANSCRIBE_VERSION) != 0) {
        fprintf(stderr, "version %s, header says %s\n", v ? v : "(null)", TRANSCRIBE_VERSION);
        return 1;
    }
    printf("transcribe %s: %s\n", v, transcribe_status_string(TRANSCRIBE_OK));
    return 0;
}
