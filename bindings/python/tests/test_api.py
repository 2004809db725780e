"""Every API path on the test models: inputs, results against the CLI's
JSON, timestamps, batch, abort, info, logging, the command line."""

from __future__ import annotations

import array
import gc
import json
import logging
import os
import subprocess
import sys
import threading
import weakref

import pytest

import transcribe
from conftest import (
    BINDINGS,
    BUNDLED,
    MEDASR_WAV,
    MOSS_WAV,
    ROOT,
    SAMPLE,
    SENSEVOICE_WAV,
    SHORT_WAVS,
    TINY_MEDASR,
    TINY_MOSS,
    TINY_SENSEVOICE,
    TINY_TDT,
    need,
)

np = pytest.importorskip("numpy")


def cli_json(cli, model_path, wav, *flags, rc=0):
    p = subprocess.run(
        [cli, "-m", str(model_path), "-f", "json", "--tokens", "-q", *flags, str(wav)],
        capture_output=True, text=True,
    )
    assert p.returncode == rc, p.stderr
    out = p.stdout
    d = json.loads(out)
    for k in ("file", "model", "cues", "error"):
        d.pop(k, None)
    return d


def assert_same_as_cli(got, want):
    gt, wt = got.pop("tokens", []), want.pop("tokens", [])
    assert got == want
    assert len(gt) == len(wt)
    for a, b in zip(gt, wt):
        pa, pb = a.pop("p", None), b.pop("p", None)
        assert a == b
        assert (pa is None) == (pb is None)
        if pa is not None:
            assert abs(pa - pb) <= 1.5e-4


# ---- inputs ----


def test_path_input(model):
    r = model.transcribe(str(need(SAMPLE)))
    assert r.text == "it costs two thousand eight hundred and fifty nine dollars and fifty one cents"
    assert r.language == ""  # no language identification in this model
    assert r.duration == pytest.approx(4.942, abs=1e-3)
    assert r.timestamps == "token"
    assert len(r.segments) == 1 and r.segments[0].words == r.words
    assert [w.text for w in r.words] == r.text.split()
    assert r.segments[0].start == 0.0 and r.segments[0].end == pytest.approx(4.942)
    assert r.segments[0].speaker is None
    assert r.timings.encode_ms > 0 and r.timings.total_ms > 0
    assert str(r) == r.text


def test_every_input_kind_gives_the_same_result(model):
    wav = need(SAMPLE)
    ref = model.transcribe(wav)  # pathlib.Path
    pcm = transcribe.load_audio(wav)
    assert isinstance(pcm, np.ndarray) and pcm.dtype == np.float32
    assert len(pcm) == round(ref.duration * 16000)
    inputs = {
        "bytes": wav.read_bytes(),
        "bytearray": bytearray(wav.read_bytes()),
        "numpy": pcm,
        "numpy-readonly": np.frombuffer(pcm.tobytes(), dtype=np.float32),
        "numpy-float64": pcm.astype(np.float64),
        "numpy-column": pcm.reshape(-1, 1),
        "numpy-strided": np.repeat(pcm, 2)[::2],
        "array": array.array("f", pcm.tobytes()),
        "memoryview": memoryview(array.array("f", pcm.tobytes())),
    }
    for name, audio in inputs.items():
        r = model.transcribe(audio)
        assert r.text == ref.text, name
        assert r.segments == ref.segments, name
        assert r.tokens == ref.tokens or name == "numpy-float64", name


def test_bad_inputs(model):
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(np.zeros(0, dtype=np.float32))
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(np.zeros((2, 1600), dtype=np.float32))  # stereo
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(np.zeros(1600, dtype=np.int16))
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(b"")
    with pytest.raises(TypeError):
        model.transcribe(12345)
    with pytest.raises(transcribe.MissingFileError) as e:
        model.transcribe(str(ROOT / "no-such-audio.wav"))
    assert isinstance(e.value, FileNotFoundError) and e.value.status == 3
    with pytest.raises(transcribe.InvalidArgumentError) as e:
        model.transcribe(b"this is not audio at all" * 10)
    assert e.value.status == 1 and "cannot read audio" in str(e.value)
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(str(ROOT / "models"))  # a directory


def test_load_audio_resamples():
    full = transcribe.load_audio(need(SAMPLE))
    half = transcribe.load_audio(SAMPLE, rate=8000)
    assert abs(len(half) - len(full) / 2) <= 1


# ---- results equal the CLI's JSON ----


def test_results_equal_cli_json(model, cli):
    for wav in [SAMPLE] + SHORT_WAVS:
        got = model.transcribe(need(wav)).to_dict()
        assert_same_as_cli(got, cli_json(cli, BUNDLED, wav))


def test_to_dict_cues_when_json_rendered(model, cli):
    # with formats=["json"] the dict carries the library's cues, the CLI's
    got = model.transcribe(need(SAMPLE), formats=["json"]).to_dict()
    p = subprocess.run([cli, "-m", str(BUNDLED), "-f", "json", "-q", str(need(SAMPLE))],
                       capture_output=True, text=True, check=True)
    assert got["cues"] == json.loads(p.stdout)["cues"] and got["cues"]
    assert list(got)[:5] == ["text", "language", "duration", "timestamps", "cues"]


def test_tdt_words_equal_cli_json(cli):
    with transcribe.Model(need(TINY_TDT)) as m:
        for ts in ("auto", "word", "segment", "none"):
            got = m.transcribe(need(SAMPLE), timestamps=ts).to_dict()
            assert_same_as_cli(got, cli_json(cli, TINY_TDT, SAMPLE, "--timestamps", ts))


def test_audio_tags_equal_cli_json(cli):
    """SenseVoice's language / emotion / event tags: fields, not text."""
    with transcribe.Model(need(TINY_SENSEVOICE)) as m:
        r = m.transcribe(need(SENSEVOICE_WAV))
        assert (r.language, r.emotion, r.audio_event) == ("en", "NEUTRAL", "Speech")
        assert "<|" not in r.text and "<|Speech|>" in r.raw_text
        assert_same_as_cli(r.to_dict(), cli_json(cli, TINY_SENSEVOICE, SENSEVOICE_WAV))


def test_medasr_token_rows_equal_cli_json(cli):
    """MedASR: the reference's text, token rows on 40 ms frames with the raw piece as text."""
    with transcribe.Model(need(TINY_MEDASR)) as m:
        r = m.transcribe(need(MEDASR_WAV))
        golden = json.loads((TINY_MEDASR.parent / "decode.json").read_text("utf-8"))["F32"]
        assert r.text == golden["text"] and r.raw_text == golden["raw_text"]
        assert [(t.id, t.text, t.start_ms, t.end_ms) for t in r.tokens] == [
            (t["id"], t["text"], t["t0_ms"], t["t1_ms"]) for t in golden["tokens"]
        ]
        assert len(r.segments) == 1 and r.segments[0].text == r.text
        assert_same_as_cli(r.to_dict(), cli_json(cli, TINY_MEDASR, MEDASR_WAV))
        with pytest.raises(transcribe.TranscribeError):
            m.transcribe(np.zeros(2319, dtype=np.float32))


def test_diarized_segments_equal_cli_json(cli):
    with transcribe.Model(need(TINY_MOSS)) as m:
        r = m.transcribe(need(MOSS_WAV), diarize=True)
        assert_same_as_cli(r.to_dict(), cli_json(cli, TINY_MOSS, MOSS_WAV, "--diarize"))
        for s in r.segments:
            assert (s.speaker is None) == (s.speaker_id == 0)


def write_wav(path, pcm):
    import wave

    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((np.clip(pcm, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def test_split_long_audio_equals_cli_json(model, cli, tmp_path):
    """Pieces cut at pauses, run one by one and stitched onto the file's
    clock: text, segments, words, tokens and the pieces equal the CLI's."""
    gap = np.zeros(24000, dtype=np.float32)
    parts = []
    for w in SHORT_WAVS + [SAMPLE]:
        parts += [transcribe.load_audio(need(w)), gap]
    wav = write_wav(tmp_path / "joined.wav", np.concatenate(parts))
    pcm = transcribe.load_audio(wav)  # the 16-bit samples the CLI reads
    r = model.transcribe(pcm, chunk="on", chunk_max_s=4)
    assert len(r.chunks) >= 4 and r.timestamps == "token"
    assert all(a.end_ms <= b.start_ms for a, b in zip(r.words, r.words[1:]))
    assert_same_as_cli(r.to_dict(), cli_json(cli, BUNDLED, wav, "--chunk", "on", "--chunk-max-s", "4"))
    whole = model.transcribe(pcm)
    assert whole.chunks is None  # auto: parakeet has its own long-form mode


def test_budget_family_long_audio_equals_cli_json(cli):
    """MOSS has a fixed output budget: a 33 s file is split (chunk='auto'),
    pieces decoded four to a batch, as the CLI does."""
    from conftest import DATA

    wav = need(DATA / "moss" / "we33.wav")
    with transcribe.Model(need(TINY_MOSS)) as m:
        r = m.transcribe(wav)
        assert r.chunks and len(r.chunks) >= 2
        assert_same_as_cli(r.to_dict(), cli_json(cli, TINY_MOSS, wav))


def test_ten_minutes_budget_family_whole_transcript(cli, tmp_path):
    """A 10-minute recording (samples/jfk.wav with pauses) and a Qwen3-ASR
    model (the tiny test one): transcribe() with default parameters gives
    the whole transcript, split by the library, equal to the CLI's."""
    from conftest import DATA

    tiny = need(DATA / "qwen3_asr" / "tiny" / "qwen3-asr-tiny-ref-F32.gguf")
    jfk = transcribe.load_audio(need(ROOT / "samples" / "jfk.wav"))
    rng = np.random.default_rng(5)
    parts = []
    while sum(len(p) for p in parts) < 600 * 16000:
        gap = int(16000 * rng.uniform(1.0, 1.6))
        parts += [jfk, (rng.standard_normal(gap) * 0.001).astype(np.float32)]
    wav = write_wav(tmp_path / "ten_minutes.wav", np.concatenate(parts))
    pcm = transcribe.load_audio(wav)
    with transcribe.Model(tiny) as m:
        r = m.transcribe(pcm)
        assert r.duration >= 600 and r.chunks and len(r.chunks) >= 20
        assert r.chunks[-1].end_ms >= 590000 and len(r.text) > 2000
        assert all(a.end_ms <= b.start_ms for a, b in zip(r.chunks, r.chunks[1:]))
        assert all(a.start_ms <= b.start_ms for a, b in zip(r.segments, r.segments[1:]))
        assert_same_as_cli(r.to_dict(), cli_json(cli, tiny, wav))
        [b] = m.transcribe_batch([pcm])
        assert b.text == r.text and b.chunks == r.chunks


def test_truncated_output_is_a_result_not_an_error(cli):
    """A decode that hits the output cap (a looping tiny MOSS) keeps its
    partial text: result.truncated, as the CLI's "truncated": true."""
    from conftest import DATA

    looping = need(DATA / "moss" / "tiny" / "moss-tiny-loop-nosplit-F16.gguf")
    with transcribe.Model(looping) as m:
        r = m.transcribe(need(MOSS_WAV))
        assert r.truncated and r.to_dict()["truncated"] is True
        assert_same_as_cli(r.to_dict(), cli_json(cli, looping, MOSS_WAV, rc=1))
        (b,) = m.transcribe_batch([MOSS_WAV])
        assert b.truncated


def test_spec_k_drafts_gives_the_plain_text():
    """Speculative decoding (spec_k_drafts) changes no output: the looping
    tiny MOSS, whose drafts are accepted, gives the plain run's text."""
    from conftest import DATA

    looping = need(DATA / "moss" / "tiny" / "moss-tiny-loop-nosplit-F16.gguf")
    with transcribe.Model(looping) as m:
        assert m.info.capabilities.spec_decode
        plain = m.transcribe(need(MOSS_WAV))
        for k in (0, 1, 4, 8):
            r = m.transcribe(need(MOSS_WAV), spec_k_drafts=k)
            assert r.text == plain.text and r.truncated == plain.truncated
        for bad in (-2, 1025, 2**32 + 3, 3.9, "3", True):  # the CLI's -1..1024, ints only
            with pytest.raises(transcribe.InvalidArgumentError):
                m.transcribe(need(MOSS_WAV), spec_k_drafts=bad)


# ---- timestamps ----


def test_timestamp_ceilings(model):
    wav = need(SAMPLE)
    seg = model.transcribe(wav, timestamps="segment")
    assert seg.timestamps == "segment" and seg.words == () and seg.tokens == () or seg.timestamps == "segment"
    assert seg.segments and seg.segments[0].end_ms > 0
    word = model.transcribe(wav, timestamps="word")
    assert word.timestamps == "word" and word.words
    none = model.transcribe(wav, timestamps="none")
    assert none.timestamps == "none" and none.text == word.text
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(wav, timestamps="syllable")


# ---- batch ----


def test_batch_equals_singles(model):
    wavs = [need(w) for w in SHORT_WAVS]
    singles = [model.transcribe(w) for w in wavs]
    inputs = [wavs[0], transcribe.load_audio(wavs[1]), wavs[2].read_bytes()]
    batch = model.transcribe_batch(inputs)
    assert len(batch) == 3
    for a, b in zip(batch, singles):
        assert a == b  # every field but the timings
    assert model.transcribe_batch([]) == []
    with pytest.raises(transcribe.InvalidArgumentError) as e:
        model.transcribe_batch([wavs[0], np.zeros(0, dtype=np.float32)])
    assert e.value.index == 1
    # an input that cannot be read takes its error's place; the others run
    got = model.transcribe_batch([wavs[0], "/nonexistent.wav", wavs[2]], return_exceptions=True)
    assert got[0] == singles[0] and got[2] == singles[2]
    assert isinstance(got[1], transcribe.MissingFileError) and got[1].index == 1
    # one input is not a batch of its characters or samples
    for one in (str(wavs[0]), wavs[0], np.zeros(16000, dtype=np.float32)):
        with pytest.raises(TypeError):
            model.transcribe_batch(one)


# ---- abort ----


def test_abort(model):
    wav = need(SAMPLE)
    with pytest.raises(transcribe.AbortedError) as e:
        model.transcribe(wav, abort=lambda: True)
    assert e.value.status == 13 and e.value.status_name == "ERR_ABORTED"
    assert isinstance(e.value.result, transcribe.Result)  # the part done (may be empty)
    ev = threading.Event()
    ev.set()
    with pytest.raises(transcribe.AbortedError):
        model.transcribe(wav, abort=ev)
    with pytest.raises(transcribe.AbortedError):
        model.transcribe_batch([wav, wav], abort=ev)
    calls = []
    r = model.transcribe(wav, abort=lambda: calls.append(1) or False)
    assert calls and r.text  # polled, and a False answer lets the run finish

    class Boom(Exception):
        pass

    def explode():
        raise Boom("from the callback")

    with pytest.raises(Boom):
        model.transcribe(wav, abort=explode)
    with pytest.raises(RuntimeError):  # re-entering the model from its callback
        model.transcribe(wav, abort=lambda: model.transcribe(wav) is None)
    assert model.transcribe(wav).text == r.text  # the model still works


def test_ctrl_c_stops_a_run(model, monkeypatch):
    """Without an abort condition the package still polls: Ctrl-C during a run
    (here: a SIGINT arriving at the first poll) raises KeyboardInterrupt."""
    import _thread

    from transcribe import _model

    polls = []

    def first_poll_interrupts():
        polls.append(1)
        if len(polls) == 1:
            _thread.interrupt_main()  # raises here, inside the callback
        return False

    monkeypatch.setattr(_model, "_never", first_poll_interrupts)
    pcm = np.tile(transcribe.load_audio(need(SAMPLE)), 4)
    with pytest.raises(KeyboardInterrupt):
        model.transcribe(pcm)
    monkeypatch.undo()
    assert polls and model.transcribe(pcm[:16000]).duration == 1.0


# ---- models by name (transcribe-download, the model cache) ----


def _download_tool(lib):
    from transcribe import _catalog

    tool = _catalog._tool(lib.path)
    if tool is None:
        pytest.skip("no transcribe-download (built with libcurl) beside the library")
    return tool


def test_model_by_name_from_the_cache(lib, tmp_path, monkeypatch):
    _download_tool(lib)
    cat = tmp_path / "catalogue.tsv"
    cat.write_text("bundled\tparakeet\tsynth\tnone/bundled-gguf\tbundled-{QUANT}.gguf\tQ8_0\t?\t?\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "bundled-Q8_0.gguf").write_bytes(BUNDLED.read_bytes())
    monkeypatch.setenv("TRANSCRIBE_CATALOGUE", str(cat))
    monkeypatch.setenv("TRANSCRIBE_MODEL_DIR", str(cache))
    monkeypatch.setenv("TRANSCRIBE_MODEL_BASE_URL", "http://127.0.0.1:9")  # never asked
    with transcribe.Model(BUNDLED) as by_path, transcribe.Model("bundled") as by_name:
        assert by_name.transcribe(SAMPLE).text == by_path.transcribe(SAMPLE).text
    # a catalogued name not in the cache: the tool's reason, no file
    (cache / "bundled-Q8_0.gguf").unlink()
    with pytest.raises(transcribe.ModelNotFoundError) as e:
        transcribe.Model("bundled")
    assert "cannot connect" in e.value.message and e.value.status == 3


def test_model_unknown_name_lists_closest(lib, tmp_path, monkeypatch):
    _download_tool(lib)
    monkeypatch.delenv("TRANSCRIBE_CATALOGUE", raising=False)
    monkeypatch.setenv("TRANSCRIBE_MODEL_DIR", str(tmp_path))
    with pytest.raises(transcribe.ModelNotFoundError) as e:
        transcribe.Model("parakeet-tdt-0.6b")
    assert "closest: parakeet-tdt-0.6b-v2, parakeet-tdt-0.6b-v3" in e.value.message


# ---- errors ----


def test_model_errors(lib, tmp_path):
    with pytest.raises(transcribe.ModelNotFoundError) as e:
        transcribe.Model(tmp_path / "missing.gguf")
    assert e.value.status == 3 and isinstance(e.value, FileNotFoundError)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model" * 100)
    with pytest.raises(transcribe.ModelError) as e:
        transcribe.Model(junk)
    assert e.value.status == 4 and e.value.message
    # a well-formed GGUF of an architecture nobody implements
    key, val = b"general.architecture", b"no-such-arch"
    gguf = b"GGUF" + (3).to_bytes(4, "little") + (0).to_bytes(8, "little") + (1).to_bytes(8, "little")
    gguf += len(key).to_bytes(8, "little") + key + (8).to_bytes(4, "little")
    gguf += len(val).to_bytes(8, "little") + val
    arch = tmp_path / "arch.gguf"
    arch.write_bytes(gguf)
    with pytest.raises(transcribe.ModelError) as e:
        transcribe.Model(arch)
    assert e.value.status == 5 and "no-such-arch" in e.value.message
    with pytest.raises(transcribe.InvalidArgumentError):
        transcribe.Model(BUNDLED, threads=-1)
    with pytest.raises(transcribe.InvalidArgumentError):
        transcribe.Model(BUNDLED, device=10_000)
    with pytest.raises(transcribe.InvalidArgumentError):
        transcribe.Model(BUNDLED, device="abacus")
    if not lib.backend_available(5):  # no CUDA in this build
        with pytest.raises(transcribe.BackendError) as e:
            transcribe.Model(BUNDLED, device="cuda")
        assert e.value.status == 8


def test_every_status_has_its_exception_class():
    from transcribe._errors import error_for

    want = {1: (transcribe.InvalidArgumentError, ValueError), 2: (transcribe.UnsupportedError,),
            3: (transcribe.MissingFileError, FileNotFoundError), 4: (transcribe.ModelError,),
            5: (transcribe.ModelError,), 6: (transcribe.ModelError,),
            7: (transcribe.OutOfMemoryError, MemoryError), 8: (transcribe.BackendError,),
            10: (transcribe.UnsupportedLanguageError, transcribe.UnsupportedError),
            11: (transcribe.UnsupportedError,), 12: (transcribe.UnsupportedError,),
            13: (transcribe.AbortedError,), 17: (transcribe.InputTooLongError,),
            18: (transcribe.OutputTruncatedError,), 99: (transcribe.TranscribeError,)}
    for st, classes in want.items():
        e = error_for(st, "why")
        assert all(isinstance(e, c) for c in classes), (st, type(e))
        assert isinstance(e, transcribe.TranscribeError) and e.status == st and e.message == "why"
    e = error_for(3, "gone", model=True)
    assert isinstance(e, transcribe.ModelNotFoundError) and isinstance(e, transcribe.ModelError)
    assert str(e) == "gone [ERR_FILE_NOT_FOUND]"


def test_run_errors(model):
    wav = need(SAMPLE)
    with pytest.raises(transcribe.UnsupportedLanguageError) as e:
        model.transcribe(wav, language="de")
    assert e.value.status == 10 and isinstance(e.value, transcribe.UnsupportedError)
    assert not str(e.value).startswith("transcribe_run:")  # the reason, not our C function
    assert model.transcribe(wav, language="en").text
    # the model's code in another case, as the CLI and the server take it
    assert model.transcribe(wav, language="EN").text == model.transcribe(wav, language="en").text
    with pytest.raises(TypeError):
        model.transcribe(wav, language=5)
    with pytest.raises(transcribe.UnsupportedError) as e:
        model.transcribe(wav, task="translate")
    assert e.value.status == 11
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(wav, task="summarise")
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(wav, diarize="maybe")


def test_input_too_long_and_timestamp_limits():
    from conftest import TINY_CANARY

    with transcribe.Model(need(TINY_CANARY)) as m:
        cap = m.info.capabilities.max_audio_ms
        assert cap > 0 and m.info.capabilities.max_timestamps == "none"
        too_long = np.zeros((cap + 1000) * 16, dtype=np.float32)
        with pytest.raises(transcribe.InputTooLongError) as e:
            m.transcribe(too_long, chunk="off")
        assert e.value.status == 17 and e.value.message
        r = m.transcribe(too_long)  # chunk="auto": split at pauses; silence has no speech
        assert r.chunks == () and r.text == "" and r.segments == ()
        with pytest.raises(transcribe.UnsupportedError) as e:
            m.transcribe(np.zeros(16000, dtype=np.float32), timestamps="word")
        assert e.value.status == 12
        with pytest.raises(transcribe.UnsupportedLanguageError):
            m.transcribe(np.zeros(16000, dtype=np.float32), language="en", target_language="xx")
        # in a batch the too-long input fails alone
        short, long = np.zeros(16000, dtype=np.float32), np.zeros((cap + 1000) * 16, dtype=np.float32)
        out = m.transcribe_batch([short, long], chunk="off", return_exceptions=True)
        assert isinstance(out[0], transcribe.Result)
        assert isinstance(out[1], transcribe.InputTooLongError) and out[1].index == 1
        # the reason the library gave for that input, as its single run gives it
        with pytest.raises(transcribe.InputTooLongError) as single:
            m.transcribe(long, chunk="off")
        assert out[1].message == f"input 1: {single.value.message}", (out[1].message, single.value.message)
        with pytest.raises(transcribe.InputTooLongError) as e:
            m.transcribe_batch([short, long], chunk="off")
        assert e.value.index == 1
        # chunk="auto": the long input is split at its pauses by itself
        out = m.transcribe_batch([short, long])
        assert out[0].chunks is None and out[1].chunks == () and out[1].text == ""


def test_vocabulary_is_accepted_where_the_library_has_it(model, lib):
    from transcribe import _structs as S

    wav = need(SAMPLE)
    if lib.covers(S.RunParams, "vocabulary"):
        assert model.transcribe(wav, vocabulary=["dollars"]).text
    else:
        with pytest.raises(transcribe.UnsupportedError, match="vocabulary"):
            model.transcribe(wav, vocabulary=["dollars"])
        print("vocabulary: this libtranscribe has no run-params vocabulary field")
    assert model.transcribe(wav, vocabulary=None).text


@pytest.mark.parametrize("shape", ["array", "string"])
def test_vocabulary_field_once_the_header_has_it(model, lib, monkeypatch, shape):
    """A mirror with the fields appended (as the header will append them) is
    filled; the library reads only the struct_size its init stamped."""
    import ctypes

    from transcribe import _structs as S

    vocab = [("vocabulary", ctypes.POINTER(ctypes.c_char_p)), ("n_vocabulary", ctypes.c_int32)]
    if shape == "string":
        vocab = [("vocabulary", ctypes.c_char_p)]

    class Newer(S.RunParams):
        _fields_ = vocab

    seen = {}
    real_new = lib.new

    def new(cls, init=None):
        obj = real_new(cls, init)
        if cls is Newer:
            seen["params"] = obj
        return obj

    monkeypatch.setattr(S, "RunParams", Newer)
    monkeypatch.setattr(lib, "covers", lambda cls, field: True)
    monkeypatch.setattr(lib, "new", new)
    wav = need(SAMPLE)
    r = model.transcribe(wav, vocabulary=["dollars", "cents"])
    p = seen["params"]
    if shape == "array":
        assert p.n_vocabulary == 2 and [p.vocabulary[i] for i in range(2)] == [b"dollars", b"cents"]
    else:
        assert p.vocabulary == b"dollars\ncents"
    assert p.struct_size == lib.abi_struct_size(S.ABI_RUN_PARAMS)
    monkeypatch.undo()
    assert r.text == model.transcribe(wav).text


def test_voice_activity_detection(model, lib, tmp_path):
    from transcribe import _structs as S

    wav = need(SAMPLE)
    if not lib.covers(S.RunParams, "vad_model"):
        with pytest.raises(transcribe.UnsupportedError, match="vad"):
            model.transcribe(wav, vad=True)
        pytest.skip("this libtranscribe has no run-param VAD (transcribe_run_params.vad_model)")
    vad = transcribe.VadModel(need(ROOT / "models" / "silero-vad-v4.gguf"))
    pcm = transcribe.load_audio(wav)
    padded = np.concatenate([np.zeros(32000, np.float32), pcm, np.zeros(32000, np.float32)])
    regions = vad.speech(padded)
    assert regions and regions[0][0] >= 1500 and regions[-1][1] <= len(padded) // 16
    r = model.transcribe(padded, vad=vad)
    assert r.text and r.segments[0].start_ms >= 1500  # times on the input's clock
    assert model.transcribe(padded, vad=True, vad_options={"threshold": 0.6}).text
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(padded, vad=vad, vad_options={"loudness": 3})
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(padded, vad=vad, vad_options={"threshold": 2.0})
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(padded, vad_options={"threshold": 0.6})
    vad.close()


def test_closed_model_and_collection(lib):
    m = transcribe.Model(need(BUNDLED))
    with m:
        pass
    assert m.closed
    m.close()  # idempotent
    with pytest.raises(transcribe.InvalidArgumentError, match="closed"):
        m.transcribe(need(SAMPLE))
    m2 = transcribe.Model(BUNDLED)
    fin = m2._finalizer
    ref = weakref.ref(m2)
    del m2
    gc.collect()
    assert ref() is None and not fin.alive  # handles freed on collection


# ---- info, devices, logging ----


def test_info(model):
    i = model.info
    assert (i.family, i.variant) == ("parakeet", "ctc-synth-en")
    assert i.languages == ("en",) and i.translate_targets == ()
    c = i.capabilities
    assert c.sample_rate == 16000 and c.max_timestamps == "token"
    assert not c.translate and "cancellation" in c.features
    assert model.sample_rate == 16000 and "parakeet" in repr(model)
    devs = transcribe.devices()
    assert any(d["kind"] == "cpu" for d in devs)


def test_library_log_reaches_python_logging(model, caplog):
    with caplog.at_level(logging.WARNING, logger="transcribe"):
        model.transcribe(need(SAMPLE), diarize=True)  # not a diarizing model: a warning
    assert any(r.name == "transcribe" and r.levelno == logging.WARNING for r in caplog.records)


def test_library_lookup(lib, tmp_path):
    """TRANSCRIBE_LIBRARY, next to the package, the system's search path."""
    import shutil

    pkg = tmp_path / "site"
    shutil.copytree(BINDINGS / "transcribe", pkg / "transcribe")
    real = os.path.realpath(lib.path)
    probe = "import transcribe; print(transcribe.library_path()); print(transcribe.library_version())"

    def run(env_extra, drop=("TRANSCRIBE_LIBRARY", "LD_LIBRARY_PATH")):
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env.update(env_extra, PYTHONPATH=str(pkg), PYTHONDONTWRITEBYTECODE="1")
        return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              env=env, cwd=str(tmp_path))

    p = run({"TRANSCRIBE_LIBRARY": str(os.path.dirname(real))})  # a folder
    assert p.returncode == 0 and p.stdout.splitlines()[0].startswith(os.path.dirname(real))
    p = run({"LD_LIBRARY_PATH": os.path.dirname(real)})  # as after cmake --install
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] in ("libtranscribe.so.0", "libtranscribe.so")
    shutil.copy(real, pkg / "transcribe" / "libtranscribe.so.0")  # next to the package
    p = run({})
    assert p.returncode == 0 and p.stdout.splitlines()[0] == str(pkg / "transcribe" / "libtranscribe.so.0")
    p = run({"TRANSCRIBE_LIBRARY": str(tmp_path / "nothing-here.so")})
    assert p.returncode != 0 and "LibraryNotFoundError" in p.stderr


# ---- python -m transcribe ----


def run_main(*args):
    env = dict(os.environ, PYTHONPATH=str(BINDINGS), PYTHONDONTWRITEBYTECODE="1",
               TRANSCRIBE_LIBRARY=os.path.abspath(transcribe.library_path()))
    return subprocess.run([sys.executable, "-m", "transcribe", *args], capture_output=True,
                          text=True, env=env, cwd=str(ROOT))


def test_formats_are_the_clis(model, cli):
    wav = need(SAMPLE)
    r = model.transcribe(wav, formats=["txt", "json", "srt", "vtt"],
                         format_options={"file": "x.wav", "model": "m", "max_line_chars": 12})
    for f in ("txt", "json", "srt", "vtt"):
        p = subprocess.run([cli, "-m", str(BUNDLED), "-f", f, "-q", "--max-line-chars", "12",
                            str(wav)], capture_output=True, text=True)
        want = p.stdout
        if f == "json":  # the CLI names the paths it was given
            want = want.replace(json.dumps(str(wav)), '"x.wav"', 1)
            want = want.replace(json.dumps(str(BUNDLED)), '"m"', 1)
        assert r.format(f) == want
    with pytest.raises(KeyError):
        model.transcribe(wav).format("srt")
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(wav, formats=["doc"])
    with pytest.raises(transcribe.InvalidArgumentError):
        model.transcribe(wav, formats=["srt"], format_options={"max_line_chars": 5000})


def test_module_entry_point(model, cli):
    wav = need(SAMPLE)
    p = run_main("-m", str(BUNDLED), "-f", "json", "--tokens", "-q", str(wav))
    assert p.returncode == 0, p.stderr
    # the library renders both: the CLI's bytes, subtitle cues included
    want = subprocess.run([cli, "-m", str(BUNDLED), "-f", "json", "--tokens", "-q", str(wav)],
                          capture_output=True, text=True)
    assert p.stdout == want.stdout
    d = json.loads(p.stdout)
    assert d.pop("file") == str(wav) and d.pop("model") == str(BUNDLED)
    assert d.pop("cues")
    assert_same_as_cli(d, cli_json(cli, BUNDLED, wav))
    p = run_main("-m", str(BUNDLED), str(wav))
    assert p.returncode == 0 and p.stdout.strip() == model.transcribe(wav).text
    assert "timings" in p.stderr
    p = run_main("-m", str(BUNDLED), "-f", "srt", "-q", str(wav))
    assert p.stdout.startswith("1\n00:00:00,000 --> 00:00:04,942\nit costs")
    p = run_main("-m", str(BUNDLED), "-l", "de", str(wav))
    assert p.returncode == 1 and "ERR_UNSUPPORTED_LANGUAGE" in p.stderr
    assert run_main("--bogus").returncode == 1
    assert run_main("-m", str(ROOT / "none.gguf"), str(wav)).returncode == 1
    p = run_main("--version")
    assert p.returncode == 0 and transcribe.__version__ in p.stdout


def test_ctrl_c_from_outside_stops_a_run(model, monkeypatch):
    """A real SIGINT that arrives while the library computes is handled when
    the main thread next runs Python: at the entry of the abort callback,
    before its try. It must still stop the run with KeyboardInterrupt (not
    "Exception ignored on calling ctypes callback" and AbortedError)."""
    import signal
    import time

    from transcribe import _model

    first_poll = threading.Event()

    def poll():
        first_poll.set()
        return False

    def send_sigint():
        if first_poll.wait(30):
            time.sleep(0.01)  # the main thread is back in C
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(_model, "_never", poll)
    # long enough that the run is still in C when the signal comes: the
    # tiny bundled model takes about 50 ms for 8 copies on a warm machine
    pcm = np.tile(transcribe.load_audio(need(SAMPLE)), 64)
    killer = threading.Thread(target=send_sigint)
    killer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            model.transcribe(pcm)
    finally:
        killer.join()
    monkeypatch.undo()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    assert model.transcribe(pcm[:16000]).duration == 1.0


def test_oversized_integers_and_nul_in_paths_are_refused(lib, model, tmp_path):
    """ctypes would truncate an integer to the C int silently (threads=2**40
    became 0, rate=2**40 became 16 kHz) and cut a path at a NUL: both are
    refused by name instead."""
    wav = need(SAMPLE)
    for kw in ({"threads": 2**40}, {"threads": -1}, {"n_ctx": 2**32}, {"threads": 1.5}):
        with pytest.raises(transcribe.InvalidArgumentError, match=next(iter(kw))):
            transcribe.Model(need(BUNDLED), **kw)
    with pytest.raises(transcribe.InvalidArgumentError, match="rate"):
        transcribe.load_audio(wav, rate=2**40)
    with pytest.raises(transcribe.InvalidArgumentError, match="rate"):
        transcribe.load_audio(wav, rate=0)
    with pytest.raises(transcribe.InvalidArgumentError, match="NUL"):
        transcribe.Model(str(BUNDLED) + "\0.junk")
    with pytest.raises(transcribe.InvalidArgumentError, match="NUL"):
        transcribe.load_audio(str(wav) + "\0.junk")
    with pytest.raises(transcribe.InvalidArgumentError, match="NUL"):
        model.transcribe(str(wav) + "\0.junk")
    assert len(transcribe.load_audio(wav, rate=8000)) > 0  # in range: fine
