"""``python -m transcribe`` run as a user runs it, against the C CLI
(issue 31 item 16): '-' reads standard input, no -m means the bundled model,
a --vad-* flag alone implies --vad and every --vad-* flag is in --help, and
Ctrl-C prints the partial transcript and exits 1. ctest: test_python_api."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import wave

import pytest

import transcribe
from conftest import BINDINGS, BUNDLED, ROOT, SAMPLE, need


def env_without_model():
    env = dict(os.environ, PYTHONPATH=str(BINDINGS), PYTHONDONTWRITEBYTECODE="1",
               TRANSCRIBE_LIBRARY=os.path.abspath(transcribe.library_path()))
    env.pop("TRANSCRIBE_MODEL", None)
    return env


def py_main(args, cwd, **kw):
    return subprocess.run([sys.executable, "-m", "transcribe", *args], capture_output=True,
                          env=env_without_model(), cwd=str(cwd), **kw)


def c_cli(cli, args, cwd, **kw):
    return subprocess.run([cli, *args], capture_output=True, env=env_without_model(),
                          cwd=str(cwd), **kw)


def test_dash_reads_standard_input_like_the_cli(lib, cli, tmp_path):
    audio = need(SAMPLE).read_bytes()
    args = ["-m", str(need(BUNDLED)), "-f", "json", "-q", "-"]
    want = c_cli(cli, args, tmp_path, input=audio)
    assert want.returncode == 0, want.stderr
    got = py_main(args, tmp_path, input=audio)
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout == want.stdout
    assert json.loads(got.stdout)["file"] == "-"
    got = py_main(args, tmp_path, input=b"")
    assert got.returncode == 1
    assert "standard input is empty" in got.stderr.decode()


def test_undecodable_standard_input_names_no_temporary_file(lib, tmp_path):
    """The package decodes bytes through a temporary file of its own: no
    message (exception or library log line) names it."""
    got = py_main(["-m", str(need(BUNDLED)), "-"], tmp_path, input=b"garbage")
    err = got.stderr.decode()
    assert got.returncode == 1
    assert "cannot read audio from 7 bytes" in err
    assert "transcribe-" not in err and tempfile.gettempdir() not in err, err


def test_no_model_means_the_bundled_model_like_the_cli(lib, cli, tmp_path):
    wav = str(need(SAMPLE))
    want = c_cli(cli, ["-f", "srt", wav], tmp_path, text=True)
    assert want.returncode == 0, want.stderr
    got = py_main(["-f", "srt", wav], tmp_path, text=True)
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    line = f"using bundled model {need(BUNDLED)}\n"
    assert line in want.stderr and got.stderr.startswith(line), got.stderr


def test_a_vad_setting_alone_implies_vad_like_the_cli(lib, cli, tmp_path):
    wav = str(need(SAMPLE))
    need(ROOT / "models" / "silero-vad-v4.gguf")
    args = ["-m", str(need(BUNDLED)), "-f", "json", "-q", "--vad-threshold", "0.3", wav]
    want = c_cli(cli, args, tmp_path, text=True)
    assert want.returncode == 0, want.stderr
    got = py_main(args, tmp_path, text=True)
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    plain = py_main(args[:4] + [wav], tmp_path, text=True).stdout
    assert got.stdout != plain  # the VAD ran: its speech region trims the segment


def test_help_lists_every_vad_flag_of_the_cli(cli, tmp_path):
    c_help = c_cli(cli, ["--help"], tmp_path, text=True)
    flags = sorted(set(re.findall(r"--vad(?:-[a-z]+)*", c_help.stdout + c_help.stderr)))
    assert len(flags) >= 8, flags
    got = py_main(["--help"], tmp_path, text=True)
    assert got.returncode == 0
    missing = [f for f in flags if not re.search(rf"(?m)^\s+{re.escape(f)}\b", got.stdout)]
    assert missing == []
    assert "implies --vad" in got.stdout


def test_diarizer_and_spec_k_drafts_like_the_cli(lib, cli, tmp_path):
    """--diarizer FILE labels the words and segments as the C CLI's does
    (the same JSON); a file that is no diarizer is refused with its words."""
    model = str(need(ROOT / "tests" / "data" / "parakeet" / "tiny-tdt" / "parakeet-tiny-tdt-F32.gguf"))
    diar = str(need(ROOT / "tests" / "data" / "sortformer" / "sortformer-tiny-ref-Q8_0.gguf"))
    wav = str(need(ROOT / "samples" / "jfk.wav"))
    args = ["-m", model, "-f", "json", "-q", "--timestamps", "word", "--diarizer", diar,
            "--spec-k-drafts", "4", wav]
    want = c_cli(cli, args, tmp_path, text=True)
    assert want.returncode == 0, want.stderr
    got = py_main(args, tmp_path, text=True)
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert '"speaker":"S' in got.stdout
    bad = ["-m", model, "-q", "--diarizer", model, wav]
    want = c_cli(cli, bad, tmp_path, text=True)
    got = py_main(bad, tmp_path, text=True)
    assert want.returncode == got.returncode == 1
    assert f"error: --diarizer {model} is not a diarization model" in got.stderr
    assert got.stderr.strip() == want.stderr.strip()


def long_wav(tmp_path, minutes):
    """The sample repeated for about `minutes`: a run long enough to interrupt."""
    with wave.open(str(need(SAMPLE)), "rb") as w:
        params, frames = w.getparams(), w.readframes(w.getnframes())
    path = tmp_path / "long.wav"
    with wave.open(str(path), "wb") as w:
        w.setparams(params)
        w.writeframes(frames * int(minutes * 60 * params.framerate / params.nframes))
    return path


def interrupt(cmd, cwd):
    """Runs cmd, sends SIGINT once it is transcribing, returns (rc, stdout,
    stderr); None when the run ended before the signal could be sent."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env_without_model(), cwd=str(cwd))
    # the model line comes before the model loads; the audio is read and
    # the run starts right after (the load takes milliseconds)
    first = p.stderr.readline()
    assert first.startswith("using bundled model"), first
    time.sleep(1.0)
    if p.poll() is not None:
        out, err = p.communicate()
        return None
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=300)
    return p.returncode, out, first + err


def test_ctrl_c_prints_the_partial_transcript_like_the_cli(lib, cli, tmp_path):
    wav = str(long_wav(tmp_path, 20))
    args = ["-f", "json", wav]
    for name, cmd in (("C CLI", [cli, *args]),
                      ("python -m transcribe", [sys.executable, "-m", "transcribe", *args])):
        got = interrupt(cmd, tmp_path)
        if got is None:
            pytest.skip(f"{name} finished 20 minutes of audio before the interrupt")
        rc, out, err = got
        assert "interrupted: printing the partial transcript" in err, (name, err)
        assert "Traceback" not in err and "Exception ignored" not in err, (name, err)
        assert rc == 1, (name, rc, err)
        d = json.loads(out)  # the partial result, whole JSON
        assert d["file"] == wav and d["duration"] > 1000, name


def test_a_cut_wav_is_refused_like_the_cli_and_the_server(lib, cli, tmp_path):
    """One input rule (issue 31 item 12): a WAV whose data chunk runs past
    the end of the file is refused, with the CLI's reason, by the C CLI,
    python -m transcribe and Model.transcribe alike."""
    whole = need(SAMPLE).read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(whole[: len(whole) // 2])
    args = ["-m", str(need(BUNDLED)), str(cut)]
    want = c_cli(cli, args, tmp_path)
    got = py_main(args, tmp_path)
    reason = "the WAV file is cut short (its data chunk runs past the end)"
    assert want.returncode == 1 and reason in want.stderr.decode(), want.stderr
    assert got.returncode == 1 and reason in got.stderr.decode(), got.stderr
    assert got.stdout == b""
    with transcribe.Model(str(need(BUNDLED))) as model:
        with pytest.raises(transcribe.InvalidArgumentError, match="cut short"):
            model.transcribe(str(cut))
        with pytest.raises(transcribe.InvalidArgumentError, match="cut short"):
            model.transcribe(cut.read_bytes())
        assert model.transcribe(str(need(SAMPLE))).text  # the whole file still reads


def test_output_that_names_an_input_is_refused_like_the_cli(lib, cli, tmp_path):
    """-o naming the input audio or the model is refused and the input kept
    whole; a failed run leaves -o as it was; no temporary file is left."""
    wav = tmp_path / "in.wav"
    wav.write_bytes(need(SAMPLE).read_bytes())
    model = tmp_path / "m.gguf"
    model.write_bytes(need(BUNDLED).read_bytes())
    sizes = (wav.stat().st_size, model.stat().st_size)
    for run in (py_main, lambda a, c, **kw: c_cli(cli, a, c, **kw)):
        got = run(["-q", "-m", "m.gguf", "-o", "in.wav", "in.wav"], tmp_path, text=True)
        assert got.returncode == 1 and "in.wav" in got.stderr, got.stderr
        got = run(["-q", "-m", "m.gguf", "-o", "./m.gguf", "in.wav"], tmp_path, text=True)
        assert got.returncode == 1 and "m.gguf" in got.stderr, got.stderr
        assert (wav.stat().st_size, model.stat().st_size) == sizes
        (tmp_path / "keep.txt").write_text("keep\n")
        got = run(["-q", "-m", "m.gguf", "-o", "keep.txt", "missing.wav"], tmp_path, text=True)
        assert got.returncode == 1
        assert (tmp_path / "keep.txt").read_text() == "keep\n"
        got = run(["-q", "-m", "m.gguf", "-o", "keep.txt", "in.wav"], tmp_path, text=True)
        assert got.returncode == 0, got.stderr
        assert (tmp_path / "keep.txt").read_text() == got.stdout
    assert not [p for p in os.listdir(tmp_path) if ".partial-" in p]


def test_subtitles_of_several_inputs_are_refused_like_the_cli(lib, cli, tmp_path):
    wav = str(need(SAMPLE))
    for fmt in ("srt", "vtt"):
        want = c_cli(cli, ["-q", "-f", fmt, wav, wav], tmp_path, text=True)
        got = py_main(["-q", "-f", fmt, wav, wav], tmp_path, text=True)
        assert want.returncode == got.returncode == 1, (want.stderr, got.stderr)
        assert got.stdout == "" and f"-f {fmt} prints one input's cues" in got.stderr


def test_threads_range_like_the_cli(lib, cli, tmp_path):
    wav = str(need(SAMPLE))
    for bad in ("0", "1025"):
        want = c_cli(cli, ["-q", "--threads", bad, wav], tmp_path, text=True)
        got = py_main(["-q", "--threads", bad, wav], tmp_path, text=True)
        assert want.returncode == got.returncode == 1, (want.stderr, got.stderr)
        assert "--threads must be an integer from 1 to 1024" in got.stderr
