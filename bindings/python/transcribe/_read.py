"""One Result out of a session's result (the single run or a batch row),
the way the CLI builds its output (tools/common/result.c), so both give
equal JSON: text trimmed, every time clamped into the audio. Long audio the
library split at pauses (``chunk=``) arrives already joined on the file's
clock, its pieces listed (``result.chunks``)."""

from __future__ import annotations

import ctypes
import math
import time
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from . import _lib
from . import _structs as S
from ._result import Chunk, Result, Segment, SpeakerTurn, Timings, Token, Word

END_NAMES = {0: "end", 1: "pause", 2: "forced"}
_WS = " \t\n\r"


@dataclass
class Piece:
    """One library result as read out of a session (times as the library gives them)."""

    text: str
    language: str
    kind: int
    segs: List[List[Any]]  # [t0, t1, first_word, n_words, text, speaker_id]
    words: List[List[Any]]  # [t0, t1, seg_index, text]
    toks: List[List[Any]]  # [id, text, t0, t1, p, seg_index, word_index]
    speakers: List[List[Any]]  # [t0, t1, speaker_id, p]
    truncated: bool
    raw_text: str
    chunked: bool  # split at pauses by the library (even into zero pieces)
    pieces: List[Tuple[int, int, int, int, str]]  # (t0, t1, end_kind, status, its text)
    emotion: str = ""  # audio tags (SenseVoice); "" when none
    audio_event: str = ""


def read_piece(lib: "_lib.Lib", sess: int, i: Optional[int]) -> Piece:
    """The result of the single run (i None) or of batch row i."""
    one = i is None
    idx: Tuple[int, ...] = () if i is None else (i,)

    def g(name: str) -> Any:
        return getattr(lib, name if one else "batch_" + name)

    def rows(name: str, cls: Any, init: Any) -> List[Any]:
        out = []
        get = g("get_" + name)
        for j in range(g("n_" + name + "s")(sess, *idx)):
            row = lib.new(cls, init)
            if get(sess, *idx, j, ctypes.byref(row)) == 0:
                out.append(row)
        return out

    spk = lib.covers(S.Segment, "speaker_id")
    chunked, pieces = False, []
    if lib.was_chunked is not None:
        chunked = bool(g("was_chunked")(sess, *idx))
        for j in range(g("n_pieces")(sess, *idx)):
            pc = lib.new(S.Piece, lib.piece_init)
            if g("get_piece")(sess, *idx, j, ctypes.byref(pc)) == 0:
                pieces.append((int(pc.t0_ms), int(pc.t1_ms), int(pc.end_kind), int(pc.status),
                               lib.status_text(pc.status)))
    def tag(name: str) -> str:  # optional in older libraries
        f = g("detected_" + name)
        return _lib.text(f(sess, *idx)) if f is not None else ""

    return Piece(
        emotion=tag("emotion"),
        audio_event=tag("audio_event"),
        text=_lib.text(g("full_text")(sess, *idx)),
        language=_lib.text(g("detected_language")(sess, *idx)),
        kind=int(g("returned_timestamp_kind")(sess, *idx)),
        segs=[[s.t0_ms, s.t1_ms, s.first_word, s.n_words, _lib.text(s.text),
               int(s.speaker_id) if spk else 0]
              for s in rows("segment", S.Segment, lib.segment_init)],
        words=[[w.t0_ms, w.t1_ms, w.seg_index, _lib.text(w.text), int(w.speaker_id)]
               for w in rows("word", S.Word, lib.word_init)],
        toks=[[t.id, _lib.text(t.text), t.t0_ms, t.t1_ms, float(t.p), t.seg_index, t.word_index]
              for t in rows("token", S.Token, lib.token_init)],
        speakers=[[r.t0_ms, r.t1_ms, int(r.speaker_id), float(r.p)]
                  for r in rows("speaker_segment", S.SpeakerSegment, lib.speaker_segment_init)],
        truncated=bool(lib.was_truncated(sess)) if one else False,
        raw_text=_lib.text(g("raw_text")(sess, *idx)),
        chunked=chunked,
        pieces=pieces,
    )


class Builder:
    """One library result as the CLI prints it (tools/common/result.c)."""

    def __init__(self) -> None:
        self.text = ""
        self.language = ""
        self.emotion = ""
        self.audio_event = ""
        self.kind = 0
        self.segs: List[List[Any]] = []
        self.words: List[List[Any]] = []
        self.toks: List[List[Any]] = []
        self.speakers: List[SpeakerTurn] = []
        self.truncated = False
        self.raw: List[str] = []
        self.chunks: List[Chunk] = []
        self.chunked = False
        self.stage_ms = [0.0, 0.0, 0.0]
        self.load_ms = 0.0

    def add_timings(self, lib: "_lib.Lib", sess: int, i: Optional[int] = None) -> None:
        tm = lib.new(S.Timings, lib.timings_init)
        st = lib.get_timings(sess, ctypes.byref(tm)) if i is None else lib.batch_get_timings(
            sess, i, ctypes.byref(tm))
        if st == 0:
            self.load_ms = float(tm.load_ms)
            self.stage_ms[0] += float(tm.mel_ms)
            self.stage_ms[1] += float(tm.encode_ms)
            self.stage_ms[2] += float(tm.decode_ms)

    def append(self, p: Piece, single: bool = True) -> None:
        self.text = p.text.strip(_WS)
        if p.raw_text:
            self.raw.append(p.raw_text)
        self.language = p.language
        self.emotion = self.emotion or p.emotion  # the first piece's, as the library's join
        self.audio_event = self.audio_event or p.audio_event
        self.kind = p.kind
        if single and p.truncated:
            self.truncated = True
        for r in p.speakers:
            self.speakers.append(SpeakerTurn(int(r[0]), int(r[1]), r[2], r[3]))
        for s in p.segs:
            self.segs.append([s[0], s[1], s[2], s[3], s[4], s[5]])
        for w in p.words:
            self.words.append([w[0], w[1], w[2], w[3], w[4]])
        for t in p.toks:
            self.toks.append([t[0], t[1], t[2], t[3], t[4], t[5], t[6]])
        self.chunked = p.chunked
        for t0, t1, kind, status, text in p.pieces:
            self.chunks.append(Chunk(t0, t1, END_NAMES.get(kind, "end"), text))
            if status == S.ERR_OUTPUT_TRUNCATED:
                self.truncated = True

    def result(self, n_samples: int, rate: int, t_start: float, truncated: bool = False) -> Result:
        duration = n_samples / float(rate)
        end = int(math.floor(duration * 1000.0 + 0.5))

        def clamp(t0: int, t1: int) -> Tuple[int, int]:
            t0 = min(max(t0, 0), end)
            return t0, max(min(t1, end), t0)

        words = []
        for w in self.words:
            t0, t1 = clamp(w[0], w[1])
            words.append(Word(t0, t1, w[3], w[2], w[4]))
        segments = []
        for s in self.segs:
            t0, t1 = clamp(s[0], s[1])
            a, n = s[2], s[3]
            own = tuple(words[a : a + n]) if a >= 0 and n > 0 else ()
            segments.append(Segment(t0, t1, s[4], s[5], own))
        tokens = []
        for t in self.toks:
            t0, t1 = clamp(t[2], t[3])
            tokens.append(Token(t[0], t[1], t0, t1, t[4], t[5], t[6]))
        return Result(
            text=self.text,
            language=self.language,
            duration=duration,
            segments=tuple(segments),
            words=tuple(words),
            tokens=tuple(tokens),
            timestamps=S.TIMESTAMP_NAMES.get(self.kind, "none"),
            speakers=tuple(self.speakers),
            truncated=self.truncated or truncated,
            raw_text="\n".join(self.raw),
            timings=Timings(self.load_ms, self.stage_ms[0], self.stage_ms[1], self.stage_ms[2],
                            (time.perf_counter() - t_start) * 1000.0),
            chunks=tuple(self.chunks) if self.chunked else None,
            emotion=self.emotion,
            audio_event=self.audio_event,
        )




def read_result(lib: "_lib.Lib", sess: int, i: Optional[int], n_samples: int, rate: int,
                t_start: float) -> Result:
    """The result of the single run (i None) or batch row i, as the CLI
    prints it: text trimmed, times clamped into the audio."""
    b = Builder()
    b.append(read_piece(lib, sess, i), single=i is None)
    b.add_timings(lib, sess, i)
    return b.result(n_samples, rate, t_start)
