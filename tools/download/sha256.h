/* SHA-256 (FIPS 180-4), to check a downloaded file against the digest the
 * hub sends (X-Linked-Etag). */
#ifndef TDL_SHA256_H
#define TDL_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t fill;
} tdl_sha256;

void tdl_sha256_init(tdl_sha256 *s);
void tdl_sha256_update(tdl_sha256 *s, const void *data, size_t n);
/* The digest as 64 lower-case hex characters and a terminator. */
void tdl_sha256_hex(tdl_sha256 *s, char out[65]);

#endif
