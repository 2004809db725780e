"""Shared fixtures: paths into the source tree and the loaded test models.

ctest runs these tests with TRANSCRIBE_LIBRARY (the built libtranscribe.so)
and TRANSCRIBE_CLI (the built `transcribe` tool) set; run by hand, the
package finds build/lib/libtranscribe.so of this checkout itself.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

BINDINGS = Path(__file__).resolve().parent.parent
ROOT = BINDINGS.parent.parent
sys.path.insert(0, str(BINDINGS))  # the package from the source tree

import transcribe  # noqa: E402

BUNDLED = ROOT / "models" / "parakeet-ctc-synth-en.gguf"
DATA = ROOT / "tests" / "data"
SAMPLE = ROOT / "samples" / "synth-heldout-klatt3.wav"
SHORT_WAVS = [
    DATA / "bundled" / "t000-m7.wav",
    DATA / "bundled" / "t002-klatt3.wav",
    DATA / "bundled" / "t003-benjamin.wav",
]
TINY_CTC = DATA / "parakeet" / "tiny-ctc" / "parakeet-tiny-ctc-F16.gguf"
TINY_TDT = DATA / "parakeet" / "tiny-tdt" / "parakeet-tiny-tdt-F32.gguf"
TINY_CANARY = DATA / "canary" / "tiny-canary" / "tiny-canary-ref-F16.gguf"
TINY_MOSS = DATA / "moss" / "tiny" / "moss-tiny-ref-F16.gguf"
MOSS_WAV = DATA / "moss" / "mix.wav"
TINY_WHISPER = DATA / "whisper" / "tiny" / "whisper-tiny-ref-F16.gguf"
TINY_SENSEVOICE = DATA / "sensevoice" / "tiny" / "sensevoice-tiny-ref-F32.gguf"
SENSEVOICE_WAV = DATA / "sensevoice" / "clip.wav"
TINY_MEDASR = DATA / "medasr" / "tiny" / "medasr-tiny-ref-F32.gguf"
MEDASR_WAV = DATA / "medasr" / "clip.wav"
TINY_VXR = DATA / "voxtral_realtime" / "voxtral-realtime-tiny-ref-F32.gguf"
VXR_WAV = DATA / "voxtral_realtime" / "clip.wav"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path.relative_to(ROOT)} is not in this checkout")
    return path


@pytest.fixture(scope="session")
def lib():
    try:
        return transcribe._lib.get()
    except transcribe.LibraryNotFoundError as e:
        pytest.skip(f"libtranscribe not found: {e}")


@pytest.fixture(scope="session")
def model(lib):
    m = transcribe.Model(need(BUNDLED), threads=2)
    yield m
    m.close()


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("TRANSCRIBE_CLI") or str(ROOT / "build" / "bin" / "transcribe")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        found = shutil.which("transcribe")
        if not found:
            pytest.skip("the transcribe CLI is not built (set TRANSCRIBE_CLI)")
        path = found
    return path
