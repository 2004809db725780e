"""Voice activity detection (Silero VAD v4, where the library has it)."""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _lib, _paths
from . import _structs as S
from ._audio import AudioInput, to_pcm
from ._check import INT_MAX, c_int, c_path
from ._errors import InvalidArgumentError, UnsupportedError, error_for
from ._lifetime import Lease, SharedHandle

VAD_FILE = "silero-vad-v4.gguf"
_OPTIONS = {
    "threshold": float,
    "neg_threshold": float,
    "min_speech_ms": int,
    "min_silence_ms": int,
    "speech_pad_ms": int,
    "max_speech_s": float,
    "window_samples": int,
}


def default_vad_path() -> Optional[str]:
    """$TRANSCRIBE_VAD_MODEL, else the bundled model: next to the package,
    in models/ of the checkout the package was installed from (or sits in),
    or in share/transcribe of the library's prefix (cmake --install),
    sys.prefix, /usr/local or /usr (``_paths.data_dirs``)."""
    env = os.environ.get("TRANSCRIBE_VAD_MODEL")
    if env:
        return env
    for d in _paths.data_dirs(_library_path()):
        if (d / VAD_FILE).is_file():
            return str(d / VAD_FILE)
    return None


def _library_path() -> Optional[str]:
    try:
        return _lib.get().path
    except Exception:  # noqa: BLE001 - no library: the fixed folders still count
        return None


def _need(lib: "_lib.Lib") -> None:
    if lib.vad_model_load is None:
        raise UnsupportedError("this libtranscribe has no voice activity detection (transcribe_vad_*)")


def vad_params(lib: "_lib.Lib", options: Optional[Mapping[str, Any]]) -> S.VadParams:
    """transcribe_vad_params from defaults and the given options."""
    p = lib.new(S.VadParams, lib.vad_params_init)
    for name, value in (options or {}).items():
        if name not in _OPTIONS:
            raise InvalidArgumentError(f"unknown VAD option {name!r} (known: {', '.join(_OPTIONS)})")
        kind = _OPTIONS[name]
        setattr(p, name, c_int(name, value, -INT_MAX) if kind is int else kind(value))
    return p


class VadModel:
    """A Silero VAD model: ``VadModel(path=None)`` (None: the bundled
    ``silero-vad-v4.gguf``). Pass it as ``Model.transcribe(..., vad=...)``
    or find speech with :meth:`speech`. Thread-safe once loaded; close()
    never pulls the model from under a call in progress (the model is freed
    when the last run using it ends)."""

    def __init__(self, path: Union[str, "os.PathLike[str]", None] = None) -> None:
        lib = _lib.get()
        _need(lib)
        found = os.fspath(path) if path is not None else default_vad_path()
        if found is None:
            raise InvalidArgumentError(
                f"no VAD model: pass a path or set TRANSCRIBE_VAD_MODEL ({VAD_FILE})"
            )
        self.path = found
        self._lib = lib
        self._shared = SharedHandle("VAD model", lib.vad_model_free)
        self._finalizer = weakref.finalize(self, self._shared.close)
        out = ctypes.c_void_p()
        with _lib.capture_errors() as cap:
            st = lib.vad_model_load(c_path(found), ctypes.byref(out))
        if st != 0:
            raise error_for(st, f"cannot load VAD model '{found}': {cap.message or lib.status_text(st)}",
                            model=True)
        self._shared.set(int(out.value or 0))

    @property
    def handle(self) -> int:
        """The C handle (valid while the VadModel is open; a call that uses
        it from another thread should hold a lease())."""
        if not self._shared.alive:
            raise InvalidArgumentError("the VAD model is closed")
        return int(self._shared._handle or 0)

    def lease(self) -> Lease:
        """A use of the C handle that a close() on another thread waits out
        (the handle is freed when the last lease is released)."""
        return self._shared.lease()

    def speech(self, audio: AudioInput, rate: int = 16000, **options: Any) -> List[Tuple[int, int]]:
        """Speech regions of audio as (start_ms, end_ms). ``audio`` as for
        transcribe (PCM at ``rate``, 16000 or 8000); options as ``vad_options``."""
        lib = self._lib
        params = vad_params(lib, options)
        with self.lease() as held:
            return self._speech(held.handle, audio, rate, params)

    def _speech(
        self, handle: int, audio: AudioInput, rate: int, params: S.VadParams
    ) -> List[Tuple[int, int]]:
        lib = self._lib
        det = ctypes.c_void_p()
        with _lib.capture_errors() as cap:
            st = lib.vad_init(handle, c_int("rate", rate), ctypes.byref(params), ctypes.byref(det))
        if st != 0:  # the library's reason (which option, which range), as transcribe(vad=...)
            why = _lib.reason(cap.message) or lib.status_text(st)
            raise error_for(st, f"cannot start the VAD: {why}")
        try:
            with to_pcm(lib, audio, rate) as pcm:
                st = lib.vad_run(det, pcm.address, pcm.n)
            if st != 0:
                raise error_for(st, f"VAD run failed: {lib.status_text(st)}")
            out = []
            for i in range(lib.vad_n_segments(det)):
                seg = S.VadSegment()
                if lib.vad_get_segment(det, i, ctypes.byref(seg)) == 0:
                    out.append((int(seg.t0_ms), int(seg.t1_ms)))
            return out
        finally:
            lib.vad_free(det)

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> "VadModel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_cache_lock = threading.Lock()
_cache: Dict[str, VadModel] = {}


def resolve(vad: Any) -> VadModel:
    """The VadModel for transcribe(vad=...): a VadModel, True (the bundled
    model) or a path; loaded paths are kept for the life of the process."""
    if isinstance(vad, VadModel):
        return vad
    path = default_vad_path() if vad is True else os.fspath(vad)
    if path is None:
        raise InvalidArgumentError(f"vad=True needs {VAD_FILE}: pass a path or set TRANSCRIBE_VAD_MODEL")
    with _cache_lock:
        if path not in _cache:
            _cache[path] = VadModel(path)
        return _cache[path]
