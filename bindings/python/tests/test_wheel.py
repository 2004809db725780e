"""The wheel built from bindings/python (offline, Debian's setuptools)
installs into a fresh venv and runs the README example. ctest: test_python_wheel."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

import transcribe
from conftest import BINDINGS, ROOT, need

pytestmark = pytest.mark.wheel


def readme_example() -> str:
    text = (BINDINGS / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README.md has no python example"
    return blocks[0]


def run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{cmd}:\n{p.stdout}\n{p.stderr}"
    return p


def test_readme_example_is_five_lines():
    lines = [ln for ln in readme_example().splitlines() if ln.strip()]
    assert len(lines) <= 5, lines


def test_wheel_installs_into_a_venv_and_runs_the_readme_example(lib, tmp_path):
    for mod in ("pip", "venv", "setuptools", "wheel"):
        if subprocess.run([sys.executable, "-c", f"import {mod}"], capture_output=True).returncode:
            pytest.skip(f"python3 module {mod} is missing (scripts/deps --test installs it)")
    src = tmp_path / "src"
    shutil.copytree(BINDINGS, src, ignore=shutil.ignore_patterns(
        "tests", "__pycache__", "build", "dist", "*.egg-info"))
    dist = tmp_path / "dist"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONDONTWRITEBYTECODE="1")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", dist, src], env=env)
    wheels = list(dist.glob("transcribe-*.whl"))
    assert len(wheels) == 1 and wheels[0].name.endswith("-py3-none-any.whl"), wheels
    names = zipfile.ZipFile(wheels[0]).namelist()
    for f in ("transcribe/__init__.py", "transcribe/__main__.py", "transcribe/py.typed"):
        assert f in names, f

    venv = tmp_path / "venv"
    # --without-pip: the venv runs the system's pip (visible through
    # --system-site-packages) instead of copying one in, 15 s saved
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], env=env)
    py = venv / "bin" / "python"
    run([py, "-m", "pip", "install", "--no-deps", "--no-index", wheels[0]], env=env)
    p = run([py, "-m", "pip", "show", "-f", "transcribe"], env=env)
    assert str(venv) in p.stdout and "py.typed" in p.stdout

    example = tmp_path / "example.py"
    example.write_text("import transcribe\nprint('package:', transcribe.__file__)\n"
                       + readme_example(), encoding="utf-8")
    env["TRANSCRIBE_LIBRARY"] = os.path.abspath(lib.path)
    env.pop("PYTHONPATH", None)
    need(ROOT / "samples" / "synth-heldout-klatt3.wav")
    p = run([py, example], env=env, cwd=ROOT)  # the example's paths are repo-relative
    print(p.stdout)
    assert f"package: {venv}" in p.stdout  # the installed copy, not the source tree
    assert "[0.00 -> 4.94] it costs two thousand eight hundred" in p.stdout
    p = run([py, "-m", "transcribe", "--version"], env=env, cwd=tmp_path)
    assert transcribe.__version__ in p.stdout


def test_pip_install_from_the_checkout_leaves_it_clean(tmp_path):
    """`pip install --no-build-isolation bindings/python` writes build/ and
    *.egg-info/ into the checkout: git must ignore them."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for mod in ("pip", "setuptools", "wheel"):
        if subprocess.run([sys.executable, "-c", f"import {mod}"], capture_output=True).returncode:
            pytest.skip(f"python3 module {mod} is missing (scripts/deps --test installs it)")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONDONTWRITEBYTECODE="1")
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", tmp_path / "site", BINDINGS], env=env)
    st = run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=all", "--", BINDINGS])
    untracked = [ln for ln in st.stdout.splitlines() if ln.startswith("??")]
    assert untracked == [], untracked
