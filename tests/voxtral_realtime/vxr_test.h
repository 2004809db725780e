/* Shared by the Voxtral Realtime tests: the reference folder, its clip and the offline goldens
 * (<clip>[.q8_0].text.txt: status, ids, text, raw text, segment end). */
#ifndef TR_TESTS_VXR_TEST_H
#define TR_TESTS_VXR_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_files.h"
#include "transcribe.h"

#define VXR_DIR TR_SOURCE_DIR "/tests/data/voxtral_realtime"

typedef struct vxr_golden {
    int32_t ids[256];
    int n_ids;
    char text[1024], raw[1024];
    long long seg_t1;
} vxr_golden;

/* The value of "key: " in the text file s (up to the line end) into out. */
static inline bool vxr_field(const char *s, const char *key, char *out, size_t cap) {
    char k[64];
    snprintf(k, sizeof k, "%s: ", key);
    const char *p = strstr(s, k);
    if (!p) return false;
    p += strlen(k);
    size_t n = strcspn(p, "\n");
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
    return true;
}

static inline bool vxr_golden_load(const char *clip, bool q8, vxr_golden *g) {
    char path[512], buf[2048];
    memset(g, 0, sizeof *g);
    snprintf(path, sizeof path, "%s/%s%s.text.txt", VXR_DIR, clip, q8 ? ".q8_0" : "");
    char *s = tr_test_read_text(path, NULL);
    if (!s) return false;
    bool ok = vxr_field(s, "text", g->text, sizeof g->text) &&
              vxr_field(s, "raw_text", g->raw, sizeof g->raw) &&
              vxr_field(s, "ids", buf, sizeof buf);
    for (char *p = buf, *e; ok && *p && g->n_ids < 256; p = e) {
        long v = strtol(p, &e, 10);
        if (e == p) break;
        g->ids[g->n_ids++] = (int32_t)v;
    }
    if (ok && vxr_field(s, "segment_ms", buf, sizeof buf)) {
        long long a = 0;
        ok = sscanf(buf, "%lld %lld", &a, &g->seg_t1) == 2;
    }
    free(s);
    return ok;
}

/* The reference clip (40 000 samples, 16 kHz; transcribe_audio_free). */
static inline float *vxr_load_clip(int *n) {
    float *pcm = NULL;
    *n = 0;
    if (transcribe_audio_load_file(VXR_DIR "/clip.wav", 16000, &pcm, n) != TRANSCRIBE_OK)
        return NULL;
    return pcm;
}

#endif
