/* The model catalogue (catalogue.tsv, compiled in) and the model cache: what
 * `transcribe-download` fetches and what `transcribe -m NAME` (and Python's
 * Model("NAME")) find. No network here: this module links into the CLI,
 * which stays free of libcurl. */
#ifndef TDL_CATALOG_H
#define TDL_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

/* One row of the catalogue; the strings point into the catalogue's buffer. */
typedef struct {
    const char *name;       /* what users type (compared without case) */
    const char *family;     /* src/models/ family */
    const char *variant;    /* upstream variant */
    const char *repository; /* owner/name on the hub */
    const char *file;       /* file name pattern, {QUANT} stands for the quantization */
    const char *quants;     /* comma list; Q8_0 is the default where listed */
    const char *sizes;      /* QUANT=SIZE comma list as the specs state it, "?" unknown */
    const char *licence;    /* "?" unknown */
} tdl_model;

typedef struct {
    tdl_model *rows;
    int n;
    char *buf;        /* owns the text the rows point into */
    char source[512]; /* "built-in" or the TRANSCRIBE_CATALOGUE file */
} tdl_catalog;

#define TDL_DEFAULT_QUANT "Q8_0"
#define TDL_PATH_MAX      4096

/* Loads the catalogue: the file named by $TRANSCRIBE_CATALOGUE (a mirror's own
 * list, or a test's), else the built-in one. false with a reason in err. */
bool tdl_catalog_load(tdl_catalog *c, char *err, size_t errn);
void tdl_catalog_free(tdl_catalog *c);

/* The row named name (no case), NULL if none. */
const tdl_model *tdl_catalog_find(const tdl_catalog *c, const char *name);

/* Up to max rows whose names are closest to name (substring matches first,
 * then by edit distance, only those within reach); returns how many. */
int tdl_catalog_closest(const tdl_catalog *c, const char *name, const tdl_model **out, int max);

/* Splits a reference "NAME", "NAME-QUANT", "NAME:QUANT" or the file name
 * "NAME-QUANT.gguf" into its row and quantization (quant[0] == 0: none given).
 * NULL when no row matches. */
const tdl_model *tdl_catalog_parse_ref(const tdl_catalog *c, const char *ref, char *quant,
                                       size_t quant_n);

/* Whether m publishes quant (exact, no case); the canonical spelling into
 * canon when found. */
bool tdl_model_has_quant(const tdl_model *m, const char *quant, char *canon, size_t canon_n);
/* The i-th quantization of m into out; false past the last. */
bool tdl_model_quant_at(const tdl_model *m, int i, char *out, size_t n);
/* The file name of m at quant; false when it does not fit. */
bool tdl_model_file(const tdl_model *m, const char *quant, char *out, size_t n);
/* The size the catalogue states for quant, in one unit whatever the spec
 * wrote (MB, MiB, GB, GiB): "253 MB" below 1 GB, else "2.61 GB" (decimal
 * units); "?" when none is stated, the stated text when it does not parse. */
void tdl_model_size(const tdl_model *m, const char *quant, char *out, size_t n);

/* The cache folder: override (--dir) if given, else $TRANSCRIBE_MODEL_DIR,
 * else $XDG_CACHE_HOME/transcribe, else $HOME/.cache/transcribe. false when
 * none can be formed (no HOME). */
bool tdl_cache_dir(const char *override, char *out, size_t n);

/* Whether a regular, non-empty file is at path. */
bool tdl_file_present(const char *path);

/* For the CLI: resolves ref (a catalogue name, see parse_ref) to a cached
 * file, never touching the network. Returns 1 and the path when cached;
 * 0 when ref names no catalogued model (msg says so, with the closest
 * names); -1 when it names one that is not in the cache (msg says how to
 * fetch it) or the catalogue cannot be read. */
int tdl_resolve_cached(const char *ref, const char *dir_override, char *path, size_t path_n,
                       char *msg, size_t msg_n);

#endif
