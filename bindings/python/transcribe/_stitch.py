"""One Result out of one or several library results, the way the CLI builds
its output (tools/cli/result.c, chunked.c), so both give equal JSON:

* a single run: text trimmed, every time clamped into the audio;
* long audio split at pauses (``chunk=``): each piece's rows moved onto the
  file's clock, kept inside the piece and monotonic, texts joined with one
  space (none between two characters of an unspaced script), pieces that hit
  the output budget split again at their pauses.
"""

from __future__ import annotations

import ctypes
import logging
import math
import time
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from . import _lib
from . import _structs as S
from ._result import Chunk, Result, Segment, SpeakerTurn, Timings, Token, Word

logger = logging.getLogger("transcribe")

# Families with a fixed output budget and no long-form mode, which also
# decode a batch of utterances together.
BUDGET_ARCHS = ("qwen3_asr", "granite_speech", "moss")
BATCH_PIECES = 4
MAX_RESPLIT = 3
CHUNK_MAX_S = 30
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
    return Piece(
        text=_lib.text(g("full_text")(sess, *idx)),
        language=_lib.text(g("detected_language")(sess, *idx)),
        kind=int(g("returned_timestamp_kind")(sess, *idx)),
        segs=[[s.t0_ms, s.t1_ms, s.first_word, s.n_words, _lib.text(s.text),
               int(s.speaker_id) if spk else 0]
              for s in rows("segment", S.Segment, lib.segment_init)],
        words=[[w.t0_ms, w.t1_ms, w.seg_index, _lib.text(w.text)]
               for w in rows("word", S.Word, lib.word_init)],
        toks=[[t.id, _lib.text(t.text), t.t0_ms, t.t1_ms, float(t.p), t.seg_index, t.word_index]
              for t in rows("token", S.Token, lib.token_init)],
        speakers=[[r.t0_ms, r.t1_ms, int(r.speaker_id), float(r.p)]
                  for r in rows("speaker_segment", S.SpeakerSegment, lib.speaker_segment_init)],
        truncated=bool(lib.was_truncated(sess)) if one else False,
        raw_text=_lib.text(g("raw_text")(sess, *idx)),
    )


def _unspaced(c: str) -> bool:
    o = ord(c)
    return 0x3000 <= o <= 0x30FF or 0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0xFF00 <= o <= 0xFFEF


def _place(t0: int, t1: int, off: int, lo: int, hi: int, prev: List[int]) -> Tuple[int, int]:
    a = min(max(t0 + off, lo), hi)
    b = min(max(t1 + off, lo), hi)
    a = max(a, prev[0])
    b = max(b, a, prev[1])
    prev[0], prev[1] = a, b
    return a, b


class Builder:
    """Accumulates pieces into one result (tools/cli/result.c)."""

    def __init__(self) -> None:
        self.text = ""
        self.language = ""
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

    def _join(self, s: str) -> None:
        s = s.strip(_WS)
        if not s:
            return
        if self.text and not (_unspaced(self.text[-1]) and _unspaced(s[0])):
            self.text += " "
        self.text += s

    def append(self, p: Piece, shift: bool = False, off: int = 0, lo: int = 0, hi: int = 0,
               single: bool = True) -> None:
        seg0, word0, tok0 = len(self.segs), len(self.words), len(self.toks)
        self._join(p.text)
        if p.raw_text:
            self.raw.append(p.raw_text)
        if not self.language and p.language:
            self.language = p.language
        if self.kind == 0:
            self.kind = p.kind
        untimed = shift and p.kind == 0
        if single and p.truncated:
            self.truncated = True
        for r in p.speakers:
            t0, t1 = (r[0] + off, r[1] + off) if shift and (r[0] or r[1]) else (r[0], r[1])
            self.speakers.append(SpeakerTurn(int(t0), int(t1), r[2], r[3]))

        def span(t0: int, t1: int, prev: List[int]) -> Tuple[int, int]:
            if untimed:
                t0, t1 = 0, hi - lo
            if shift:
                t0, t1 = _place(t0, t1, off, lo, hi, prev)
            return t0, t1

        prev = [self.segs[-1][0], self.segs[-1][1]] if seg0 else [0, 0]
        for s in p.segs:
            t0, t1 = span(s[0], s[1], prev)
            self.segs.append([t0, t1, s[2] + word0, s[3], s[4], s[5]])
        if shift and not p.segs and p.text:
            # a piece whose family gives no rows still has its place in time
            t0, t1 = _place(lo, hi, 0, lo, hi, prev)
            self.segs.append([t0, t1, word0, 0, p.text, 0])
        prev = [self.words[-1][0], self.words[-1][1]] if word0 else [0, 0]
        for w in p.words:
            t0, t1 = span(w[0], w[1], prev)
            self.words.append([t0, t1, w[2] + seg0, w[3]])
        prev = [self.toks[-1][2], self.toks[-1][3]] if tok0 else [0, 0]
        for t in p.toks:
            t0, t1 = span(t[2], t[3], prev)
            self.toks.append([t[0], t[1], t0, t1, t[4], t[5] + seg0, t[6] + word0 if t[6] >= 0 else -1])

    def add_chunk(self, t0: int, t1: int, end_kind: int, status: int, text: str) -> None:
        self.chunks.append(Chunk(t0, t1, END_NAMES.get(end_kind, "end"), text))
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
            words.append(Word(t0, t1, w[3], w[2]))
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
        )


# ---- long audio (tools/cli/chunked.c) ----


@dataclass
class Plan:
    split: bool
    target_ms: int
    max_ms: int
    why: str = ""


def chunk_rule(mode: str, chunk_max_s: int, arch: str, long_form: bool, limit_ms: int,
               duration_ms: int) -> Plan:
    """When a file is split at pauses, and the pieces' target and cap."""
    limit = max(limit_ms, 0)
    max_ms = (chunk_max_s if chunk_max_s > 0 else CHUNK_MAX_S) * 1000
    if limit > 0 and max_ms > limit * 9 // 10:
        max_ms = limit * 9 // 10
    max_ms = max(max_ms, 2000)
    p = Plan(False, max_ms * 2 // 3, max_ms)
    if mode == "off":
        return p
    if mode == "on":
        p.split, p.why = True, "chunk='on'"
    elif limit > 0 and duration_ms > limit:
        p.split, p.why = True, f"longer than the model's {limit / 1000:.0f} s input limit"
    elif not long_form and arch in BUDGET_ARCHS and duration_ms > max_ms:
        p.split, p.why = True, f"{arch} has a fixed output budget and no long-form mode"
    elif not long_form and limit == 0 and duration_ms > max_ms:
        p.split, p.why = True, f"{arch or 'the model'} states no long-form mode and no input limit"
    return p


def pause_split(lib: "_lib.Lib", address: int, n: int, rate: int, target_ms: int,
                max_ms: int) -> Tuple[int, List[Tuple[int, int, int]]]:
    """(status, spans) of transcribe_pause_split over n samples at address."""
    sp = lib.new(S.PauseSplitParams, lib.pause_split_params_init)
    sp.target_ms, sp.max_ms = target_ms, max_ms
    out = ctypes.c_void_p()
    count = ctypes.c_int()
    st = lib.pause_split(address, n, rate, ctypes.byref(sp), ctypes.byref(out), ctypes.byref(count))
    spans: List[Tuple[int, int, int]] = []
    if st == 0 and out.value:
        arr = ctypes.cast(out, ctypes.POINTER(S.AudioSpan))
        spans = [(arr[k].start, arr[k].end, arr[k].end_kind) for k in range(count.value)]
    lib.pause_split_free(out)
    return int(st), spans


def run_chunked(lib: "_lib.Lib", sess: int, rp: S.RunParams, address: int, n: int, rate: int,
                plan: Plan, arch: str, out: Builder) -> Tuple[int, str]:
    """Runs the pieces of one file and stitches them into out; returns the
    file's status and, for a failure, its message."""
    st, spans = pause_split(lib, address, n, rate, plan.target_ms, plan.max_ms)
    if st != 0:
        return st, "cannot plan the pieces of long audio"
    pieces = [[a, b, k, 0] for a, b, k in spans]
    group = BATCH_PIECES if arch in BUDGET_ARCHS else 1
    out.chunked = True
    speech = sum(b - a for a, b, _, _ in pieces) / rate
    logger.info("long audio: %.1f s in %d pieces cut at pauses (%.1f s left out as silence; "
                "target %.0f s, at most %.0f s; %s), %s", n / rate, len(pieces), n / rate - speech,
                plan.target_ms / 1000, plan.max_ms / 1000, plan.why,
                "batched" if group > 1 else "one call each")

    def ms(samples: int) -> float:
        return samples * 1000.0 / rate

    def resplit(at: int) -> bool:
        a, b, kind, depth = pieces[at]
        len_ms = (b - a) * 1000 // rate
        if depth >= MAX_RESPLIT or len_ms < 4000:
            return False
        max_ms = len_ms * 55 // 100
        rst, sub = pause_split(lib, address + 4 * a, b - a, rate, max(1000, max_ms * 2 // 3), max_ms)
        if rst != 0 or len(sub) < 2:
            return False
        pieces[at : at + 1] = [[a + s, a + e, k if j + 1 < len(sub) else kind, depth + 1]
                               for j, (s, e, k) in enumerate(sub)]
        return True

    params = ctypes.byref(rp)
    first_err, msg, kept_partial, aborted = 0, "", False, False
    i = 0
    while i < len(pieces) and not aborted:
        g = min(group, len(pieces) - i)
        ptrs = [address + 4 * pieces[i + j][0] for j in range(g)]
        lens = [pieces[i + j][1] - pieces[i + j][0] for j in range(g)]
        if g == 1:
            st = lib.run(sess, ptrs[0], lens[0], params)
        else:
            st = lib.run_batch(sess, (ctypes.c_void_p * g)(*ptrs), (ctypes.c_int * g)(*lens), g, params)
        out.add_timings(lib, sess)
        ok_rows = (S.OK, S.ERR_ABORTED) if g > 1 else (S.OK, S.ERR_OUTPUT_TRUNCATED, S.ERR_ABORTED, 17)
        if st not in ok_rows:  # the call failed as a whole: every piece would
            first_err = st
            msg = _lib.text(lib.session_last_error(sess)) if lib.session_last_error else ""
            break
        nxt = i + g
        for j in range(g):
            a, b, kind, _ = pieces[i + j]
            rs = st if g == 1 else int(lib.batch_status(sess, j))
            alone = g == 1
            if rs == S.ERR_OUTPUT_TRUNCATED:
                if resplit(i + j):
                    logger.warning("piece %.2f - %.2f s hit the output budget; split at its "
                                   "pauses and run again", ms(a) / 1000, ms(b) / 1000)
                    nxt = i + j
                    break
                if not alone:  # a batch row keeps no partial text: run it alone
                    rs = lib.run(sess, ptrs[j], lens[j], params)
                    out.add_timings(lib, sess)
                    alone, nxt = True, i + j + 1
                if rs == S.ERR_OUTPUT_TRUNCATED:
                    logger.warning("piece %.2f - %.2f s: output truncated; its text is partial",
                                   ms(a) / 1000, ms(b) / 1000)
                    kept_partial = True
            t0, t1 = int(ms(a) + 0.5), int(ms(b))
            if rs in (S.OK, S.ERR_OUTPUT_TRUNCATED, S.ERR_ABORTED):
                out.append(read_piece(lib, sess, None if alone else j), True, t0, t0, t1, alone)
            out.add_chunk(t0, t1, kind, rs, lib.status_text(rs))
            if rs == S.ERR_ABORTED:
                aborted = True
                break
            if rs not in (S.OK, S.ERR_OUTPUT_TRUNCATED):
                logger.error("piece %.2f - %.2f s: %s; its text is missing", ms(a) / 1000,
                             ms(b) / 1000, lib.status_text(rs))
                if not first_err:
                    first_err = rs
                    msg = f"piece {ms(a) / 1000:.2f} - {ms(b) / 1000:.2f} s: {lib.status_text(rs)}"
            if alone and g > 1:
                break
        i = nxt
    if out.kind == 0 and out.segs and rp.timestamps != S.TIMESTAMP_KINDS["none"]:
        out.kind = S.TIMESTAMP_KINDS["segment"]
    if aborted:
        return S.ERR_ABORTED, "aborted by callback"
    if first_err:
        return first_err, msg
    return (S.ERR_OUTPUT_TRUNCATED if kept_partial else S.OK), ""
