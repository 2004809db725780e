"""close() on one thread while another thread is inside a call on the same
object: the call finishes on live handles (no use-after-free), later calls
are refused with "closed". Each call is parked at a known point (an abort
poll, or the audio conversion before the library call) so that the close
lands while the C handle is in use, whatever the machine's speed."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import pytest

import transcribe
from conftest import BUNDLED, ROOT, SAMPLE, TINY_CTC, TINY_TDT, need
from transcribe import _model, _structs as S, _vad

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def streaming_model(lib):
    for path in (BUNDLED, TINY_TDT, TINY_CTC):
        if path.exists():
            m = transcribe.Model(path)
            if m.info.capabilities.streaming:
                yield m
                m.close()
                return
            m.close()
    pytest.skip("no test model streams")


@pytest.fixture
def vad_model(lib, model):
    if not lib.covers(S.RunParams, "vad_model"):
        pytest.skip("this libtranscribe has no run-param VAD")
    return transcribe.VadModel(need(ROOT / "models" / "silero-vad-v4.gguf"))


class Park:
    """An event pair: the worker says it is parked, the test releases it."""

    def __init__(self) -> None:
        self.parked = threading.Event()
        self.release = threading.Event()

    def here(self) -> None:
        self.parked.set()
        assert self.release.wait(60)


def run_in_thread(fn):
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            out["error"] = e

    t = threading.Thread(target=body)
    t.start()
    return t, out


def parked_to_pcm(monkeypatch, module, park):
    """module.to_pcm parks once the audio is converted (handles taken)."""
    real = module.to_pcm

    @contextmanager
    def parking(*a, **kw):
        with real(*a, **kw) as pcm:
            park.here()
            yield pcm

    monkeypatch.setattr(module, "to_pcm", parking)


def test_stream_close_waits_for_a_feed_in_progress(streaming_model):
    pcm = transcribe.load_audio(need(SAMPLE))
    park, polls = Park(), []

    def stall() -> bool:  # the feed's abort poll parks on its first call
        polls.append(1)
        if len(polls) == 1:
            park.here()
        return False

    s = streaming_model.stream(abort=stall)
    feeder, out = run_in_thread(lambda: [s.feed(pcm[i : i + 8000]) for i in range(0, len(pcm), 8000)])
    assert park.parked.wait(60)
    closer, _ = run_in_thread(s.close)
    closer.join(0.2)
    assert closer.is_alive()  # close() waits for the feed in C
    park.release.set()
    feeder.join(60)
    closer.join(60)
    assert not closer.is_alive()
    # the feed in progress finished; the next one (if any) saw the closed stream
    err = out.get("error")
    assert err is None or (isinstance(err, transcribe.InvalidArgumentError) and "closed" in str(err))
    with pytest.raises(transcribe.InvalidArgumentError, match="closed"):
        s.feed(pcm[:1600])
    s.close()  # idempotent
    assert streaming_model.transcribe(pcm[:16000]).duration == 1.0


def test_stream_close_from_its_abort_callback_is_refused(streaming_model):
    pcm = transcribe.load_audio(need(SAMPLE))
    errors = []
    holder = []

    def close_me() -> bool:
        try:
            holder[0].close()
        except RuntimeError as e:
            errors.append(e)
        return False

    with streaming_model.stream(abort=close_me) as s:
        holder.append(s)
        for i in range(0, len(pcm), 8000):
            s.feed(pcm[i : i + 8000])
        s.finalize()
    assert errors  # refused, not a deadlock


def test_vad_close_during_speech_frees_after_it(vad_model, monkeypatch):
    park = Park()
    parked_to_pcm(monkeypatch, _vad, park)
    pcm = np.zeros(16000 * 20, dtype=np.float32)
    pcm[16000 * 5 : 16000 * 8] = transcribe.load_audio(need(SAMPLE))[: 16000 * 3]
    t, out = run_in_thread(lambda: vad_model.speech(pcm))
    assert park.parked.wait(60)
    vad_model.close()  # returns at once: the model goes when speech() ends
    park.release.set()
    t.join(60)
    assert "error" not in out, out.get("error")
    assert out["value"]  # the speech between 5 and 8 s was found
    with pytest.raises(transcribe.InvalidArgumentError, match="closed"):
        vad_model.speech(pcm)
    vad_model.close()  # idempotent


def test_vad_close_during_a_transcription_using_it(model, vad_model, monkeypatch):
    wav = transcribe.load_audio(need(SAMPLE))
    ref = model.transcribe(wav, vad=vad_model).text
    park = Park()
    parked_to_pcm(monkeypatch, _model, park)
    t, out = run_in_thread(lambda: model.transcribe(wav, vad=vad_model))
    assert park.parked.wait(60)
    vad_model.close()
    park.release.set()
    t.join(60)
    monkeypatch.undo()
    assert "error" not in out, out.get("error")
    assert out["value"].text == ref
    with pytest.raises(transcribe.InvalidArgumentError, match="closed"):
        model.transcribe(wav, vad=vad_model)
