"""Arguments that cross into C: ctypes truncates an integer to the C type
without a word (threads=2**40 became 0, rate=2**40 became 16 kHz) and a
path ends at its first NUL, so both are checked before the call."""

from __future__ import annotations

import os
from typing import Any, Union

from ._errors import InvalidArgumentError

INT_MAX = 2**31 - 1


def c_int(name: str, value: Any, lo: int = 0, hi: int = INT_MAX) -> int:
    """value as a C int in lo..hi, else InvalidArgumentError naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidArgumentError(f"{name} must be an integer in {lo}..{hi} (got {value!r})")
    return value


def c_path(path: Union[str, bytes, "os.PathLike[Any]"]) -> bytes:
    """The path's bytes for C; a NUL inside would silently cut it."""
    b = os.fsencode(path)
    if b"\0" in b:
        raise InvalidArgumentError(f"the path {os.fsdecode(b)!r} holds a NUL character")
    return b
