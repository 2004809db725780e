"""The wheel built from bindings/python (offline, Debian's setuptools)
installs into a fresh venv and runs the README example. ctest: test_python_wheel."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import transcribe
from conftest import BINDINGS, BUNDLED, ROOT, need

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


def missing_modules(*mods):
    return [m for m in mods
            if subprocess.run([sys.executable, "-c", f"import {m}"], capture_output=True).returncode]


def git_status(*args):
    return run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=all", *args,
                "--", BINDINGS]).stdout.splitlines()


def test_pip_install_from_the_checkout_leaves_it_clean(tmp_path):
    """`pip install --no-build-isolation bindings/python` builds out of the
    checkout: no build/ or *.egg-info/ appears in it, ignored or not
    (issue 31 item 20)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    missing = missing_modules("pip", "setuptools", "wheel")
    if missing:
        pytest.skip(f"python3 modules {missing} are missing (scripts/deps --test installs them)")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONDONTWRITEBYTECODE="1")
    before = git_status("--ignored")
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", tmp_path / "site", BINDINGS], env=env)
    assert git_status("--ignored") == before
    assert not (BINDINGS / "transcribe" / "_origin.py").exists()  # generated into the wheel only


def test_installed_package_finds_the_checkouts_library_and_models(lib, tmp_path):
    """The README's offline install (a venv over Debian's python3, pip from
    the checkout without build isolation or an index), then, from another
    folder and without TRANSCRIBE_LIBRARY / TRANSCRIBE_VAD_MODEL /
    TRANSCRIBE_MODEL: the README example, vad=True, and python -m transcribe
    with its bundled default model (issue 31 item 6)."""
    missing = missing_modules("pip", "venv", "setuptools", "wheel")
    if missing:
        pytest.skip(f"python3 modules {missing} are missing (scripts/deps --test installs them)")
    sample = need(ROOT / "samples" / "synth-heldout-klatt3.wav")
    need(ROOT / "models" / "silero-vad-v4.gguf")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONDONTWRITEBYTECODE="1")
    for var in ("TRANSCRIBE_LIBRARY", "TRANSCRIBE_VAD_MODEL", "TRANSCRIBE_MODEL", "PYTHONPATH"):
        env.pop(var, None)
    install_env = dict(env)
    built = Path(lib.path).resolve()
    if built.parent != (ROOT / "build" / "lib").resolve():
        # a build folder other than the README's build/: named at install time
        install_env["TRANSCRIBE_LIBRARY"] = str(built)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], env=env)
    py = venv / "bin" / "python"
    run([py, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
         BINDINGS], env=install_env)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    example = readme_example()
    for rel in ("models/parakeet-ctc-synth-en.gguf", "samples/synth-heldout-klatt3.wav"):
        example = example.replace(f'"{rel}"', repr(str(ROOT / rel)))
    script = elsewhere / "example.py"
    script.write_text(
        "import transcribe\nprint('package:', transcribe.__file__)\n" + example
        + "import os\nprint('library:', os.path.realpath(transcribe.library_path()))\n"
        + "with transcribe.Model(%r) as m:\n" % str(need(BUNDLED))
        + "    r = m.transcribe(%r, vad=True, timestamps='segment')\n" % str(sample)
        + "print('vad:', r.segments[0].start_ms, r.text)\n",
        encoding="utf-8")
    p = run([py, script], env=env, cwd=elsewhere)
    print(p.stdout)
    assert f"package: {venv}" in p.stdout  # the installed copy, not the source tree
    assert "[0.00 -> 4.94] it costs two thousand eight hundred" in p.stdout
    assert f"library: {built}\n" in p.stdout  # this checkout's build, found by itself
    # the VAD's speech region starts after the leading silence
    vad_line = next(ln for ln in p.stdout.splitlines() if ln.startswith("vad:"))
    assert int(vad_line.split()[1]) > 0 and "it costs two thousand" in vad_line

    p = run([py, "-m", "transcribe", sample], env=env, cwd=elsewhere)
    assert p.stdout.startswith("it costs two thousand eight hundred")
    assert f"using bundled model {BUNDLED}" in p.stderr

    # the top README's Python example (repository-relative paths, vad=True)
    top = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"),
                     flags=re.S)
    assert top, "README.md has no Python example"
    p = run([py, "-c", top[0]], env=env, cwd=ROOT)
    assert p.stdout.startswith("it costs two thousand eight hundred")


def test_readmes_show_the_offline_install_the_tests_run():
    for readme in (ROOT / "README.md", BINDINGS / "README.md"):
        text = readme.read_text(encoding="utf-8")
        assert "/usr/bin/python3 -m venv --system-site-packages .venv" in text, readme
        assert ".venv/bin/pip install --no-build-isolation --no-index bindings/python" in text, readme


def test_installed_package_finds_an_install_prefix(lib, tmp_path):
    """Installed from a copy of bindings/python (no checkout to record) with
    TRANSCRIBE_LIBRARY naming a `cmake --install` prefix's library: the
    package loads that library, and vad=True and python -m transcribe find
    the bundled models in the prefix's share/transcribe, with no variable
    set at run time."""
    missing = missing_modules("pip", "venv", "setuptools", "wheel")
    if missing:
        pytest.skip(f"python3 modules {missing} are missing (scripts/deps --test installs them)")
    sample = need(ROOT / "samples" / "synth-heldout-klatt3.wav")
    prefix = tmp_path / "prefix"  # the layout `cmake --install build --prefix P` makes
    (prefix / "lib").mkdir(parents=True)
    (prefix / "share" / "transcribe").mkdir(parents=True)
    shutil.copy(Path(lib.path).resolve(), prefix / "lib" / "libtranscribe.so.0")
    for name in ("parakeet-ctc-synth-en.gguf", "silero-vad-v4.gguf"):
        shutil.copy(need(ROOT / "models" / name), prefix / "share" / "transcribe" / name)
    src = tmp_path / "src"
    shutil.copytree(BINDINGS, src, ignore=shutil.ignore_patterns(
        "tests", "__pycache__", "build", "dist", "*.egg-info"))
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONDONTWRITEBYTECODE="1")
    for var in ("TRANSCRIBE_LIBRARY", "TRANSCRIBE_VAD_MODEL", "TRANSCRIBE_MODEL", "PYTHONPATH"):
        env.pop(var, None)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], env=env)
    py = venv / "bin" / "python"
    run([py, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", src],
        env=dict(env, TRANSCRIBE_LIBRARY=str(prefix / "lib")))
    p = run([py, "-c", "import transcribe\n"
             "print('library:', transcribe.library_path())\n"
             "with transcribe.Model(%r) as m:\n" % str(prefix / "share/transcribe/parakeet-ctc-synth-en.gguf")
             + "    print('vad:', m.transcribe(%r, vad=True).text)\n" % str(sample)],
            env=env, cwd=tmp_path)
    assert f"library: {prefix / 'lib' / 'libtranscribe.so.0'}" in p.stdout
    assert "vad: it costs two thousand" in p.stdout
    p = run([py, "-m", "transcribe", sample], env=env, cwd=tmp_path)
    assert p.stdout.startswith("it costs two thousand eight hundred")
    assert f"using bundled model {prefix / 'share' / 'transcribe'}" in p.stderr
