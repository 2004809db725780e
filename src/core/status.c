/* The status strings (status.h). */
#include "core/status.h"

const char *tr_status_string(int status) {
    switch (status) {
    case TRANSCRIBE_OK:
        return "ok";
    case TRANSCRIBE_ERR_INVALID_ARG:
        return "invalid argument";
    case TRANSCRIBE_ERR_NOT_IMPLEMENTED:
        return "not implemented";
    case TRANSCRIBE_ERR_FILE_NOT_FOUND:
        return "file not found";
    case TRANSCRIBE_ERR_GGUF:
        return "gguf load error";
    case TRANSCRIBE_ERR_UNSUPPORTED_ARCH:
        return "unsupported architecture";
    case TRANSCRIBE_ERR_UNSUPPORTED_VARIANT:
        return "unsupported variant";
    case TRANSCRIBE_ERR_OOM:
        return "out of memory";
    case TRANSCRIBE_ERR_BACKEND:
        return "backend error";
    case TRANSCRIBE_ERR_SAMPLE_RATE:
        return "sample rate mismatch";
    case TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE:
        return "unsupported language";
    case TRANSCRIBE_ERR_UNSUPPORTED_TASK:
        return "unsupported task";
    case TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS:
        return "unsupported timestamp granularity";
    case TRANSCRIBE_ERR_ABORTED:
        return "aborted by callback";
    case TRANSCRIBE_ERR_BAD_STRUCT_SIZE:
        return "caller-owned struct missing or has bad struct_size";
    case TRANSCRIBE_ERR_UNSUPPORTED_PNC:
        return "model does not support runtime PNC control (reserved; not currently returned)";
    case TRANSCRIBE_ERR_UNSUPPORTED_ITN:
        return "model does not support runtime ITN control (reserved; not currently returned)";
    case TRANSCRIBE_ERR_INPUT_TOO_LONG:
        return "input audio too long for model context";
    case TRANSCRIBE_ERR_OUTPUT_TRUNCATED:
        return "output truncated: decode hit the context/generation cap before end-of-stream";
    default:
        return "unknown status";
    }
}
