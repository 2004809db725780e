"""Result types: plain dataclasses copied out of the session.

Times are kept in integer milliseconds, exactly as the library reports them
(``start_ms``/``end_ms``), with ``start``/``end`` in seconds for
faster-whisper habits. Like the CLI, every time is clamped into the audio's
length and the text is trimmed, so ``Result.to_dict()`` equals the
corresponding fields of ``transcribe -f json --tokens``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple


@dataclass(frozen=True)
class Word:
    """One word with its times."""

    start_ms: int
    end_ms: int
    text: str
    segment_index: int = 0
    speaker_id: int = 0  # 1-based when the run was diarized (diarizer=...), else 0

    @property
    def start(self) -> float:
        """Start in seconds."""
        return self.start_ms / 1000.0

    @property
    def end(self) -> float:
        """End in seconds."""
        return self.end_ms / 1000.0


@dataclass(frozen=True)
class Token:
    """One model token; ``p`` is a confidence hint (NaN when the family has none)."""

    id: int
    text: str
    start_ms: int
    end_ms: int
    p: float = math.nan
    segment_index: int = 0
    word_index: int = -1

    @property
    def start(self) -> float:
        return self.start_ms / 1000.0

    @property
    def end(self) -> float:
        return self.end_ms / 1000.0


@dataclass(frozen=True)
class Segment:
    """A stretch of transcript: times, text, speaker (diarized runs) and words."""

    start_ms: int
    end_ms: int
    text: str
    speaker_id: int = 0
    words: Tuple[Word, ...] = ()

    @property
    def start(self) -> float:
        """Start in seconds."""
        return self.start_ms / 1000.0

    @property
    def end(self) -> float:
        """End in seconds."""
        return self.end_ms / 1000.0

    @property
    def speaker(self) -> Optional[str]:
        """"S1", "S2", ... when diarization attributed the segment, else None."""
        return f"S{self.speaker_id}" if self.speaker_id > 0 else None


@dataclass(frozen=True)
class SpeakerTurn:
    """A speaker row of a diarized run (may overlap others; 0/0 times when untimed)."""

    start_ms: int
    end_ms: int
    speaker_id: int
    p: float = math.nan

    @property
    def speaker(self) -> str:
        return f"S{self.speaker_id}"


@dataclass(frozen=True)
class Chunk:
    """A piece of long audio run by itself (``chunk=``): its span on the
    file's clock, how it ends ("pause", "forced" cut, "end"), the status text."""

    start_ms: int
    end_ms: int
    end: str
    status: str


@dataclass(frozen=True)
class Timings:
    """Milliseconds: model load, and the run's front end, encoder, decoder;
    ``total_ms`` is the wall time of the call as seen from Python."""

    load_ms: float = 0.0
    mel_ms: float = 0.0
    encode_ms: float = 0.0
    decode_ms: float = 0.0
    total_ms: float = 0.0


@dataclass(frozen=True)
class Result:
    """One transcribed input.

    Attributes:
        text: the transcript (trimmed).
        language: the language the model detected ("" when a language was
            given or the model has no language identification).
        duration: audio length in seconds.
        segments: Segment rows, each with its words.
        words: every word in order (also reachable through the segments).
        tokens: Token rows.
        timestamps: the granularity produced: "none", "segment", "word" or "token".
        speakers: speaker rows of a diarized run.
        truncated: decoding hit the model's context or generation cap; the
            result is the part before it.
        raw_text: the model's decoded output before clean-up.
        timings: stage timings (summed over the pieces of split audio).
        chunks: the pieces when the audio was split at pauses, else None.
        emotion, audio_event: the audio tags the model gave (SenseVoice:
            "NEUTRAL", "HAPPY", ...; "Speech", "BGM", ...), "" when none.
        formatted: the formats asked for (``formats=``), rendered by the
            library: {"srt": "1\\n00:00:00,000 --> ..."}; see ``format()``.
    """

    text: str
    language: str
    duration: float
    segments: Tuple[Segment, ...] = ()
    words: Tuple[Word, ...] = ()
    tokens: Tuple[Token, ...] = ()
    timestamps: str = "none"
    speakers: Tuple[SpeakerTurn, ...] = ()
    truncated: bool = False
    raw_text: str = ""
    timings: Timings = field(default_factory=Timings, compare=False)  # equal runs, equal results
    chunks: Optional[Tuple[Chunk, ...]] = None
    formatted: Dict[str, str] = field(default_factory=dict, compare=False)
    emotion: str = ""
    audio_event: str = ""

    def format(self, fmt: str) -> str:
        """The result as "txt", "json", "srt" or "vtt", as the library renders
        it (the CLI's and the server's bytes): only the formats asked for with
        ``transcribe(..., formats=[...])``."""
        try:
            return self.formatted[fmt]
        except KeyError:
            raise KeyError(f"{fmt!r} was not rendered: pass formats=[{fmt!r}] to transcribe") from None

    def __str__(self) -> str:
        return self.text

    def to_dict(self, tokens: bool = True) -> Dict[str, Any]:
        """The result in the layout of the CLI's ``-f json`` output, without
        ``file`` and ``model``; the subtitle ``cues`` are there when the run
        rendered json (``transcribe(..., formats=["json"])``)."""
        out: Dict[str, Any] = {
            "text": self.text,
            "language": self.language,
        }
        if self.emotion:  # audio tags only where the model gives them, as the CLI
            out["emotion"] = self.emotion
        if self.audio_event:
            out["audio_event"] = self.audio_event
        out["duration"] = round(self.duration, 3)
        out["timestamps"] = self.timestamps
        if self.truncated:
            out["truncated"] = True
        if self.chunks is not None:
            out["chunks"] = [
                {"t0_ms": c.start_ms, "t1_ms": c.end_ms, "end": c.end, "status": c.status}
                for c in self.chunks
            ]
        rendered = self.formatted.get("json")
        if rendered:  # the library's cues (what srt / vtt print), as the CLI's JSON
            out["cues"] = json.loads(rendered).get("cues", [])
        segs: List[Dict[str, Any]] = []
        for s in self.segments:
            d: Dict[str, Any] = {"t0_ms": s.start_ms, "t1_ms": s.end_ms}
            if s.speaker_id > 0:
                d["speaker_id"] = s.speaker_id
                d["speaker"] = s.speaker
            d["text"] = s.text
            segs.append(d)
        out["segments"] = segs
        if self.words:
            words = []
            for w in self.words:
                d = {"t0_ms": w.start_ms, "t1_ms": w.end_ms}
                if w.speaker_id > 0:  # diarized (diarizer=...), as the CLI's JSON
                    d["speaker_id"] = w.speaker_id
                    d["speaker"] = f"S{w.speaker_id}"
                d["text"] = w.text
                words.append(d)
            out["words"] = words
        if tokens and self.tokens:
            toks = []
            for t in self.tokens:
                d = {"id": t.id}
                if math.isfinite(t.p):
                    d["p"] = round(t.p, 4)
                d.update({"t0_ms": t.start_ms, "t1_ms": t.end_ms, "text": t.text})
                toks.append(d)
            out["tokens"] = toks
        return out
