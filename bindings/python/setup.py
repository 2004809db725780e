"""Build hook beside pyproject.toml (which holds the metadata): the installed
package records where it was built from, so that it finds libtranscribe and
the bundled models of that checkout without environment variables.

``pip install bindings/python`` writes ``transcribe/_origin.py`` into the
wheel with the checkout's root (the folder holding ``include/transcribe.h``)
and, when ``TRANSCRIBE_LIBRARY`` is set during the install, that library's
absolute path (a build folder other than ``build/``, or a ``cmake --install``
prefix). The source tree itself has no ``_origin.py``: run from it, the
package finds the checkout from its own location (``_paths.py``).

setuptools' scratch folders (build/, the bdist tree) go to a temporary
folder, not into the checkout."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _origin() -> str:
    root = HERE.parent.parent
    checkout = str(root) if (root / "include" / "transcribe.h").is_file() else None
    library = os.environ.get("TRANSCRIBE_LIBRARY") or None
    if library:
        library = os.path.abspath(library)
    return (
        '"""Written by setup.py at build time: where this package was built from."""\n'
        f"CHECKOUT = {checkout!r}\n"
        f"LIBRARY = {library!r}\n"
    )


class BuildPyWithOrigin(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "transcribe" / "_origin.py"
        target.write_text(_origin(), encoding="utf-8")


_scratch = tempfile.mkdtemp(prefix="transcribe-build-")
atexit.register(shutil.rmtree, _scratch, True)

setup(
    cmdclass={"build_py": BuildPyWithOrigin},
    options={"build": {"build_base": _scratch}, "egg_info": {"egg_base": _scratch}},
)
