"""Leak test (1 000 open/transcribe/close cycles, flat RSS) and thread test
(4 threads x 10 runs on one model). ctest: test_python_stress."""

from __future__ import annotations

import gc
import os
import threading
import time

import pytest

import transcribe
from conftest import BUNDLED, SAMPLE, SHORT_WAVS, TINY_CTC, need

pytestmark = pytest.mark.stress


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_open_transcribe_close_1000_cycles_keeps_rss_flat(lib, tmp_path):
    import wave

    model_path = need(TINY_CTC)
    pcm = transcribe.load_audio(need(SHORT_WAVS[1]))[:8000]  # 0.5 s keeps it quick
    wav = tmp_path / "half-second.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"".join(int(x * 32767).to_bytes(2, "little", signed=True) for x in pcm))
    stop = lambda: False  # noqa: E731 - exercises the abort callback path too
    t0 = time.perf_counter()
    base = 0
    for i in range(1000):
        with transcribe.Model(model_path, threads=1) as m:
            # alternate the input paths: file decoding, PCM, bytes
            audio = wav if i % 3 == 0 else pcm if i % 3 == 1 else None
            if audio is None:
                r = m.transcribe_batch([pcm, pcm])[0]
            else:
                r = m.transcribe(audio, abort=stop)
            assert r.duration > 0
        if i == 99:
            gc.collect()
            base = rss_bytes()
    gc.collect()
    growth = rss_bytes() - base
    print(f"leak: 1000 cycles in {time.perf_counter() - t0:.1f} s, RSS after 100: "
          f"{base / 2**20:.1f} MiB, growth over the next 900: {growth / 2**10:.0f} KiB")
    # a leaked model (335 KB file) or session per cycle would be hundreds of MiB
    assert growth < 4 * 2**20


def test_four_threads_ten_runs_each_on_one_model(lib):
    wavs = [need(w) for w in SHORT_WAVS + [SAMPLE]]
    with transcribe.Model(need(BUNDLED), threads=1) as m:
        pcms = [transcribe.load_audio(w) for w in wavs]
        want = [m.transcribe(p) for p in pcms]
        errors = []
        got = []
        start = threading.Barrier(4)

        def worker(k: int) -> None:
            try:
                start.wait()
                for j in range(10):
                    i = (k + j) % len(pcms)
                    r = m.transcribe(pcms[i]) if j % 2 else m.transcribe(wavs[i])
                    got.append((i, r))
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a thread hung"
        assert not errors, errors
        assert len(got) == 40
        for i, r in got:
            assert (r.text, r.segments, r.tokens) == (want[i].text, want[i].segments, want[i].tokens)
        assert 1 <= len(m._h.sessions) <= 4  # a pooled session per concurrent call
        print(f"threads: 40 runs on 4 threads in {time.perf_counter() - t0:.1f} s, all equal")


def test_concurrent_batches_singles_and_close(lib):
    """Concurrent batch and single runs; close() waits for runs in flight."""
    wav = need(SAMPLE)
    m = transcribe.Model(need(BUNDLED), threads=1)
    ref = m.transcribe(wav).text
    results = []

    def batch() -> None:
        results.extend(r.text for r in m.transcribe_batch([wav, wav]))

    ts = [threading.Thread(target=batch) for _ in range(2)]
    for t in ts:
        t.start()
    results.append(m.transcribe(wav).text)
    for t in ts:
        t.join()
    m.close()
    assert results == [ref] * 5


def test_close_waits_for_a_run_in_flight(lib):
    wav = need(SAMPLE)
    m = transcribe.Model(need(BUNDLED), threads=1)
    started, release = threading.Event(), threading.Event()
    results = []

    def stall() -> bool:  # the run's abort poll parks here until released
        started.set()
        release.wait(30)
        return False

    runner = threading.Thread(target=lambda: results.append(m.transcribe(wav, abort=stall)))
    runner.start()
    assert started.wait(30)
    closer = threading.Thread(target=m.close)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive()  # close() waits for the run
    with pytest.raises(transcribe.InvalidArgumentError, match="closed"):
        m.transcribe(wav)  # no new call once closing
    release.set()
    runner.join(30)
    closer.join(30)
    assert not closer.is_alive() and m.closed
    assert results and results[0].text.startswith("it costs")
