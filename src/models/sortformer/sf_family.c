/* The Sortformer family vtable (src/core/family.h): an encoder-diarizer
 * whose runs give speaker rows (docs/formats/sortformer.md §6.5, §8). */
#include "models/sortformer/sortformer.h"
#include "transcribe/sortformer.h"

TR_FAMILY_ADAPTERS(sf)

/* docs/formats/sortformer.md §8: only the SFST run extension. */
static bool fam_accepts_ext_kind(uint32_t kind, int slot) {
    return slot == TRANSCRIBE_EXT_SLOT_RUN && kind == TRANSCRIBE_EXT_KIND_SORTFORMER_STREAM;
}

const tr_family tr_family_sortformer = {
    .arch = "sortformer",
    TR_FAMILY_ADAPTED_HOOKS,
    .accepts_ext_kind = fam_accepts_ext_kind,
    .get_limits = tr_family_no_limits,
};
