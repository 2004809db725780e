"""Finding and loading ``libtranscribe.so``, function prototypes, the log sink.

The library is looked up, first match wins, in (``_paths.py``):

1. ``$TRANSCRIBE_LIBRARY`` (a file, or a folder holding ``libtranscribe.so``);
2. the library ``TRANSCRIBE_LIBRARY`` named when the package was installed;
3. next to the package (the ``transcribe`` folder and the folder above it);
4. the ``build/lib`` folder of the checkout the package was installed from
   (or sits in);
5. the system's search path (``cmake --install`` into ``/usr/local``, ``/usr``,
   or a prefix on ``LD_LIBRARY_PATH``), then ``<sys.prefix>/lib`` and
   ``/usr/local/lib``.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import logging
import os
import re
import sys
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    c_bool,
    c_char_p,
    c_float,
    c_int,
    c_int64,
    c_size_t,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Type, TypeVar

from . import _paths
from . import _structs as S
from ._errors import LibraryNotFoundError

logger = logging.getLogger("transcribe")

_LIB_NAMES = ("libtranscribe.so.0", "libtranscribe.so", "libtranscribe.dylib")

ABORT_CALLBACK = CFUNCTYPE(c_bool, c_void_p)
LOG_CALLBACK = CFUNCTYPE(None, c_int, c_char_p, c_void_p)
NO_ABORT_CALLBACK = ctypes.cast(0, ABORT_CALLBACK)  # NULL: clears the callback
NO_LOG_CALLBACK = ctypes.cast(0, LOG_CALLBACK)  # NULL: disables the sink

vp = c_void_p  # handles and struct pointers travel as void *

# name: (restype, argtypes). Optional names are additions newer than the
# transcribe.cpp 0.2.1 surface; the package works without them.
_Table = Dict[str, Tuple[Any, List[Any]]]
_PROTOTYPES: _Table = {
    "transcribe_status_string": (c_char_p, [c_int]),
    "transcribe_version": (c_char_p, []),
    "transcribe_version_commit": (c_char_p, []),
    "transcribe_abi_struct_size": (c_size_t, [c_int]),
    "transcribe_abi_struct_align": (c_size_t, [c_int]),
    "transcribe_log_set": (None, [LOG_CALLBACK, vp]),
    "transcribe_model_accepts_ext_kind": (c_bool, [vp, c_int, c_uint32]),
    "transcribe_backend_available": (c_bool, [c_int]),
    "transcribe_device_count": (c_int, []),
    "transcribe_device_get": (vp, [c_int]),
    "transcribe_device_info_init": (None, [vp]),
    "transcribe_device_get_info": (c_int, [vp, vp]),
    "transcribe_model_device": (vp, [vp]),
    "transcribe_model_load_params_init": (None, [vp]),
    "transcribe_session_params_init": (None, [vp]),
    "transcribe_run_params_init": (None, [vp]),
    "transcribe_stream_params_init": (None, [vp]),
    "transcribe_capabilities_init": (None, [vp]),
    "transcribe_model_get_capabilities": (c_int, [vp, vp]),
    "transcribe_model_supports": (c_bool, [vp, c_int]),
    "transcribe_model_arch_string": (c_char_p, [vp]),
    "transcribe_model_variant_string": (c_char_p, [vp]),
    "transcribe_model_backend": (c_char_p, [vp]),
    "transcribe_model_meta_val_str": (c_char_p, [vp, c_char_p]),
    "transcribe_model_load_file": (c_int, [c_char_p, vp, POINTER(vp)]),
    "transcribe_model_free": (None, [vp]),
    "transcribe_session_init": (c_int, [vp, vp, POINTER(vp)]),
    "transcribe_session_free": (None, [vp]),
    "transcribe_run": (c_int, [vp, vp, c_int, vp]),
    "transcribe_run_batch": (c_int, [vp, vp, vp, c_int, vp]),
    "transcribe_set_abort_callback": (None, [vp, ABORT_CALLBACK, vp]),
    "transcribe_was_aborted": (c_bool, [vp]),
    "transcribe_was_truncated": (c_bool, [vp]),
    "transcribe_session_limits_init": (None, [vp]),
    "transcribe_session_get_limits": (c_int, [vp, vp]),
    "transcribe_stream_update_init": (None, [vp]),
    "transcribe_stream_text_init": (None, [vp]),
    "transcribe_stream_get_text": (c_int, [vp, vp]),
    "transcribe_stream_begin": (c_int, [vp, vp, vp]),
    "transcribe_stream_feed": (c_int, [vp, vp, c_int, vp]),
    "transcribe_stream_finalize": (c_int, [vp, vp]),
    "transcribe_stream_reset": (None, [vp]),
    "transcribe_stream_get_state": (c_int, [vp]),
    "transcribe_stream_last_status": (c_int, [vp]),
    "transcribe_timings_init": (None, [vp]),
    "transcribe_get_timings": (c_int, [vp, vp]),
    "transcribe_full_text": (c_char_p, [vp]),
    "transcribe_raw_text": (c_char_p, [vp]),
    "transcribe_returned_timestamp_kind": (c_int, [vp]),
    "transcribe_n_segments": (c_int, [vp]),
    "transcribe_n_words": (c_int, [vp]),
    "transcribe_n_tokens": (c_int, [vp]),
    "transcribe_detected_language": (c_char_p, [vp]),
    "transcribe_segment_init": (None, [vp]),
    "transcribe_word_init": (None, [vp]),
    "transcribe_token_init": (None, [vp]),
    "transcribe_get_segment": (c_int, [vp, c_int, vp]),
    "transcribe_get_word": (c_int, [vp, c_int, vp]),
    "transcribe_get_token": (c_int, [vp, c_int, vp]),
    "transcribe_speaker_segment_init": (None, [vp]),
    "transcribe_n_speaker_segments": (c_int, [vp]),
    "transcribe_get_speaker_segment": (c_int, [vp, c_int, vp]),
    "transcribe_batch_n_results": (c_int, [vp]),
    "transcribe_batch_status": (c_int, [vp, c_int]),
    "transcribe_batch_full_text": (c_char_p, [vp, c_int]),
    "transcribe_batch_raw_text": (c_char_p, [vp, c_int]),
    "transcribe_batch_returned_timestamp_kind": (c_int, [vp, c_int]),
    "transcribe_batch_detected_language": (c_char_p, [vp, c_int]),
    "transcribe_batch_n_segments": (c_int, [vp, c_int]),
    "transcribe_batch_n_words": (c_int, [vp, c_int]),
    "transcribe_batch_n_tokens": (c_int, [vp, c_int]),
    "transcribe_batch_get_segment": (c_int, [vp, c_int, c_int, vp]),
    "transcribe_batch_get_word": (c_int, [vp, c_int, c_int, vp]),
    "transcribe_batch_get_token": (c_int, [vp, c_int, c_int, vp]),
    "transcribe_batch_n_speaker_segments": (c_int, [vp, c_int]),
    "transcribe_batch_get_speaker_segment": (c_int, [vp, c_int, c_int, vp]),
    "transcribe_batch_get_timings": (c_int, [vp, c_int, vp]),
}
_OPTIONAL: _Table = {
    "transcribe_audio_load_file": (c_int, [c_char_p, c_int, POINTER(vp), POINTER(c_int)]),
    "transcribe_audio_free": (None, [vp]),
    "transcribe_session_last_error": (c_char_p, [vp]),
    "transcribe_model_last_error": (c_char_p, [vp]),
    "transcribe_pause_split_params_init": (None, [vp]),
    "transcribe_pause_split": (c_int, [vp, c_int64, c_int, vp, POINTER(vp), POINTER(c_int)]),
    "transcribe_pause_split_free": (None, [vp]),
    # audio tags (SenseVoice's emotion and audio event)
    "transcribe_detected_emotion": (c_char_p, [vp]),
    "transcribe_detected_audio_event": (c_char_p, [vp]),
    "transcribe_batch_error": (c_char_p, [vp, c_int]),
    "transcribe_batch_detected_emotion": (c_char_p, [vp, c_int]),
    "transcribe_batch_detected_audio_event": (c_char_p, [vp, c_int]),
    # long audio split by the library (run params chunking)
    "transcribe_piece_init": (None, [vp]),
    "transcribe_was_chunked": (c_bool, [vp]),
    "transcribe_n_pieces": (c_int, [vp]),
    "transcribe_get_piece": (c_int, [vp, c_int, vp]),
    "transcribe_batch_was_chunked": (c_bool, [vp, c_int]),
    "transcribe_batch_n_pieces": (c_int, [vp, c_int]),
    "transcribe_batch_get_piece": (c_int, [vp, c_int, c_int, vp]),
    # output formats: txt / json / srt / vtt rendered by the library
    "transcribe_format_params_init": (None, [vp]),
    "transcribe_format_result": (c_int, [vp, c_int, vp, POINTER(vp), POINTER(c_size_t)]),
    "transcribe_format_free": (None, [vp]),
    # the WAV header parser (the input rule of the CLI and the server)
    "transcribe_wav_info_init": (None, [vp]),
    "transcribe_wav_read_header": (c_int, [vp, c_size_t, c_bool, vp, POINTER(c_size_t)]),
    # voice activity detection (Silero VAD)
    "transcribe_vad_params_init": (None, [vp]),
    "transcribe_vad_model_load": (c_int, [c_char_p, POINTER(vp)]),
    "transcribe_vad_model_free": (None, [vp]),
    "transcribe_vad_init": (c_int, [vp, c_int, vp, POINTER(vp)]),
    "transcribe_vad_free": (None, [vp]),
    "transcribe_vad_run": (c_int, [vp, vp, c_int64]),
    "transcribe_vad_n_segments": (c_int, [vp]),
    "transcribe_vad_get_segment": (c_int, [vp, c_int, vp]),
}

T = TypeVar("T", bound=ctypes.Structure)


def text(raw: Optional[bytes]) -> str:
    """A C string from the library as str ("" for NULL)."""
    return raw.decode("utf-8", errors="replace") if raw else ""


def _candidates() -> List[str]:
    out: List[str] = []
    env = os.environ.get("TRANSCRIBE_LIBRARY")
    if env:
        p = Path(env)
        if p.is_dir():
            out += [str(p / n) for n in _LIB_NAMES]
        else:
            out.append(env)
        return out  # an explicit choice is not second-guessed
    if _paths.RECORDED_LIBRARY:
        p = Path(_paths.RECORDED_LIBRARY)
        out += [str(p / n) for n in _LIB_NAMES] if p.is_dir() else [str(p)]
    here = _paths.HERE
    for d in (here, here.parent):
        out += [str(d / n) for n in _LIB_NAMES]
    build_lib = _paths.checkout_build_lib()
    if build_lib is not None:
        out += [str(build_lib / n) for n in _LIB_NAMES[:2]]
    found = ctypes.util.find_library("transcribe")
    if found:
        out.append(found)
    out += list(_LIB_NAMES[:2])  # the dynamic loader's own search path
    for d in (Path(sys.prefix) / "lib", Path("/usr/local/lib"), Path("/usr/local/lib64")):
        out += [str(d / n) for n in _LIB_NAMES[:2]]
    return out


class Lib:
    """The loaded library: its functions as attributes, ABI sizes, helpers."""

    def __init__(self, dll: ctypes.CDLL, path: str) -> None:
        self.dll = dll
        self.path = path
        for table, required in ((_PROTOTYPES, True), (_OPTIONAL, False)):
            for name, (restype, argtypes) in table.items():
                try:
                    fn = getattr(dll, name)
                except AttributeError:
                    if required:
                        raise LibraryNotFoundError(
                            f"{path} lacks {name}: not a libtranscribe of the 0.2.1 API"
                        ) from None
                    setattr(self, name[len("transcribe_") :], None)
                    continue
                fn.restype = restype
                fn.argtypes = argtypes
                setattr(self, name[len("transcribe_") :], fn)
        self._abi_size = {w: int(self.abi_struct_size(w)) for w in S.ABI_MIRRORS}

    if TYPE_CHECKING:
        # the C functions, set in __init__ under their names without the
        # "transcribe_" prefix (None for a missing optional one)
        def __getattr__(self, name: str) -> Any: ...

    # ---- struct buffers ----

    def abi_size(self, cls: Type[ctypes.Structure]) -> int:
        """The library's sizeof for mirror cls (0: the library cannot tell)."""
        which = S.ABI_IDS.get(cls)
        return self._abi_size.get(which, 0) if which is not None else 0

    def covers(self, cls: Type[ctypes.Structure], field: str) -> bool:
        """Whether the loaded library's struct cls has (reads) field."""
        if not hasattr(cls, field):
            return False
        return self.abi_size(cls) >= S.field_end(cls, field)

    def new(self, cls: Type[T], init: Any = None) -> T:
        """A zeroed cls in a buffer as large as the library's struct, filled
        by its init function (which writes the library's sizeof)."""
        lib_size = self.abi_size(cls)
        # a struct the library cannot size gets slack for fields a newer
        # library's init may write past the mirror
        size = max(ctypes.sizeof(cls), lib_size) if lib_size else ctypes.sizeof(cls) + 64
        buf = (ctypes.c_ubyte * size)()
        obj = cls.from_buffer(buf)
        if init is not None:
            init(ctypes.byref(obj))
        return obj

    def status_text(self, status: int) -> str:
        return text(self.status_string(int(status)))


_lock = threading.Lock()
_lib: Optional[Lib] = None


def get() -> Lib:
    """The library, loaded on first use."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            tried = []
            for cand in _candidates():
                if os.sep in cand and not os.path.exists(cand):
                    continue
                try:
                    dll = ctypes.CDLL(cand)
                except OSError as e:
                    tried.append(f"{cand}: {e}")
                    continue
                lib = Lib(dll, cand)
                _install_log_sink(lib)
                _lib = lib
                break
            if _lib is None:
                raise LibraryNotFoundError(
                    "libtranscribe.so not found: set TRANSCRIBE_LIBRARY to its path, or "
                    "install the library (cmake --install)"
                    + ("; tried " + "; ".join(tried) if tried else "")
                )
    return _lib


# ---- the log sink ----
#
# The library has one process-wide log sink. The package routes it to the
# Python logger "transcribe" (configure it with the logging module; without
# configuration warnings and errors reach stderr) and keeps the first error
# message of the call in progress on this thread, for the exception text of
# failures whose handle cannot carry it (a failed model load). Errors so
# captured are logged at DEBUG: the exception says them.

_LOG_LEVELS = {
    S.LOG_LEVEL_INFO: logging.INFO,
    S.LOG_LEVEL_WARN: logging.WARNING,
    S.LOG_LEVEL_ERROR: logging.ERROR,
    S.LOG_LEVEL_DEBUG: logging.DEBUG,
    S.LOG_LEVEL_CONT: logging.DEBUG,
}
_capture = threading.local()


def _on_log(level: int, msg: Optional[bytes], _ud: Optional[int]) -> None:
    # Runs on whatever thread logs, library worker threads included; ctypes
    # takes the GIL for it. It must never raise into C.
    try:
        message = text(msg)
        rename = getattr(_capture, "rename", None)
        if rename:
            message = message.replace(*rename)
        py_level = _LOG_LEVELS.get(level, logging.INFO)
        if level == S.LOG_LEVEL_ERROR and getattr(_capture, "active", False):
            if not _capture.first:
                _capture.first = message
            # The exception of the failed load carries it: logged as an
            # error too, it would reach stderr twice.
            py_level = logging.DEBUG
        logger.log(py_level, "%s", message)
    except BaseException:  # noqa: BLE001 - nothing may unwind into C
        pass


_log_cb = LOG_CALLBACK(_on_log)  # kept alive for the life of the process


def _install_log_sink(lib: Lib) -> None:
    lib.log_set(_log_cb, None)

    def _detach() -> None:
        # No Python callback after the interpreter starts tearing down.
        try:
            lib.log_set(NO_LOG_CALLBACK, None)
        except Exception:  # noqa: BLE001
            pass

    atexit.register(_detach)


def reason(msg: str) -> str:
    """A library message without the C entry point that logged it
    ("transcribe_run: language 'xx' ..." -> "language 'xx' ..."), as the
    CLI shows it (tools/common/reason.h)."""
    m = re.match(r"transcribe_[a-z_]+: (.+)", msg, re.S)
    return m.group(1) if m else msg


class capture_errors:
    """Context manager: collects the first ERROR message logged on this thread."""

    def __enter__(self) -> "capture_errors":
        self._outer = (getattr(_capture, "active", False), getattr(_capture, "first", ""))
        _capture.active = True
        _capture.first = ""
        return self

    @property
    def message(self) -> str:
        if hasattr(self, "first"):
            return str(self.first)
        return str(getattr(_capture, "first", ""))

    def __exit__(self, *exc: Any) -> None:
        self.first = _capture.first
        _capture.active, _capture.first = self._outer


class renamed_in_log:
    """Context manager: library messages logged on this thread say ``new``
    where they say ``old`` (a temporary file the caller never named)."""

    def __init__(self, old: str, new: str) -> None:
        self._pair = (old, new)

    def __enter__(self) -> "renamed_in_log":
        self._outer = getattr(_capture, "rename", None)
        _capture.rename = self._pair
        return self

    def __exit__(self, *exc: Any) -> None:
        _capture.rename = self._outer


__all__ = [
    "ABORT_CALLBACK",
    "Lib",
    "capture_errors",
    "get",
    "reason",
    "renamed_in_log",
    "text",
    "c_float",
    "c_uint64",
]
