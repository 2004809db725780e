"""``python -m transcribe FILE...``: the CLI's common flags over the package.

Mirrors ``transcribe`` (tools/cli): -m, -f txt|json|srt|vtt, --tokens, -o,
-l, -t, --target-language, --timestamps, --threads, --n-ctx, --kv-type,
--backend, --device, --diarize/--no-diarize, --pnc/--no-pnc, --itn,
--raw-tokens, --chunk, --chunk-max-s, --vad, --vad-model, --vad-threshold
(and the other --vad-* settings), --vocabulary, --diarizer,
--spec-k-drafts, --max-line-chars, --max-cue-ms, -q, --version. The four formats are rendered by the library
(``transcribe_format_result``): the bytes the CLI and the server print.
As in the CLI: ``-`` reads the audio from standard input; without ``-m``
the model is ``$TRANSCRIBE_MODEL``, else the bundled model (the first
``.gguf`` by name in the bundled models' folder, ``_paths.data_dirs``); any
``--vad-*`` flag implies ``--vad``; Ctrl-C stops the run, prints the partial
transcript and exits 1 (a second Ctrl-C kills the process).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional, Sequence

from . import (
    AbortedError,
    Model,
    TranscribeError,
    __version__,
    _lib,
    _paths,
    library_version,
)
from ._vad import VAD_FILE, default_vad_path

_VAD_FLAGS = (  # flag, type, help (the C CLI's words)
    ("threshold", float, "P", "speech onset probability in [0, 1] (default 0.5)"),
    ("neg-threshold", float, "P", "offset probability (default threshold - 0.15)"),
    ("min-speech-ms", int, "N", "drop shorter regions (default 250)"),
    ("min-silence-ms", int, "N", "shorter pauses do not end a region (default 100)"),
    ("speech-pad-ms", int, "N", "padding on each side of a region (default 30)"),
    ("max-speech-s", float, "S", "cut longer regions at a pause (default 0 = no limit)"),
    ("window", int, "N", "samples per VAD window: 512, 1024 or 1536 (default 512)"),
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # one line and a hint, exit 1 (as the C CLI)
        sys.stderr.write(f"error: {message}\nrun '{self.prog} --help' for the options\n")
        raise SystemExit(1)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m transcribe",
                description="Transcribes speech in audio files ('-' reads standard input).")
    p.add_argument("audio", nargs="*",
                   help="audio files (WAV; FLAC/MP3/Ogg with libsndfile); '-': standard input")
    p.add_argument("-m", "--model", help="model file; default: $TRANSCRIBE_MODEL, else the bundled "
                   "demo model (an English number/phrase model, not for real speech)")
    p.add_argument("-f", "--format", default="txt", choices=["txt", "json", "srt", "vtt"])
    p.add_argument("--tokens", action="store_true", help="json: include per-token rows")
    p.add_argument("--max-line-chars", type=int, default=None,
                   help="srt/vtt: most characters in a cue (1..1000; default 84)")
    p.add_argument("--max-cue-ms", type=int, default=None,
                   help="srt/vtt: longest cue in ms (100..3600000; default 7000)")
    p.add_argument("-o", "--output", help="also write the output to this file")
    p.add_argument("-l", "--language", help="language hint (default or 'auto': detect)")
    p.add_argument("-t", "--translate", action="store_true", help="translate instead of transcribe")
    p.add_argument("--target-language", help="translation target (implies -t)")
    p.add_argument("--timestamps", default="auto", choices=["auto", "none", "segment", "word", "token"])
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: library)")
    p.add_argument("--n-ctx", type=int, default=None, help="decoder context cap, 0 = model maximum")
    p.add_argument("--kv-type", default="auto", choices=["auto", "f32", "f16"])
    p.add_argument("--backend", default=None, help="auto|cpu|cpu_accel|metal|vulkan|cuda|rocm")
    p.add_argument("--device", type=int, default=None, help="exact device index")
    p.add_argument("--diarize", dest="diarize", action="store_true", default=None)
    p.add_argument("--no-diarize", dest="diarize", action="store_false")
    p.add_argument("--pnc", dest="pnc", action="store_true", default=None)
    p.add_argument("--no-pnc", dest="pnc", action="store_false")
    p.add_argument("--itn", action="store_true", default=None)
    p.add_argument("--raw-tokens", action="store_true", help="keep model control tags in the text")
    p.add_argument("--chunk", default="auto", choices=["auto", "on", "off"],
                   help="long audio: split at pauses when the model needs it (auto), always, never")
    p.add_argument("--chunk-max-s", type=int, default=30, help="longest piece in seconds")
    v = p.add_argument_group("voice activity detection (Silero VAD v4; any --vad-* flag implies --vad)")
    v.add_argument("--vad", action="store_true",
                   help="transcribe only the speech regions (times stay on the file's clock)")
    v.add_argument("--vad-model", metavar="FILE", help=f"VAD model (default: the bundled {VAD_FILE})")
    for flag, kind, metavar, text in _VAD_FLAGS:
        v.add_argument(f"--vad-{flag}", type=kind, default=None, metavar=metavar, help=text)
    p.add_argument("--vocabulary", help="comma list of terms to bias towards (where supported)")
    p.add_argument("--diarizer", metavar="FILE",
                   help="label every word and segment with a speaker from this diarization "
                        "model (Sortformer), run over the same audio")
    p.add_argument("--spec-k-drafts", type=int, default=None, metavar="N",
                   help="speculative decoding: up to N drafted tokens per decoder step, same "
                        "output (-1 = default, off; 0 = off)")
    p.add_argument("-q", "--quiet", action="store_true", help="only error messages on stderr")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    return p


def _bundled_model() -> Optional[str]:
    """The first .gguf by name (not the VAD model) in the first bundled
    models' folder that has one, as the C CLI's default."""
    try:
        lib_path: Optional[str] = _lib.get().path
    except TranscribeError:
        lib_path = None
    for d in _paths.data_dirs(lib_path):
        try:
            names = sorted(n for n in os.listdir(d)
                           if n.endswith(".gguf") and not n.startswith("silero-vad"))
        except OSError:
            continue
        if names:
            return str(Path(d) / names[0])
    return None


def _resolve_model(o: argparse.Namespace) -> Optional[str]:
    """-m, else $TRANSCRIBE_MODEL, else the bundled model (the C CLI's order
    and messages)."""
    if o.model:
        return str(o.model)
    env = os.environ.get("TRANSCRIBE_MODEL")
    if env:
        if not o.quiet:
            sys.stderr.write(f"using model {env} (from TRANSCRIBE_MODEL)\n")
        return env
    bundled = _bundled_model()
    if bundled:
        if not o.quiet:
            sys.stderr.write(f"using bundled model {bundled}\n")
        return bundled
    sys.stderr.write("error: no model: pass -m MODEL.gguf, set TRANSCRIBE_MODEL, or put a .gguf "
                     "file in the bundled models' folder (models/ of the checkout)\n")
    return None


class _Interrupt:
    """Ctrl-C as in the C CLI: the first stops the run in progress (the
    library's abort callback sees the event), whose partial transcript is
    then printed, and no further input starts; the second kills the process
    (the default action comes back). Outside a run (reading standard input)
    it raises KeyboardInterrupt to stop the wait."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.in_run = False
        self._prev: Any = None

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.event.set()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if not self.in_run:
            raise KeyboardInterrupt

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._prev = signal.signal(signal.SIGINT, self._on_sigint)

    def uninstall(self) -> None:
        if self._prev is not None:
            signal.signal(signal.SIGINT, self._prev)
            self._prev = None

    @property
    def pending(self) -> bool:
        return self.event.is_set()


def _output_not_input(output: str, inputs: list) -> bool:
    """-o must not name an input (audio, model, diarizer, VAD model): writing there destroys it."""
    for path in inputs:
        if not path or path == "-":
            continue
        try:
            if os.path.samefile(output, path):
                sys.stderr.write(f"error: -o {output} is an input ({path}); choose another output file\n")
                return False
        except OSError:
            pass
    return True


def _open_output(path: str):
    """A regular (or new) file is written as a temporary file beside it and renamed over it at
    the end, so a failed run leaves it as it was; a device or FIFO is written in place."""
    if os.path.exists(path) and not os.path.isfile(path):
        return open(path, "w", encoding="utf-8"), None
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".partial-", dir=os.path.dirname(path) or ".")
    mask = os.umask(0)
    os.umask(mask)
    try:
        os.chmod(tmp, os.stat(path).st_mode & 0o7777 if os.path.exists(path) else 0o666 & ~mask)
    except OSError:
        pass
    return os.fdopen(fd, "w", encoding="utf-8"), tmp


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C before the model is loaded
        sys.stderr.write("interrupted\n")
        return 130


def _main(argv: Optional[Sequence[str]] = None) -> int:
    o = _parser().parse_args(argv)
    if o.version:
        print(f"transcribe (python) {__version__}, library {library_version()}")
        return 0
    logging.basicConfig(
        level=logging.ERROR if o.quiet else logging.INFO, format="[%(levelname)s] %(message)s"
    )
    if not o.audio:
        sys.stderr.write("error: no audio file given\nrun 'python -m transcribe --help' for the options\n")
        return 1
    if o.format in ("srt", "vtt") and len(o.audio) > 1:  # cue numbers would restart mid-stream
        sys.stderr.write(f"error: -f {o.format} prints one input's cues; run one input at a time\n"
                         "run 'python -m transcribe --help' for the options\n")
        return 1
    if o.threads is not None:  # the C CLI's range and cap
        if not 1 <= o.threads <= 1024:
            sys.stderr.write(f"error: --threads must be an integer from 1 to 1024 (got '{o.threads}')\n"
                             "run 'python -m transcribe --help' for the options\n")
            return 1
        cores = os.cpu_count() or 1
        if o.threads > 4 * cores:
            sys.stderr.write(f"warning: --threads {o.threads} is more than 4x the {cores} cores; "
                             f"using {4 * cores}\n")
            o.threads = 4 * cores
    device = o.device if o.device is not None else o.backend
    task = "translate" if (o.translate or o.target_language) else "transcribe"
    vocab = [t.strip() for t in o.vocabulary.split(",") if t.strip()] if o.vocabulary else None
    vad_options = {
        name: getattr(o, "vad_" + name)
        for name in ("threshold", "neg_threshold", "min_speech_ms", "min_silence_ms",
                     "speech_pad_ms", "max_speech_s")
        if getattr(o, "vad_" + name) is not None
    }
    if o.vad_window is not None:
        vad_options["window_samples"] = o.vad_window
    for flag, v, lo, hi in (("--max-line-chars", o.max_line_chars, 1, 1000),
                            ("--max-cue-ms", o.max_cue_ms, 100, 3600000)):
        if v is not None and not lo <= v <= hi:  # 0 too: the C CLI's ranges
            sys.stderr.write(f"error: {flag} must be an integer in {lo}..{hi} (got {v})\n")
            return 1
    model_path = _resolve_model(o)
    if not model_path:
        return 1
    vad = None
    if o.vad or o.vad_model or vad_options:  # any --vad-* flag implies --vad
        vad = o.vad_model or default_vad_path()
        if vad is None:
            sys.stderr.write(f"error: no VAD model: pass --vad-model FILE or set "
                             f"TRANSCRIBE_VAD_MODEL ({VAD_FILE})\n")
            return 1
        if not o.vad_model and not o.quiet:
            sys.stderr.write(f"using bundled VAD model {vad}\n")

    def options(path: str) -> dict:
        return {"file": path, "model": model_path, "tokens": o.tokens,
                "header": o.format == "txt" and len(o.audio) > 1,
                "max_line_chars": o.max_line_chars, "max_cue_ms": o.max_cue_ms}

    if o.output and not _output_not_input(o.output, list(o.audio) + [model_path, o.diarizer, o.vad_model]):
        return 1
    rc = 0
    out_file = None
    out_tmp: Optional[str] = None
    diarizer: Optional[Model] = None
    stop = _Interrupt()
    try:
        with Model(model_path, threads=o.threads, device=device, n_ctx=o.n_ctx, kv_type=o.kv_type) as model:
            if o.diarizer:
                try:
                    diarizer = Model(o.diarizer, threads=o.threads, device=device)
                except TranscribeError as e:
                    sys.stderr.write(f"error: cannot load diarizer {o.diarizer}: {e}\n")
                    return 1
                if "diarization" not in diarizer.info.capabilities.features:
                    diarizer.close()
                    sys.stderr.write(f"error: --diarizer {o.diarizer} is not a diarization model\n")
                    return 1
            if o.output:
                out_file, out_tmp = _open_output(o.output)
            stop.install()
            for path in o.audio:
                if stop.pending:
                    break
                audio: Any = path
                if path == "-":  # standard input: the bytes of an audio file
                    try:
                        audio = sys.stdin.buffer.read()
                    except KeyboardInterrupt:
                        rc = 1
                        break
                    if not audio:
                        sys.stderr.write("error: cannot read audio '-': standard input is empty (0 bytes)\n")
                        rc = 1
                        continue
                error: Optional[TranscribeError] = None
                stop.in_run = True
                try:
                    r = model.transcribe(
                        audio,
                        language=o.language,
                        task=task,
                        target_language=o.target_language,
                        timestamps=o.timestamps,
                        vocabulary=vocab,
                        abort=stop.event,
                        diarize=o.diarize,
                        pnc=o.pnc,
                        itn=o.itn,
                        keep_special_tags=o.raw_tokens,
                        vad=vad,
                        vad_options=vad_options or None,
                        chunk=o.chunk,
                        chunk_max_s=o.chunk_max_s,
                        formats=[o.format],
                        format_options=options(path),
                        spec_k_drafts=o.spec_k_drafts,
                        diarizer=diarizer,
                    )
                except AbortedError as e:
                    error, r = e, e.result
                except TranscribeError as e:
                    error, r = e, None
                finally:
                    stop.in_run = False
                if stop.pending:
                    sys.stderr.write("interrupted: printing the partial transcript\n")
                if error is not None:
                    sys.stderr.write(f"error: {path}: {error}\n")
                    rc = 1
                if r is None:
                    continue
                out = r.formatted.get(o.format, "")  # a split file's too: joined by the library
                sys.stdout.write(out)
                sys.stdout.flush()
                if out_file:
                    out_file.write(out)
                if r.truncated:
                    sys.stderr.write(f"error: {path}: output truncated (model's output cap)\n")
                    rc = 1
                if not o.quiet:
                    t = r.timings
                    sys.stderr.write(
                        f"[info] timings: load={t.load_ms:.2f} ms  mel={t.mel_ms:.2f} ms  "
                        f"encode={t.encode_ms:.2f} ms  decode={t.decode_ms:.2f} ms  "
                        f"total={t.total_ms:.2f} ms\n"
                    )
            if stop.pending:
                rc = 1
    except TranscribeError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    except OSError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    finally:
        stop.uninstall()
        if out_file:
            wrote = out_file.tell() > 0
            out_file.close()
            if out_tmp:  # renamed over -o when the run succeeded or wrote something
                if rc == 0 or wrote:
                    os.replace(out_tmp, o.output)
                else:
                    os.remove(out_tmp)
        if diarizer is not None:
            diarizer.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
