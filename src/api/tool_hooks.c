/* Internal hooks for the tools (tool_hooks.h). */
#include <string.h>

#include "api/api_internal.h"
#include "api/tool_hooks.h"

bool tr_tool_enc_cost(const struct transcribe_model *m, int64_t n_samples, tr_enc_cost *out,
                      const char **why) {
    memset(out, 0, sizeof *out);
    *why = NULL;
    if (!m || !m->gguf) {
        *why = "not a GGUF file";
        return false;
    }
    if (!m->family || !m->family->enc_cost) {
        *why = "architecture not counted";
        return false;
    }
    return m->family->enc_cost(m->gguf, n_samples, out, why);
}

bool tr_tool_lm_stages(const struct transcribe_session *s, tr_clm_stages *out) {
    memset(out, 0, sizeof *out);
    if (!s || !s->head.family || !s->head.family->lm_stages || !s->head.fsession) return false;
    return s->head.family->lm_stages(s->head.fsession, out);
}

bool tr_tool_ed_probe(const struct transcribe_session *s, tr_ed_probe *out) {
    memset(out, 0, sizeof *out);
    if (!s || !s->head.family || !s->head.family->ed_probe || !s->head.fsession) return false;
    return s->head.family->ed_probe(s->head.fsession, out);
}

bool tr_tool_bin_summary(const void *head, size_t n_head, const struct tr_ggml_bin_hparams *hp,
                         char *out, size_t cap) {
    if (cap) out[0] = '\0';
    const tr_family *f = head && hp ? tr_family_for_file(head, n_head) : NULL;
    return f && f->bin_summary && f->bin_summary(hp, out, cap);
}

tr_pool *tr_tool_session_pool(const struct transcribe_session *s) {
    return s ? s->pool : NULL;
}
