"""ctypes mirrors of the public C structs of ``transcribe.h``.

Each mirror lists its fields in header order. The C structs grow only at the
end (``struct_size`` tells the library how much of a struct the caller
knows), so a field the header appends is one line appended to the matching
``_fields_`` list here; ``tests/test_abi.py`` compares every mirror with
``transcribe_abi_struct_size``/``_align`` of the loaded library so a layout
change cannot go unnoticed.

Buffers are never allocated at the mirror's own size alone: the library's
``*_init`` functions write the library's ``sizeof``, which may exceed the
mirror's (a newer library), so :func:`new_struct` allocates the larger of the
two (see ``_lib.py``).
"""

from __future__ import annotations

import ctypes
from typing import Dict, Type
from ctypes import (
    POINTER,
    c_bool,
    c_char_p,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_uint32,
    c_uint64,
    c_void_p,
)

# Enums are int-sized in the C API (docs/c-api.md §0.4).
c_enum = c_int

# ---- enumerations (values are ABI) ----

STATUS_NAMES = {
    0: "OK",
    1: "ERR_INVALID_ARG",
    2: "ERR_NOT_IMPLEMENTED",
    3: "ERR_FILE_NOT_FOUND",
    4: "ERR_GGUF",
    5: "ERR_UNSUPPORTED_ARCH",
    6: "ERR_UNSUPPORTED_VARIANT",
    7: "ERR_OOM",
    8: "ERR_BACKEND",
    9: "ERR_SAMPLE_RATE",
    10: "ERR_UNSUPPORTED_LANGUAGE",
    11: "ERR_UNSUPPORTED_TASK",
    12: "ERR_UNSUPPORTED_TIMESTAMPS",
    13: "ERR_ABORTED",
    14: "ERR_BAD_STRUCT_SIZE",
    15: "ERR_UNSUPPORTED_PNC",
    16: "ERR_UNSUPPORTED_ITN",
    17: "ERR_INPUT_TOO_LONG",
    18: "ERR_OUTPUT_TRUNCATED",
}
OK = 0
ERR_INVALID_ARG = 1
ERR_NOT_IMPLEMENTED = 2
ERR_ABORTED = 13
ERR_OUTPUT_TRUNCATED = 18

# transcribe_abi_struct ids (append-only)
ABI_MODEL_LOAD_PARAMS = 0
ABI_SESSION_PARAMS = 1
ABI_RUN_PARAMS = 2
ABI_STREAM_PARAMS = 3
ABI_CAPABILITIES = 4
ABI_TIMINGS = 5
ABI_SEGMENT = 6
ABI_WORD = 7
ABI_TOKEN = 8
ABI_STREAM_UPDATE = 9
ABI_STREAM_TEXT = 10
ABI_SESSION_LIMITS = 11
ABI_EXT = 12
ABI_DEVICE_INFO = 13
ABI_SPEAKER_SEGMENT = 14
ABI_BACKEND_DEVICE = 15

LOG_LEVEL_NONE = 0
LOG_LEVEL_INFO = 1
LOG_LEVEL_WARN = 2
LOG_LEVEL_ERROR = 3
LOG_LEVEL_DEBUG = 4
LOG_LEVEL_CONT = 5

TASKS = {"transcribe": 0, "translate": 1}
TIMESTAMP_KINDS = {"none": 0, "auto": 1, "segment": 2, "word": 3, "token": 4}
TIMESTAMP_NAMES = {v: k for k, v in TIMESTAMP_KINDS.items()}
KV_TYPES = {"auto": 0, "f32": 1, "f16": 2}
MODES = {None: 0, "default": 0, False: 1, "off": 1, True: 2, "on": 2}  # pnc/itn/diarize
FEATURES = {
    "initial_prompt": 0,
    "temperature_fallback": 1,
    "long_form": 2,
    "cancellation": 3,
    "pnc": 4,
    "itn": 5,
    "diarization": 6,
    "vocabulary": 7,  # newer libraries (vocabulary hints); an older one answers false
}
BACKENDS = {"auto": 0, "cpu": 1, "metal": 2, "vulkan": 3, "cpu_accel": 4, "cuda": 5, "rocm": 6}
DEVICE_TYPES = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel"}
STREAM_STATES = {0: "idle", 1: "active", 2: "finished", 3: "failed"}
COMMIT_POLICIES = {"auto": 0, "finalize": 1, "on_finalize": 1, "stable_prefix": 2, "stable": 2}

# ---- caller-allocated structs (docs/c-api.md §19 lists the LP64 sizes) ----


class Ext(ctypes.Structure):
    _fields_ = [("size", c_uint64), ("kind", c_uint32)]


class ModelLoadParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("backend", c_enum),
        ("device", c_void_p),
        ("gpu_device", c_int),
    ]


class SessionParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("n_threads", c_int),
        ("kv_type", c_enum),
        ("n_ctx", c_int32),
    ]


class VadParams(ctypes.Structure):
    # struct transcribe_vad_params (Silero VAD; an addition without an ABI id)
    _fields_ = [
        ("struct_size", c_uint64),
        ("threshold", c_float),
        ("neg_threshold", c_float),
        ("min_speech_ms", c_int32),
        ("min_silence_ms", c_int32),
        ("speech_pad_ms", c_int32),
        ("max_speech_s", c_float),
        ("window_samples", c_int32),
    ]


class VadSegment(ctypes.Structure):
    # struct transcribe_vad_segment: fixed layout, no struct_size
    _fields_ = [("start", c_int64), ("end", c_int64), ("t0_ms", c_int64), ("t1_ms", c_int64)]


class RunParams(ctypes.Structure):
    # The appended fields (voice-activity detection, vocabulary hints) follow
    # the header's order. Model.transcribe(vocabulary=..., vad=...) sets a
    # field only when the loaded library's struct covers it (_lib.Lib.covers)
    # and raises UnsupportedError otherwise.
    _fields_ = [
        ("struct_size", c_uint64),
        ("task", c_enum),
        ("timestamps", c_enum),
        ("pnc", c_enum),
        ("itn", c_enum),
        ("diarize", c_enum),
        ("language", c_char_p),
        ("target_language", c_char_p),
        ("keep_special_tags", c_bool),
        ("family", POINTER(Ext)),
        ("spec_k_drafts", c_int32),
        ("vad_model", c_void_p),
        ("vad_params", POINTER(VadParams)),
        ("vocabulary", POINTER(c_char_p)),
        ("n_vocabulary", c_int32),
        ("chunk_max_ms", c_int64),
        ("chunking", c_enum),
        ("chunk_batch", c_int32),
        ("diarizer", c_void_p),
    ]


class StreamParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("family", POINTER(Ext)),
        ("commit_policy", c_enum),
        ("stable_prefix_agreement_n", c_uint32),
        ("window_fallback", c_bool),
    ]


class Capabilities(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("native_sample_rate", c_int32),
        ("n_languages", c_int),
        ("languages", POINTER(c_char_p)),
        ("max_timestamp_kind", c_enum),
        ("supports_language_detect", c_bool),
        ("supports_translate", c_bool),
        ("supports_streaming", c_bool),
        ("supports_spec_decode", c_bool),
        ("max_audio_ms", c_int64),
        ("n_translate_target_languages", c_int),
        ("translate_target_languages", POINTER(c_char_p)),
        ("supports_window_streaming", c_bool),
    ]


class SessionLimits(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("effective_n_ctx", c_int32),
        ("effective_max_audio_ms", c_int64),
        ("max_kv_bytes", c_int64),
    ]


class Timings(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("load_ms", c_float),
        ("mel_ms", c_float),
        ("encode_ms", c_float),
        ("decode_ms", c_float),
    ]


class Segment(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("t0_ms", c_int64),
        ("t1_ms", c_int64),
        ("first_word", c_int),
        ("n_words", c_int),
        ("first_token", c_int),
        ("n_tokens", c_int),
        ("text", c_char_p),
        ("speaker_id", c_int32),
    ]


class Word(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("t0_ms", c_int64),
        ("t1_ms", c_int64),
        ("seg_index", c_int),
        ("first_token", c_int),
        ("n_tokens", c_int),
        ("text", c_char_p),
        ("speaker_id", c_int32),
    ]


class Token(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("id", c_int),
        ("p", c_float),
        ("t0_ms", c_int64),
        ("t1_ms", c_int64),
        ("seg_index", c_int),
        ("word_index", c_int),
        ("text", c_char_p),
    ]


class SpeakerSegment(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("t0_ms", c_int64),
        ("t1_ms", c_int64),
        ("speaker_id", c_int32),
        ("p", c_float),
    ]


class StreamUpdate(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("result_changed", c_bool),
        ("is_final", c_bool),
        ("revision", c_int32),
        ("input_received_ms", c_int64),
        ("audio_committed_ms", c_int64),
        ("buffered_ms", c_int64),
        ("committed_changed", c_bool),
        ("tentative_changed", c_bool),
    ]


class StreamText(ctypes.Structure):
    # The texts are read through their byte counts (c_void_p + length), not
    # as NUL-terminated strings.
    _fields_ = [
        ("struct_size", c_uint64),
        ("full_text", c_void_p),
        ("full_text_bytes", c_uint64),
        ("committed_text", c_void_p),
        ("committed_text_bytes", c_uint64),
        ("tentative_text", c_void_p),
        ("tentative_text_bytes", c_uint64),
        ("raw_tentative_start_bytes", c_uint64),
    ]


class DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("name", c_char_p),
        ("description", c_char_p),
        ("kind", c_char_p),
        ("device_id", c_char_p),
        ("memory_total", c_uint64),
        ("memory_free", c_uint64),
        ("device_type", c_enum),
    ]


class Piece(ctypes.Structure):
    # struct transcribe_piece: one piece of long audio the library split.
    _fields_ = [
        ("struct_size", c_uint64),
        ("t0_ms", c_int64),
        ("t1_ms", c_int64),
        ("end_kind", c_int32),
        ("status", c_int),
    ]


CHUNKING = {"auto": 0, "on": 1, "off": 2}


class AudioSpan(ctypes.Structure):
    # Fixed layout, returned as an array (never extended).
    _fields_ = [("start", c_int64), ("end", c_int64), ("end_kind", c_int32)]


class PauseSplitParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint64),
        ("target_ms", c_int64),
        ("max_ms", c_int64),
        ("min_pause_ms", c_int64),
    ]


class FormatParams(ctypes.Structure):
    # transcribe_format_params (an addition; no ABI id: sized by its init)
    _fields_ = [
        ("struct_size", c_uint64),
        ("format", c_int32),
        ("max_line_chars", c_int32),
        ("max_cue_ms", c_int32),
        ("json_tokens", c_bool),
        ("txt_header", c_bool),
        ("duration_s", ctypes.c_double),
        ("file", c_char_p),
        ("model", c_char_p),
        ("run_status", c_int32),
    ]


class WavInfo(ctypes.Structure):
    # transcribe_wav_info (an addition; no ABI id: sized by its init)
    _fields_ = [
        ("struct_size", c_uint64),
        ("sample_rate", c_int32),
        ("channels", c_int32),
        ("bits_per_sample", c_int32),
        ("format_tag", c_int32),
        ("block_align", c_int32),
        ("data_offset", c_int64),
        ("data_bytes", c_int64),
    ]


# transcribe_output_format
FORMATS = {"txt": 0, "json": 1, "srt": 2, "vtt": 3}


# Mirror of every transcribe_abi_struct id.
ABI_MIRRORS: Dict[int, Type[ctypes.Structure]] = {
    ABI_MODEL_LOAD_PARAMS: ModelLoadParams,
    ABI_SESSION_PARAMS: SessionParams,
    ABI_RUN_PARAMS: RunParams,
    ABI_STREAM_PARAMS: StreamParams,
    ABI_CAPABILITIES: Capabilities,
    ABI_TIMINGS: Timings,
    ABI_SEGMENT: Segment,
    ABI_WORD: Word,
    ABI_TOKEN: Token,
    ABI_STREAM_UPDATE: StreamUpdate,
    ABI_STREAM_TEXT: StreamText,
    ABI_SESSION_LIMITS: SessionLimits,
    ABI_EXT: Ext,
    ABI_DEVICE_INFO: DeviceInfo,
    ABI_SPEAKER_SEGMENT: SpeakerSegment,
    ABI_BACKEND_DEVICE: DeviceInfo,  # the same fields (c-api.md §5)
}
ABI_IDS: Dict[Type[ctypes.Structure], int] = {cls: which for which, cls in ABI_MIRRORS.items()}


def field_end(cls: type, name: str) -> int:
    """Byte offset just past field ``name`` of mirror ``cls``."""
    desc = getattr(cls, name)
    return int(desc.offset + desc.size)
