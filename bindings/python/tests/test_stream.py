"""model.stream(): committed text only grows; finalize commits the rest.

Every family streams (natively, or through the library's window driver, which
the package asks for); a library that streams none of the test models skips with that
reason."""

from __future__ import annotations

import pytest

import transcribe
from conftest import BUNDLED, SAMPLE, TINY_CTC, TINY_TDT, TINY_VXR, VXR_WAV, need

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def streaming_model(lib):
    for path in (BUNDLED, TINY_TDT, TINY_CTC):
        if not path.exists():
            continue
        m = transcribe.Model(path)
        if m.info.capabilities.streaming:
            yield m
            m.close()
            return
        m.close()
    pytest.skip("no test model reports streaming support (transcribe_capabilities."
                "supports_streaming is false for every family this library runs)")


def feed_all(stream, pcm, chunk):
    updates = []
    for pos in range(0, len(pcm), chunk):
        updates.append(stream.feed(pcm[pos : pos + chunk]))
    return updates


def test_committed_text_only_grows(streaming_model):
    m = streaming_model
    pcm = transcribe.load_audio(need(SAMPLE))
    with m.stream() as s:
        assert s.state == "active"
        updates = feed_all(s, pcm, 8000)  # 0.5 s chunks
        prev, received = "", 0
        for u in updates:
            assert u.committed.startswith(prev), (prev, u.committed)
            assert u.new_committed == u.committed[len(prev):]
            assert not u.is_final and u.input_ms >= received
            prev, received = u.committed, u.input_ms
        assert received == pytest.approx(len(pcm) / 16, abs=1)
        final = s.finalize()
        assert final.is_final and final.committed.startswith(prev)
        assert final.tentative == "" and final.committed.strip()
        assert s.state == "finished"
        r = s.result()
        assert r.text and r.duration == pytest.approx(len(pcm) / 16000)
        offline = m.transcribe(pcm)
        print(f"stream final: {final.text!r}\noffline:      {offline.text!r}")
    with pytest.raises(transcribe.InvalidArgumentError, match="closed"):
        s.feed(pcm[:1600])


def test_an_empty_feed_changes_nothing(streaming_model):
    """A capture callback may deliver no frames: feeding them returns the
    current texts unchanged; once finalized, any feed says so."""
    pcm = transcribe.load_audio(need(SAMPLE))
    with streaming_model.stream() as s:
        first = s.feed(pcm[:0])
        assert not first.changed and first.input_ms == 0 and first.text == ""
        u = s.feed(pcm[:32000])
        again = s.feed(np.zeros(0, dtype=np.float32))
        assert not again.changed and again.new_committed == ""
        assert (again.committed, again.text, again.input_ms) == (u.committed, u.text, u.input_ms)
        assert s.feed([]).input_ms == u.input_ms
        s.finalize()
        for audio in (pcm[:0], pcm[:1600]):
            with pytest.raises(transcribe.InvalidArgumentError, match="finalized"):
                s.feed(audio)


def test_commit_on_finalize_commits_nothing_before(streaming_model):
    pcm = transcribe.load_audio(need(SAMPLE))
    with streaming_model.stream(commit="finalize") as s:
        for u in feed_all(s, pcm, 16000):
            assert u.committed == ""
        assert s.finalize().committed.strip()


def test_voxtral_realtime_streams_natively_to_the_offline_text(lib):
    """Voxtral Realtime (the reference's tiny file): each feed encodes only its new audio, every
    emitted token is final, and the streamed text equals the offline text."""
    with transcribe.Model(need(TINY_VXR)) as m:
        assert m.info.capabilities.native_streaming
        pcm = transcribe.load_audio(need(VXR_WAV))
        offline = m.transcribe(pcm).text
        assert offline.startswith("And so my fellow Americans")
        for chunk in (160, 1600, 32000):  # 10 ms, 100 ms, 2 s
            with m.stream() as s:
                prev = ""
                for u in feed_all(s, pcm, chunk):
                    assert u.committed.startswith(prev)
                    prev = u.committed
                final = s.finalize()
                assert final.committed == offline and final.text == offline


def test_stream_argument_errors(model):
    with pytest.raises(transcribe.InvalidArgumentError):
        model.stream(commit="sometimes")
    with pytest.raises(transcribe.InvalidArgumentError):
        model.stream(agreement=99)


def test_a_model_without_native_streaming_streams_through_the_window_driver(lib):
    """The C default follows transcribe.cpp (only native streaming models
    stream); the package asks for the library's window driver, so every
    model streams, and the capabilities say which way."""
    with transcribe.Model(str(need(BUNDLED))) as m:
        caps = m.info.capabilities
        assert caps.streaming and not caps.native_streaming
        pcm = transcribe.load_audio(need(SAMPLE))
        with m.stream() as s:
            feed_all(s, pcm, 16000)
            final = s.finalize()
            assert final.is_final and final.committed.strip() and s.state == "finished"
