/* UTF-8 stepping and repair, and the Unicode class lookup used by the
 * pre-tokenizers. Invalid input follows the Unicode "maximal subpart"
 * practice (one U+FFFD per maximal invalid prefix), which is also what
 * Python's bytes.decode("utf-8", "replace") does. */
#include <stdlib.h>
#include <string.h>

#include "text/tok_internal.h"

/* Expected length of a sequence from its lead byte (0: never a lead) and the
 * allowed range of its second byte. */
static int lead_info(unsigned char b, unsigned char *lo, unsigned char *hi) {
    *lo = 0x80;
    *hi = 0xBF;
    if (b < 0x80) return 1;
    if (b < 0xC2) return 0;
    if (b < 0xE0) return 2;
    if (b < 0xF0) {
        if (b == 0xE0) *lo = 0xA0;
        if (b == 0xED) *hi = 0x9F; /* no surrogates */
        return 3;
    }
    if (b < 0xF5) {
        if (b == 0xF0) *lo = 0x90;
        if (b == 0xF4) *hi = 0x8F; /* <= U+10FFFF */
        return 4;
    }
    return 0;
}

/* Bytes of s[0..n) that form a valid (possibly incomplete) prefix of a
 * sequence, and the full length it needs (0 for an invalid lead). */
static int valid_prefix(const unsigned char *s, size_t n, int *need) {
    unsigned char lo, hi;
    int len = lead_info(s[0], &lo, &hi);
    *need = len;
    if (len <= 1) return len;
    int k = 1;
    while (k < len && (size_t)k < n) {
        unsigned char c = s[k];
        if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) break;
        k++;
    }
    return k;
}

int tr_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    int need;
    int k = valid_prefix(s, n, &need);
    if (need == 0 || k < need) return 0;
    switch (need) {
    case 1:
        *cp = s[0];
        break;
    case 2:
        *cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
        break;
    case 3:
        *cp = ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        break;
    default:
        *cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
              ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    }
    return need;
}

int tr_utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

char *tr_utf8_sanitize(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    if (!s) n = 0;
    /* Worst case every byte becomes the 3-byte U+FFFD. */
    if (n > (SIZE_MAX - 1) / 3) return NULL;
    char *out = malloc(n * 3 + 1);
    if (!out) return NULL;
    size_t o = 0, i = 0;
    while (i < n) {
        int need;
        int k = valid_prefix(s + i, n - i, &need);
        if (need > 0 && k == need) {
            memcpy(out + o, s + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += k > 0 ? (size_t)k : 1;
        }
    }
    out[o] = '\0';
    return out;
}

size_t tr_utf8_complete_prefix(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    if (!s) return 0;
    /* Only a trailing sequence that is still valid but too short is held
     * back; anything invalid is final (it becomes U+FFFD either way). */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        size_t j = n - back;
        if ((s[j] & 0xC0) == 0x80) continue; /* continuation: keep looking */
        int need;
        int k = valid_prefix(s + j, back, &need);
        return (need > 1 && (size_t)k == back && k < need) ? j : n;
    }
    return n;
}

int tr_uni_flags(uint32_t cp) {
    if (cp < 0x80) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return TR_UNI_L;
        if (cp >= '0' && cp <= '9') return TR_UNI_N;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return TR_UNI_WS;
        return 0;
    }
    int lo = 0, hi = tr_uni_n_ranges - 1;
    while (lo <= hi) {
        int mid = (lo + hi) >> 1;
        if (cp < tr_uni_ranges[mid][0]) {
            hi = mid - 1;
        } else if (cp > (tr_uni_ranges[mid][1] >> 3)) {
            lo = mid + 1;
        } else {
            return (int)(tr_uni_ranges[mid][1] & 7);
        }
    }
    return 0;
}
