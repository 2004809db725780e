"""Models by name: ``Model("parakeet-tdt-0.6b-v3")``.

A name that is not a file is handed to the ``transcribe-download`` program,
which looks it up in the project's model catalogue, fetches it into the
model cache when it is not there yet (resumable, checked against the size
and the sha256 the hub sends) and prints its path. The package does not read
the catalogue or talk to the network itself: one implementation of the
catalogue, the cache folder (``TRANSCRIBE_MODEL_DIR``, else
``$XDG_CACHE_HOME/transcribe``), the mirror setting
(``TRANSCRIBE_MODEL_BASE_URL``), resuming and verification serves the CLI,
the C tool and Python alike, and a cached model is found offline (the tool
answers from the cache without a request).

The tool is found as ``$TRANSCRIBE_DOWNLOAD``, beside the loaded library
(``<prefix>/bin`` of ``<prefix>/lib``), in the checkout's ``build/bin``, or
on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

from . import _paths
from ._errors import ModelNotFoundError

TOOL = "transcribe-download"


def _missing(msg: str) -> ModelNotFoundError:
    return ModelNotFoundError(msg, 3, "ERR_FILE_NOT_FOUND")


def _tool(library_path: Optional[str]) -> Optional[str]:
    env = os.environ.get("TRANSCRIBE_DOWNLOAD")
    if env:
        return env
    cands: List[Path] = []
    if library_path and os.sep in library_path:
        lib_dir = Path(library_path).resolve().parent
        cands += [lib_dir.parent / "bin" / TOOL, lib_dir / TOOL]
    root = _paths.checkout()
    if root is not None:
        cands.append(root / "build" / "bin" / TOOL)
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which(TOOL)


def looks_like_name(ref: str) -> bool:
    """A model reference that is not an existing file and has no folder in
    it (the CLI's rule for -m)."""
    return not os.path.exists(ref) and "/" not in ref and os.sep not in ref


def resolve(ref: str, library_path: Optional[str]) -> str:
    """The file a model reference names: ref itself when it is a path,
    else the cached (if need be, downloaded) file of a catalogue name."""
    if not looks_like_name(ref):
        return ref
    file_like = ref.lower().endswith((".gguf", ".bin"))
    tool = _tool(library_path)
    if tool is None:
        if file_like:
            return ref  # the library says the file is missing
        raise _missing(
            f"'{ref}' is not a file, and models by name need the {TOOL} program "
            "(built with libcurl: apt-get install libcurl4-openssl-dev; or set TRANSCRIBE_DOWNLOAD)"
        )
    # a terminal sees the tool's progress bar and notes; otherwise they are
    # kept for the error message
    tty = sys.stderr is not None and hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    try:
        done = subprocess.run(
            [tool, ref],
            stdout=subprocess.PIPE,
            stderr=None if tty else subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except OSError as e:
        raise _missing(f"cannot run {tool}: {e}") from None
    out = done.stdout.decode("utf-8", errors="replace").strip().splitlines()
    if done.returncode == 0 and out and os.path.isfile(out[-1]):
        return out[-1]
    err = (done.stderr or b"").decode("utf-8", errors="replace").strip()
    if file_like and "no model named" in err:
        return ref  # not a catalogue name either: the library says the file is missing
    lines = [ln for ln in err.splitlines() if ln.strip()]
    why = lines[-1] if lines else "see the message above"
    if why.startswith(TOOL + ": error: "):
        why = why[len(TOOL + ": error: ") :]
    raise _missing(f"cannot get model '{ref}': {why}")
