/* Granite Speech prompt (docs/formats/granite_speech.md §7): the instruction chosen by variant and
 * task, the plain USER:/ASSISTANT: template or the Granite-4 role template, and the run-time checks
 * specific to this family. Text fragments are encoded separately; special tokens go between them by
 * id. The audio span sits between out->pre and out->post. */
#include <stdio.h>
#include <string.h>

#include "models/granite_speech/granite.h"
#include "text/tokenizer.h"
#include "util/log.h"

static const char k_instr_1b[] = "can you transcribe the speech into a written format?";
static const char k_instr_2b[] =
    "transcribe the speech with proper punctuation and capitalization.";
static const char k_instr_plus[] = " can you transcribe the speech into a written format?";
static const char k_words[] =
    " Timestamps: Transcribe the speech. After each word, add a timestamp tag showing the end "
    "time in centiseconds, e.g. hello [T:45] world [T:82]";
static const char k_speakers[] = " Speaker attribution: Transcribe and denote who is speaking by "
                                 "adding [Speaker 1]: and [Speaker 2]: tags before speaker turns.";
static const char k_sys_plus[] =
    "Knowledge Cutoff Date: April 2024.\nToday's Date: December 19, 2024.\nYou are Granite, "
    "developed by IBM. You are a helpful AI assistant";
static const char k_sys_other[] =
    "You are a helpful assistant. Please ensure responses are professional, accurate, and safe.";

static const char *const k_names[][2] = {
    {"de", "German"},   {"fr", "French"},  {"es", "Spanish"},  {"pt", "Portuguese"},
    {"ja", "Japanese"}, {"it", "Italian"}, {"zh", "Mandarin"}, {"en", "English"},
};

static const char *target_name(const char *code) {
    for (size_t i = 0; code && i < sizeof k_names / sizeof k_names[0]; i++)
        if (strcmp(k_names[i][0], code) == 0) return k_names[i][1];
    return NULL;
}

static bool diarize_on(const struct transcribe_run_params *p) {
    return p->diarize == TRANSCRIBE_DIARIZE_MODE_ON;
}

transcribe_status tr_gs_validate_run(const gs_model *m, const struct transcribe_run_params *p) {
    if (p->family) {
        TR_ERROR("granite_speech: this family takes no run extension");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (p->task == TRANSCRIBE_TASK_TRANSLATE && !m->translate) {
        TR_ERROR("granite_speech: %s cannot translate", m->variant);
        return TRANSCRIBE_ERR_UNSUPPORTED_TASK;
    }
    if (p->task == TRANSCRIBE_TASK_TRANSLATE && !target_name(p->target_language)) {
        TR_ERROR("granite_speech: translation needs a target language (de fr es pt ja it zh en), "
                 "got '%s'",
                 p->target_language ? p->target_language : "(none)");
        return p->target_language ? TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE
                                  : TRANSCRIBE_ERR_INVALID_ARG;
    }
    if ((int)p->timestamps > TRANSCRIBE_TIMESTAMPS_AUTO &&
        (p->timestamps != TRANSCRIBE_TIMESTAMPS_WORD || !m->word_ts) &&
        p->timestamps != TRANSCRIBE_TIMESTAMPS_SEGMENT) {
        TR_ERROR("granite_speech: timestamp kind %d is not available on %s", (int)p->timestamps,
                 m->variant);
        return TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS;
    }
    if (diarize_on(p) && m->diarize) {
        if (p->task != TRANSCRIBE_TASK_TRANSCRIBE) {
            TR_ERROR("granite_speech: speaker attribution works with transcription only");
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        if (p->timestamps != TRANSCRIBE_TIMESTAMPS_NONE &&
            p->timestamps != TRANSCRIBE_TIMESTAMPS_AUTO) {
            TR_ERROR("granite_speech: speaker attribution cannot be combined with timestamps");
            return TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS;
        }
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_gs_instruction(const gs_model *m, const struct transcribe_run_params *p,
                                    char *buf, size_t cap, const char **out) {
    const char *v = m->variant;
    *out = strcmp(v, "granite-speech-4.1-2b") == 0        ? k_instr_2b
           : strcmp(v, "granite-speech-4.1-2b-plus") == 0 ? k_instr_plus
                                                          : k_instr_1b;
    if (p->task == TRANSCRIBE_TASK_TRANSLATE) {
        const char *name = target_name(p->target_language);
        if (!name) return TRANSCRIBE_ERR_INVALID_ARG;
        snprintf(buf, cap, "can you translate the speech into %s?", name);
        *out = buf;
    } else if (p->timestamps == TRANSCRIBE_TIMESTAMPS_WORD && m->word_ts) {
        if (diarize_on(p)) return TRANSCRIBE_ERR_INVALID_ARG;
        *out = k_words;
    } else if (diarize_on(p) && m->diarize) {
        *out = k_speakers;
    }
    return TRANSCRIBE_OK;
}

typedef struct ids_buf {
    int32_t *ids;
    int n, cap;
    bool bad;
} ids_buf;

static void put_id(ids_buf *b, int id) {
    if (b->n >= b->cap || id < 0) {
        b->bad = true;
        return;
    }
    b->ids[b->n++] = id;
}

static void put_text(const gs_model *m, ids_buf *b, const char *text) {
    if (b->bad || !*text) return;
    int n = tr_tokenizer_encode(m->tok, text, b->ids + b->n, (size_t)(b->cap - b->n));
    if (n < 0 || b->n + n > b->cap) {
        b->bad = true;
        return;
    }
    b->n += n;
}

transcribe_status tr_gs_build_prompt(const gs_model *m, const struct transcribe_run_params *p,
                                     gs_prompt *out) {
    if (!tr_tokenizer_can_encode(m->tok)) {
        TR_ERROR("granite_speech: the tokenizer has no BPE merges; the prompt cannot be encoded");
        return TRANSCRIBE_ERR_GGUF;
    }
    char buf[128];
    const char *instr;
    transcribe_status st = tr_gs_instruction(m, p, buf, sizeof buf, &instr);
    if (st) return st;
    ids_buf pre = {out->pre, 0, GS_PROMPT_CAP, false}, post = {out->post, 0, GS_PROMPT_CAP, false};
    const gs_special *sp = &m->sp;
    if (m->role_template) {
        const bool plus = strcmp(m->variant, "granite-speech-4.1-2b-plus") == 0;
        put_id(&pre, sp->start_role);
        put_text(m, &pre, "system");
        put_id(&pre, sp->end_role);
        put_text(m, &pre, plus ? k_sys_plus : k_sys_other);
        put_id(&pre, sp->eos);
        put_text(m, &pre, "\n");
        put_id(&pre, sp->start_role);
        put_text(m, &pre, "user");
        put_id(&pre, sp->end_role);
        put_text(m, &post, instr);
        put_id(&post, sp->eos);
        put_text(m, &post, "\n");
        put_id(&post, sp->start_role);
        put_text(m, &post, "assistant");
        put_id(&post, sp->end_role);
    } else {
        char tail[192];
        snprintf(tail, sizeof tail, "%s\n ASSISTANT:", instr);
        put_text(m, &pre, "USER: ");
        put_text(m, &post, tail);
    }
    if (pre.bad || post.bad) {
        TR_ERROR("granite_speech: the prompt could not be encoded");
        return TRANSCRIBE_ERR_GGUF;
    }
    out->n_pre = pre.n;
    out->n_post = post.n;
    return TRANSCRIBE_OK;
}
