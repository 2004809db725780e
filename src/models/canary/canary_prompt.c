/* The multitask prompt (docs/formats/canary.md §8.1) and the task, language and
 * PNC selection behind it (§8.2). Language and pair gates answer
 * UNSUPPORTED_LANGUAGE; a catalog id the chosen prompt needs but the file
 * lacks answers INVALID_ARG (prompt construction failure, as upstream). */
#include <stdio.h>
#include <string.h>

#include "models/canary/canary.h"
#include "util/log.h"

static const char *find_str(char *const *a, int n, const char *s) {
    for (int i = 0; s && i < n; i++)
        if (strcmp(a[i], s) == 0) return a[i];
    return NULL;
}

static transcribe_status need(int id, const char *what) {
    if (id >= 0) return TRANSCRIBE_OK;
    TR_ERROR("canary: the prompt needs %s, which this model does not have", what);
    return TRANSCRIBE_ERR_INVALID_ARG;
}

/* Source / target codes and their language ids. */
static transcribe_status pick_languages(const cn_model *m, const struct transcribe_run_params *p,
                                        cn_prompt *out, int *src_id, int *tgt_id) {
    const char *hint = p->language && p->language[0] ? p->language : "en";
    const char *src = find_str(m->lang, m->n_lang, hint);
    *src_id = tr_cn_lang_id(m, hint);
    if (!src || *src_id < 0) {
        TR_ERROR("canary: source language '%s' is not supported by this model%s", hint,
                 p->language ? "" : " (no hint given; Canary defaults to 'en')");
        return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    }
    const char *tgt = src;
    *tgt_id = *src_id;
    if (p->task == TRANSCRIBE_TASK_TRANSLATE) {
        if (!m->can_translate) {
            TR_ERROR("canary: this model cannot translate");
            return TRANSCRIBE_ERR_UNSUPPORTED_TASK;
        }
        const char *want = p->target_language && p->target_language[0] ? p->target_language : src;
        if (m->n_targets > 0 && !find_str(m->targets, m->n_targets, want)) {
            TR_ERROR("canary: translation target '%s' is not supported by this model", want);
            return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
        }
        if (m->has_pairs) {
            char pair[128];
            int n = snprintf(pair, sizeof pair, "%s>%s", src, want);
            if (n < 0 || (size_t)n >= sizeof pair || !find_str(m->pairs, m->n_pairs, pair)) {
                TR_ERROR("canary: translation %s -> %s is not an allowed pair", src, want);
                return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
            }
        }
        *tgt_id = tr_cn_lang_id(m, want);
        tgt = find_str(m->table_code, m->n_table, want);
        if (*tgt_id < 0 || !tgt) {
            TR_ERROR("canary: translation target '%s' has no language token", want);
            return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
        }
    }
    out->src = src;
    out->tgt = tgt;
    return TRANSCRIBE_OK;
}

transcribe_status tr_cn_build_prompt(const cn_model *m, const struct transcribe_run_params *p,
                                     cn_prompt *out) {
    memset(out, 0, sizeof *out);
    int src, tgt;
    transcribe_status st = pick_languages(m, p, out, &src, &tgt);
    if (st != TRANSCRIBE_OK) return st;
    const cn_special *sp = &m->sp;
    /* PNC on unless explicitly off (docs/formats/canary.md §8.2). Without both slots PNC is no
     * runtime control: the dispatcher WARNs and the default (on) applies
     * (docs/c-api.md §6.3). */
    bool pnc_ctrl = sp->pnc >= 0 && sp->nopnc >= 0;
    bool pnc_on = !pnc_ctrl || p->pnc != TRANSCRIBE_PNC_MODE_OFF;
    int pnc = pnc_on ? sp->pnc : sp->nopnc;
    if ((st = need(pnc, pnc_on ? "<|pnc|>" : "<|nopnc|>"))) return st;
    int32_t *ids = out->ids;
    int n = 0;
    if (m->hp.prompt_format == CN_PROMPT_CANARY) {
        bool translate = p->task == TRANSCRIBE_TASK_TRANSLATE || src != tgt;
        int task = translate && sp->translate >= 0 ? sp->translate : sp->transcribe;
        if ((st = need(task, "<|transcribe|>"))) return st;
        ids[n++] = sp->sot;
        ids[n++] = src;
        ids[n++] = task;
        ids[n++] = tgt;
        ids[n++] = pnc;
    } else {
        if ((st = need(sp->soc, "<|startofcontext|>")) || (st = need(sp->noitn, "<|noitn|>")) ||
            (st = need(sp->notimestamp, "<|notimestamp|>")) ||
            (st = need(sp->nodiarize, "<|nodiarize|>")) ||
            (st = need(sp->emo_undefined, "<|emo:undefined|>")))
            return st;
        if (m->hp.single_sp) {
            /* the bare "▁" of NeMo's empty context slot, first (docs/formats/canary.md §8.1,
             * §12.4) */
            if ((st = need(sp->space, "the piece \"\xE2\x96\x81\""))) return st;
            ids[n++] = sp->space;
        }
        ids[n++] = sp->soc;
        ids[n++] = sp->sot;
        ids[n++] = sp->emo_undefined;
        ids[n++] = src;
        ids[n++] = tgt; /* translation is signalled purely by SRC != TGT */
        ids[n++] = pnc;
        ids[n++] = sp->noitn;
        ids[n++] = sp->notimestamp;
        ids[n++] = sp->nodiarize;
    }
    out->n = n;
    return TRANSCRIBE_OK;
}
