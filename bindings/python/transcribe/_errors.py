"""Exceptions: one class per kind of failure, each carrying the library's status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Type

if TYPE_CHECKING:
    from ._result import Result


class TranscribeError(Exception):
    """A libtranscribe call failed.

    Attributes:
        status: the ``transcribe_status`` value (int).
        status_name: its enum name without the ``TRANSCRIBE_`` prefix,
            e.g. ``"ERR_UNSUPPORTED_LANGUAGE"``.
        message: the library's reason (its last error message for the call).
        result: the partial result where the library keeps one (an aborted
            run), else None.
    """

    def __init__(
        self,
        message: str,
        status: int = 0,
        status_name: str = "",
        result: Optional["Result"] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.status_name = status_name
        self.result = result

    def __str__(self) -> str:
        if self.status_name:
            return f"{self.message} [{self.status_name}]"
        return self.message


class LibraryNotFoundError(TranscribeError, ImportError):
    """libtranscribe.so could not be found or is not a usable version."""


class InvalidArgumentError(TranscribeError, ValueError):
    """A parameter or input the library rejected (TRANSCRIBE_ERR_INVALID_ARG)."""


class UnsupportedError(TranscribeError):
    """The model cannot do what was asked: a task, timestamp granularity,
    streaming, or a parameter this library build lacks."""


class UnsupportedLanguageError(UnsupportedError, ValueError):
    """A language (or translation target / pair) the model does not list."""


class ModelError(TranscribeError):
    """The model file could not be loaded: missing, malformed, or of an
    architecture or variant this library does not run."""


class MissingFileError(TranscribeError, FileNotFoundError):
    """A file (model or audio) does not exist (TRANSCRIBE_ERR_FILE_NOT_FOUND)."""


class ModelNotFoundError(ModelError, MissingFileError):
    """The model file does not exist."""


class InputTooLongError(TranscribeError):
    """The audio is longer than the model can take in one call."""


class AbortedError(TranscribeError):
    """The abort callback stopped the run; ``result`` holds the part done."""


class BackendError(TranscribeError):
    """A compute backend failed (TRANSCRIBE_ERR_BACKEND)."""


class OutOfMemoryError(TranscribeError, MemoryError):
    """An allocation failed inside the library (TRANSCRIBE_ERR_OOM)."""


class OutputTruncatedError(TranscribeError):
    """Status 18 from a call that fails with it as a whole. Runs do not
    raise it: a run (or batch input) that hits the model's context or
    generation cap returns its partial result with ``Result.truncated`` set."""


_BY_STATUS: Dict[int, Type[TranscribeError]] = {
    1: InvalidArgumentError,
    2: UnsupportedError,
    3: MissingFileError,
    4: ModelError,
    5: ModelError,
    6: ModelError,
    7: OutOfMemoryError,
    8: BackendError,
    9: InvalidArgumentError,
    10: UnsupportedLanguageError,
    11: UnsupportedError,
    12: UnsupportedError,
    13: AbortedError,
    14: TranscribeError,
    15: UnsupportedError,
    16: UnsupportedError,
    17: InputTooLongError,
    18: OutputTruncatedError,
}


def error_for(status: int, message: str, model: bool = False, **kw: Any) -> TranscribeError:
    """The exception for a failed call's status and message (model: the call
    loaded a model, so a missing file is a ModelNotFoundError)."""
    from ._structs import STATUS_NAMES

    cls = _BY_STATUS.get(int(status), TranscribeError)
    if model and cls is MissingFileError:
        cls = ModelNotFoundError
    return cls(message, int(status), STATUS_NAMES.get(int(status), f"status {status}"), **kw)
