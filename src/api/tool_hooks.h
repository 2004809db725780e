/* Internal hooks for the project's own tools (transcribe-bench; any tool
 * that needs more than the public API): the one door from tools/ into a
 * loaded model's family, so that no tool includes a family header or the
 * dispatcher's private layout, casts a family session, or branches on an
 * architecture name (scripts/check-layers enforces all three).
 *
 * Not public API: these functions are hidden like every internal symbol, so
 * the shared library does not export them; the tools link the static
 * library (transcribe_internal in CMakeLists.txt), where hidden symbols
 * resolve as usual. A program built against the installed package cannot
 * reach them. The library itself never calls them.
 *
 * Each asks the family through an optional tool hook of its vtable
 * (core/family.h) and answers "none" when the family has no such hook. */
#ifndef TR_API_TOOL_HOOKS_H
#define TR_API_TOOL_HOOKS_H

#include <stdbool.h>
#include <stdint.h>

#include "nn/causal_lm.h"
#include "nn/encdec_decoder.h"
#include "nn/enc_cost.h"
#include "tensor/pool.h"
#include "transcribe.h"

/* The encoder's analytic work on n_samples of input (family hook
 * enc_cost). false with *why: "not a GGUF file", "architecture not
 * counted", or the family's own reason. */
bool tr_tool_enc_cost(const struct transcribe_model *m, int64_t n_samples, tr_enc_cost *out,
                      const char **why);

/* The causal-LM decoder of a session and its latest run's stage split
 * (family hook lm_stages). false for families without one. */
bool tr_tool_lm_stages(const struct transcribe_session *s, tr_clm_stages *out);

/* The encoder-decoder step of a session's latest run (family hook
 * ed_probe). false for families without one, or before a run. */
bool tr_tool_ed_probe(const struct transcribe_session *s, tr_ed_probe *out);

/* One line of what a legacy ggml .bin model file implies beyond what it
 * stores (family hook bin_summary of the family that claims the file by
 * its first n_head bytes). false when no family adds anything. */
struct tr_ggml_bin_hparams;
bool tr_tool_bin_summary(const void *head, size_t n_head, const struct tr_ggml_bin_hparams *hp,
                         char *out, size_t cap);

/* The session's worker pool (NULL: the calling thread), for measurements
 * that must run on the threads a transcription used. */
tr_pool *tr_tool_session_pool(const struct transcribe_session *s);

#endif
