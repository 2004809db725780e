/* A streaming multipart/form-data reader (RFC 7578 over RFC 2046) for the
 * forms libmicrohttpd's post processor refuses though they are valid: a
 * one-character boundary, "BOUNDARY=" in another case, parameters after
 * the boundary. The common form still goes through libmicrohttpd
 * (http.c); this one reads the rest, with the same bounds. */
#ifndef SRV_MULTIPART_H
#define SRV_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One piece of a part's value: `name` / `filename` from its
 * Content-Disposition ("" when absent), `off` where the piece starts in
 * the value (0 starts a part; an empty value is one call of size 0).
 * false stops the reader (the caller has said why). */
typedef bool (*srv_mp_piece_fn)(void *cls, const char *name, const char *filename, const char *data,
                                uint64_t off, size_t size);

typedef struct srv_multipart srv_multipart;

/* The boundary parameter of Content-Type value `ct`: quoted or not, 1 to
 * 70 characters (RFC 2046), the parameter's name in any case. */
bool srv_mp_boundary(const char *ct, const char **out, size_t *len);

/* A reader for the boundary of Content-Type value `ct` (quoted or not, 1 to
 * 70 characters, the parameter's name in any case). NULL when `ct` has no
 * usable boundary or memory runs out. */
srv_multipart *srv_mp_new(const char *ct);
void srv_mp_free(srv_multipart *mp);
/* Feeds the next bytes of the body. false: malformed (a part's headers
 * over 8 KB, no Content-Disposition name, bytes that are not a
 * delimiter's end) or the callback said stop. Bytes after the closing
 * delimiter (an epilogue) are ignored. */
bool srv_mp_feed(srv_multipart *mp, const char *data, size_t size, srv_mp_piece_fn fn, void *cls);
/* Whether the closing delimiter has been read (the form is whole). */
bool srv_mp_done(const srv_multipart *mp);

#endif
