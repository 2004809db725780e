"""Audio input: file paths, encoded file bytes, and float32 PCM buffers."""

from __future__ import annotations

import array
import ctypes
import os
import tempfile
from typing import Any, Callable, List, Optional, Union

from . import _lib, _structs
from ._check import c_int, c_path
from ._errors import InvalidArgumentError, error_for

# What transcribe() accepts: a path, the bytes of an audio file, or mono
# float32 PCM at the model's rate (NumPy array, array('f'), memoryview, or
# any object exporting a 1-D float buffer).
AudioInput = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, array.array, Any]

_INT_MAX = 2**31 - 1


class Pcm:
    """Samples ready for the library: an address, a count, and who owns them."""

    def __init__(self, address: int, n: int, keep: Any = None, free: Optional[Callable[[], None]] = None):
        self.address = address
        self.n = n
        self._keep = keep
        self._free = free

    def close(self) -> None:
        if self._free is not None:
            free, self._free = self._free, None
            free()
        self._keep = None

    def __enter__(self) -> "Pcm":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# The reason the C CLI and the server give (tools/common/wav_cut.h).
WAV_CUT_SHORT = "the WAV file is cut short (its data chunk runs past the end)"


def _wav_cut_short(lib: "_lib.Lib", path: str) -> bool:
    """True for a RIFF/RF64 WAV whose data chunk says it runs past the end
    of the file: the CLI and the server refuse such a file instead of
    transcribing the part that is there, and so does the package (one input
    rule). The header is read by the library's parser, as many bytes as it
    asks for; anything it refuses, or a length the writer left open, is left
    to the decoder."""
    if lib.wav_read_header is None or lib.wav_info_init is None:
        return False
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            buf = f.read(12)
            if buf[:4] not in (b"RIFF", b"RF64"):
                return False
            need = ctypes.c_size_t(12)
            while True:
                info = lib.new(_structs.WavInfo, lib.wav_info_init)
                st = lib.wav_read_header(buf, len(buf), False, ctypes.byref(info), ctypes.byref(need))
                if st != 0:
                    return False
                if need.value == 0:
                    return info.data_bytes >= 0 and info.data_offset + info.data_bytes > size
                if need.value > size or need.value <= len(buf):
                    return False
                more = f.read(need.value - len(buf))
                if len(more) != need.value - len(buf):
                    return False
                buf += more
    except (OSError, ValueError):  # unreadable, or a NUL in the path: the loader says why
        return False


def _load_file(lib: "_lib.Lib", path: str, rate: int, label: Optional[str] = None) -> Pcm:
    """label: what the messages call the input (default: its path)."""
    name = label if label is not None else f"'{path}'"
    if lib.audio_load_file is None:
        raise InvalidArgumentError("this libtranscribe cannot decode audio files; pass PCM samples")
    if os.path.isdir(path):
        raise InvalidArgumentError(f"cannot read audio {name}: it is a directory")
    if _wav_cut_short(lib, path):
        raise InvalidArgumentError(f"cannot read audio {name}: {WAV_CUT_SHORT}")
    out = ctypes.c_void_p()
    n = ctypes.c_int()
    with _lib.capture_errors() as cap:
        st = lib.audio_load_file(c_path(path), c_int("rate", rate), ctypes.byref(out), ctypes.byref(n))
    if st != 0:
        reason = cap.message or lib.status_text(st)
        raise error_for(st, f"cannot read audio {name}: {reason}")
    addr = out.value or 0
    if n.value <= 0:
        lib.audio_free(out)
        raise InvalidArgumentError(f"cannot read audio {name}: no samples")

    def free() -> None:
        lib.audio_free(ctypes.c_void_p(addr))

    return Pcm(addr, n.value, free=free)


def _load_bytes(lib: "_lib.Lib", data: Union[bytes, bytearray, memoryview], rate: int) -> Pcm:
    if len(data) == 0:
        raise InvalidArgumentError("cannot read audio: the data is empty (0 bytes)")
    fd, tmp = tempfile.mkstemp(prefix="transcribe-", suffix=".audio")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        # the temporary file is ours, not the caller's: messages name the bytes
        label = f"from {len(data)} bytes"
        with _lib.renamed_in_log(tmp, label):
            return _load_file(lib, tmp, rate, label=label)
    finally:
        os.unlink(tmp)


def _from_buffer(audio: Any) -> Pcm:
    try:
        mv = memoryview(audio)
    except TypeError:
        raise TypeError(
            "audio must be a path, the bytes of an audio file, or float32 PCM "
            f"(NumPy array, array('f'), memoryview); got {type(audio).__name__}"
        ) from None
    fmt = mv.format.lstrip("@=<")
    if fmt not in ("f", "d"):
        raise InvalidArgumentError(
            f"PCM audio must be float32 (or float64) samples in [-1, 1]; got format '{mv.format}'"
        )
    shape = tuple(mv.shape or ())
    if mv.ndim != 1 and not (mv.ndim == 2 and 1 in shape):
        raise InvalidArgumentError(f"audio must be mono (one dimension); got shape {shape}")
    if mv.ndim != 1 or not mv.c_contiguous or mv.format != fmt:
        mv = memoryview(mv.tobytes()).cast(fmt)  # C order, native single-letter format
    if fmt == "d":  # float64 (NumPy's default dtype): converted
        mv = memoryview(array.array("f", mv.tolist()))
    n = mv.nbytes // 4
    if n == 0:
        raise InvalidArgumentError("audio has no samples")
    if n > _INT_MAX:
        raise InvalidArgumentError(f"audio has {n} samples; at most {_INT_MAX} per call")
    if mv.readonly:
        arr = (ctypes.c_float * n).from_buffer_copy(mv)
    else:
        arr = (ctypes.c_float * n).from_buffer(mv)
    return Pcm(ctypes.addressof(arr), n, keep=(arr, mv))


def to_pcm(lib: "_lib.Lib", audio: AudioInput, rate: int) -> Pcm:
    """Samples for one input (close the result, or use it as a context manager)."""
    if isinstance(audio, (str, os.PathLike)):
        return _load_file(lib, os.fspath(audio), rate)
    if isinstance(audio, (bytes, bytearray)):
        return _load_bytes(lib, audio, rate)
    if isinstance(audio, memoryview) and audio.format in ("B", "b", "c"):
        return _load_bytes(lib, audio, rate)
    return _from_buffer(audio)


def load_audio(path: Union[str, "os.PathLike[str]", bytes], rate: int = 16000) -> Any:
    """Decodes an audio file (WAV; FLAC/MP3/Ogg/Opus when the library has
    libsndfile) to mono float32 samples at ``rate`` Hz.

    Returns a NumPy array when NumPy is installed, else an ``array('f')``.
    ``path`` may also be the bytes of an audio file.
    """
    c_int("rate", rate, 1)
    lib = _lib.get()
    with to_pcm(lib, path, rate) as pcm:
        data = ctypes.string_at(pcm.address, pcm.n * 4)
    try:
        import numpy as np
    except ImportError:
        out = array.array("f")
        out.frombytes(data)
        return out
    return np.frombuffer(data, dtype=np.float32).copy()


__all__: List[str] = ["AudioInput", "Pcm", "load_audio", "to_pcm"]
