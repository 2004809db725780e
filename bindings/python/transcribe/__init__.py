"""transcribe: offline speech-to-text over libtranscribe (pure Python, ctypes).

    import transcribe

    with transcribe.Model("models/parakeet-ctc-synth-en.gguf") as model:
        result = model.transcribe("samples/synth-heldout-klatt3.wav")
    for segment in result.segments:
        print(f"[{segment.start:.2f} -> {segment.end:.2f}] {segment.text}")

The shared library is found through ``$TRANSCRIBE_LIBRARY``, next to the
package, or on the system's library path (``cmake --install``). Library log
messages go to the ``logging`` logger named "transcribe".
"""

from __future__ import annotations

import typing as _typing  # not `from typing import ...`: the package's names are its own

from . import _lib
from ._audio import AudioInput, load_audio
from ._errors import (
    AbortedError,
    BackendError,
    InputTooLongError,
    InvalidArgumentError,
    LibraryNotFoundError,
    MissingFileError,
    ModelError,
    ModelNotFoundError,
    OutOfMemoryError,
    OutputTruncatedError,
    TranscribeError,
    UnsupportedError,
    UnsupportedLanguageError,
)
from ._model import Capabilities, Model, ModelInfo, Stream, StreamUpdate
from ._vad import VadModel
from ._result import Chunk, Result, Segment, SpeakerTurn, Timings, Token, Word

__version__ = "0.2.1"


def library_version() -> str:
    """Version of the loaded libtranscribe ("MAJOR.MINOR.PATCH")."""
    return _lib.text(_lib.get().version())


def library_path() -> str:
    """Path of the loaded libtranscribe."""
    return _lib.get().path


def devices() -> _typing.List[_typing.Dict[str, object]]:
    """The compute devices the library registered, as dicts (name, kind, type, memory)."""
    import ctypes

    from . import _structs as S

    lib = _lib.get()
    out = []
    for i in range(lib.device_count()):
        info = lib.new(S.DeviceInfo, lib.device_info_init)
        if lib.device_get_info(lib.device_get(i), ctypes.byref(info)) != 0:
            continue
        d: _typing.Dict[str, object] = {
            "index": i,
            "name": _lib.text(info.name),
            "description": _lib.text(info.description),
            "kind": _lib.text(info.kind),
            "type": S.DEVICE_TYPES.get(int(info.device_type), "unknown"),
            "memory_total": int(info.memory_total),
            "memory_free": int(info.memory_free),
        }
        out.append(d)
    return out


__all__ = [
    "AbortedError",
    "AudioInput",
    "BackendError",
    "Capabilities",
    "Chunk",
    "InputTooLongError",
    "InvalidArgumentError",
    "LibraryNotFoundError",
    "MissingFileError",
    "Model",
    "ModelError",
    "ModelInfo",
    "ModelNotFoundError",
    "OutOfMemoryError",
    "OutputTruncatedError",
    "Result",
    "Segment",
    "SpeakerTurn",
    "Stream",
    "StreamUpdate",
    "Timings",
    "Token",
    "TranscribeError",
    "UnsupportedError",
    "UnsupportedLanguageError",
    "VadModel",
    "Word",
    "devices",
    "library_path",
    "library_version",
    "load_audio",
]
