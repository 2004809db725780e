"""Where the package looks for libtranscribe and the bundled models.

An installed package records the checkout it was built from (and the
library named by ``TRANSCRIBE_LIBRARY`` during the install) in the generated
``_origin.py`` (setup.py writes it into the wheel). Run from the source tree,
which has no ``_origin.py``, the checkout is the folder three levels above
this file. With that:

* the library: ``$TRANSCRIBE_LIBRARY``; the recorded library; next to the
  package; ``<checkout>/build/lib`` (the quickstart's build folder); the
  system's search path, ``<sys.prefix>/lib``, ``/usr/local/lib``;
* the bundled models (the Silero VAD model, the default ASR model of
  ``python -m transcribe``): next to the package; ``<checkout>/models``;
  ``share/transcribe`` of the prefix the loaded library sits in
  (``cmake --install``), of ``sys.prefix``, ``/usr/local`` and ``/usr``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

HERE = Path(__file__).resolve().parent

try:  # generated at install time; absent in the source tree
    from . import _origin  # type: ignore[attr-defined]

    _CHECKOUT: Optional[str] = _origin.CHECKOUT
    RECORDED_LIBRARY: Optional[str] = _origin.LIBRARY
except ImportError:
    _tree = HERE.parent.parent.parent  # <checkout>/bindings/python/transcribe
    _CHECKOUT = str(_tree) if (_tree / "include" / "transcribe.h").is_file() else None
    RECORDED_LIBRARY = None


def checkout() -> Optional[Path]:
    """The source checkout this package was built from (or sits in)."""
    return Path(_CHECKOUT) if _CHECKOUT else None


def checkout_build_lib() -> Optional[Path]:
    root = checkout()
    return root / "build" / "lib" if root else None


def loaded_library_dir(name: str) -> Optional[Path]:
    """The folder of the loaded shared object whose file name starts with
    name (found in /proc/self/maps: a library loaded by the system loader
    under its bare name has no path of its own)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.split(None, 5)[-1].strip() if line.count(" ") >= 5 else ""
                if path.startswith("/") and Path(path).name.startswith(name):
                    return Path(path).parent
    except OSError:
        pass
    return None


def data_dirs(library_path: Optional[str]) -> List[Path]:
    """Folders that may hold the bundled models, first match wins."""
    out: List[Path] = [HERE]
    root = checkout()
    if root:
        out.append(root / "models")
    libdir = Path(library_path).resolve().parent if library_path and "/" in library_path else None
    if libdir is None and library_path:
        libdir = loaded_library_dir("libtranscribe.")
    if libdir is not None:
        out.append(libdir.parent / "share" / "transcribe")
    out += [
        Path(sys.prefix) / "share" / "transcribe",
        Path("/usr/local/share/transcribe"),
        Path("/usr/share/transcribe"),
    ]
    return out
