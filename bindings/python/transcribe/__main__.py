"""``python -m transcribe FILE...``: the CLI's common flags over the package.

Mirrors ``transcribe`` (tools/cli): -m, -f txt|json|srt|vtt, --tokens, -o,
-l, -t, --target-language, --timestamps, --threads, --n-ctx, --kv-type,
--backend, --device, --diarize/--no-diarize, --pnc/--no-pnc, --itn,
--raw-tokens, --chunk, --chunk-max-s, --vad, --vad-model, --vad-threshold
(and the other --vad-* settings), --vocabulary, --max-line-chars,
--max-cue-ms, -q, --version. The four formats are rendered by the library
(``transcribe_format_result``): the bytes the CLI and the server print.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Optional, Sequence

from . import (
    Model,
    TranscribeError,
    __version__,
    library_version,
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # one line and a hint, exit 1 (as the C CLI)
        sys.stderr.write(f"error: {message}\nrun '{self.prog} --help' for the options\n")
        raise SystemExit(1)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m transcribe", description="Transcribes speech in audio files.")
    p.add_argument("audio", nargs="*", help="audio files (WAV; FLAC/MP3/Ogg with libsndfile)")
    p.add_argument("-m", "--model", help="model file (default: $TRANSCRIBE_MODEL)")
    p.add_argument("-f", "--format", default="txt", choices=["txt", "json", "srt", "vtt"])
    p.add_argument("--tokens", action="store_true", help="json: include per-token rows")
    p.add_argument("--max-line-chars", type=int, default=0,
                   help="srt/vtt: most characters in a cue (1..1000; default 84)")
    p.add_argument("--max-cue-ms", type=int, default=0,
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
    p.add_argument("--vad", action="store_true", help="transcribe only detected speech (Silero VAD)")
    p.add_argument("--vad-model", help="VAD model file (default: the bundled silero-vad-v4.gguf)")
    for flag, kind in (("threshold", float), ("neg-threshold", float), ("min-speech-ms", int),
                       ("min-silence-ms", int), ("speech-pad-ms", int), ("max-speech-s", float),
                       ("window", int)):
        p.add_argument(f"--vad-{flag}", type=kind, default=None, help=argparse.SUPPRESS)
    p.add_argument("--vocabulary", help="comma list of terms to bias towards (where supported)")
    p.add_argument("-q", "--quiet", action="store_true", help="only error messages on stderr")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
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
    model_path = o.model or os.environ.get("TRANSCRIBE_MODEL")
    if not model_path:
        sys.stderr.write("error: no model: pass -m MODEL.gguf or set TRANSCRIBE_MODEL\n")
        return 1
    if o.threads is not None and o.threads < 0:
        sys.stderr.write(f"error: --threads must be 0 or more (got {o.threads})\n")
        return 1
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
    vad = (o.vad_model or True) if (o.vad or o.vad_model) else None
    for flag, v, lo, hi in (("--max-line-chars", o.max_line_chars, 1, 1000),
                            ("--max-cue-ms", o.max_cue_ms, 100, 3600000)):
        if v and not lo <= v <= hi:
            sys.stderr.write(f"error: {flag} must be an integer in {lo}..{hi} (got {v})\n")
            return 1

    def options(path: str) -> dict:
        return {"file": path, "model": model_path, "tokens": o.tokens,
                "header": o.format == "txt" and len(o.audio) > 1,
                "max_line_chars": o.max_line_chars, "max_cue_ms": o.max_cue_ms}

    rc = 0
    out_file = None
    try:
        with Model(model_path, threads=o.threads, device=device, n_ctx=o.n_ctx, kv_type=o.kv_type) as model:
            if o.output:
                out_file = open(o.output, "w", encoding="utf-8")
            for path in o.audio:
                try:
                    r = model.transcribe(
                        path,
                        language=o.language,
                        task=task,
                        target_language=o.target_language,
                        timestamps=o.timestamps,
                        vocabulary=vocab,
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
                    )
                except TranscribeError as e:
                    sys.stderr.write(f"error: {path}: {e}\n")
                    rc = 1
                    continue
                out = r.formatted[o.format]  # a split file's too: joined by the library
                sys.stdout.write(out)
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
    except TranscribeError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    except OSError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    finally:
        if out_file:
            out_file.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
