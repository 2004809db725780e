"""Model, its transcription calls, and streams."""

from __future__ import annotations

import ctypes
import numbers
import os
import threading
import time
import weakref
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _catalog, _lib, _read, _vad
from . import _structs as S
from ._audio import AudioInput, to_pcm
from ._check import c_int, c_path
from ._errors import (
    AbortedError,
    InvalidArgumentError,
    TranscribeError,
    UnsupportedError,
    error_for,
)
from ._interrupt import SigintDeferral
from ._lifetime import CallGate
from ._result import Result

CHUNK_MAX_S = 30  # longest piece of long audio by default (the library's 30 s)

# An abort condition: a callable returning True to stop, or anything with
# is_set() (threading.Event).
Abort = Union[Callable[[], bool], Any, None]
Mode = Union[bool, str, None]
# Voice activity detection: None/False (off), True (the bundled Silero VAD),
# a model path, or a VadModel.
Vad = Union[bool, str, "os.PathLike[str]", "_vad.VadModel", None]


@dataclass(frozen=True)
class Capabilities:
    """What the model can do (``transcribe_capabilities`` and feature probes)."""

    sample_rate: int
    max_timestamps: str
    language_detect: bool
    translate: bool
    streaming: bool  # Model.stream() works: natively or through the library's window driver
    spec_decode: bool
    max_audio_ms: int
    features: FrozenSet[str]
    native_streaming: bool = False  # the family streams natively (the C caps.supports_streaming)


def _model_code(code: str, codes: Sequence[str]) -> str:
    """code, or the one of codes that differs from it only in case."""
    if code in codes:
        return code
    for c in codes:
        if c.lower() == code.lower():
            return c
    return code


@dataclass(frozen=True)
class ModelInfo:
    """Identity and capabilities of a loaded model."""

    path: str
    family: str
    variant: str
    name: str
    backend: str
    languages: Tuple[str, ...]
    translate_targets: Tuple[str, ...]
    capabilities: Capabilities


@dataclass(frozen=True)
class StreamUpdate:
    """What one feed() or finalize() changed.

    ``committed`` only grows during a stream (it is never rewritten);
    ``tentative`` is the model's current guess after it; ``text`` is the
    model's whole current hypothesis (authoritative, may be rewritten).
    """

    committed: str
    tentative: str
    text: str
    new_committed: str
    changed: bool
    is_final: bool
    revision: int
    input_ms: int
    committed_ms: int
    buffered_ms: int


def _field_type(cls: type, name: str) -> Any:
    """The ctypes type of field name of a Structure (or its bases)."""
    for k in cls.__mro__:
        for f in getattr(k, "_fields_", ()):
            if f[0] == name:
                return f[1]
    raise AttributeError(name)


def _strings(arr: Any, n: int) -> Tuple[str, ...]:
    if not arr or n <= 0:
        return ()
    return tuple(_lib.text(arr[i]) for i in range(n))


def _mode(name: str, value: Mode) -> int:
    if isinstance(value, str):
        value = value.lower()
    if value not in S.MODES:
        raise InvalidArgumentError(f"{name} must be True, False, None or 'on'/'off' (got {value!r})")
    return S.MODES[value]


def _never() -> bool:
    return False


class _Aborter:
    """Installs an abort condition on a session for the length of a call.

    The callback is installed even without a condition: running Python code
    between decode steps lets a pending signal (Ctrl-C's KeyboardInterrupt)
    raise there, which stops the run; any exception in the callback stops
    the run and is re-raised after it."""

    def __init__(self, lib: "_lib.Lib", session: int, abort: Abort, persistent: bool = False):
        self.lib = lib
        self.session = session
        self.error: Optional[BaseException] = None
        self.persistent = persistent
        self.check: Callable[[], Any]
        if abort is None:
            self.check = _never
        elif hasattr(abort, "is_set"):
            self.check = abort.is_set
        elif callable(abort):
            self.check = abort
        else:
            raise TypeError("abort must be a callable returning bool or a threading.Event")
        self.cfunc = _lib.ABORT_CALLBACK(self._call)
        self.sigint = SigintDeferral()  # Ctrl-C: see _interrupt.py

    def _call(self, _ud: Optional[int]) -> bool:
        if self.sigint.pending:
            return True
        try:
            return bool(self.check()) or self.sigint.pending
        except BaseException as e:  # noqa: BLE001 - never unwind into C
            self.error = e
            return True

    def __enter__(self) -> "_Aborter":
        self.lib.set_abort_callback(self.session, self.cfunc, None)
        if not self.persistent:
            self.sigint.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.persistent:
            self.lib.set_abort_callback(self.session, _lib.NO_ABORT_CALLBACK, None)
            self.sigint.__exit__(*exc)  # raises KeyboardInterrupt after a Ctrl-C


class _Handles:
    """The C handles of a model and of its pooled sessions, freed exactly
    once (close() or collection), sessions first."""

    def __init__(self, lib: "_lib.Lib") -> None:
        self.lib = lib
        self.model: Optional[int] = None
        self.sessions: List[int] = []

    def free(self) -> None:
        while self.sessions:
            self.lib.session_free(self.sessions.pop())
        if self.model:
            self.lib.model_free(self.model)
            self.model = None


def _free_session(lib: "_lib.Lib", holder: List[Optional[int]]) -> None:
    if holder[0]:
        lib.session_free(holder[0])
        holder[0] = None


class Model:
    """A loaded speech-to-text model.

    ``Model(path, threads=None, device=None)`` loads a GGUF model file.
    ``path`` may also be a name from the model catalogue
    (``"parakeet-tdt-0.6b-v3"``, ``"whisper-base-Q4_K_M"``): it is taken from
    the model cache, and fetched there first if need be, by the
    ``transcribe-download`` program (``_catalog``).
    ``threads``: CPU threads per run (None: the library's choice).
    ``device``: None or "auto", a backend name ("cpu", "cpu_accel", "cuda",
    "metal", "vulkan", "rocm"), or a device index.

    One model may be used from several threads: each call takes a session
    of its own from a pool (a stream holds one for its life), so results and
    abort callbacks never mix; the compute of one model runs one call at a
    time (the library's rule: docs/c-api.md §1.6) while audio decoding and result
    copying overlap, so parallel speed needs one Model per worker. The GIL is
    released while the library computes. Close the model with close() or a
    ``with`` block; it is also freed when garbage-collected.
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        threads: Optional[int] = None,
        device: Union[str, int, None] = None,
        *,
        n_ctx: Optional[int] = None,
        kv_type: str = "auto",
    ) -> None:
        lib = _lib.get()
        self._lib = lib
        # a catalogue name ("parakeet-tdt-0.6b-v3") comes from the model cache (_catalog)
        self._path = _catalog.resolve(os.fspath(path), lib.path)
        self._compute_lock = threading.Lock()  # one compute call at a time
        self._state = threading.Condition()  # guards the pool, users, closing
        self._idle: List[int] = []  # pooled sessions not in use
        self._users = 0  # calls in progress
        self._closing = False
        self._in_compute = threading.local()
        self._streams: "weakref.WeakSet[Stream]" = weakref.WeakSet()
        if threads is not None:
            c_int("threads", threads)
        if n_ctx is not None:
            c_int("n_ctx", n_ctx)
        if kv_type not in S.KV_TYPES:
            raise InvalidArgumentError(f"kv_type must be one of {sorted(S.KV_TYPES)} (got {kv_type!r})")
        self._threads = threads or 0
        self._n_ctx = n_ctx or 0
        self._kv_type = S.KV_TYPES[kv_type]

        lp = lib.new(S.ModelLoadParams, lib.model_load_params_init)
        if device is None or device == "auto":
            pass
        elif isinstance(device, str):
            if device.lower() not in S.BACKENDS:
                raise InvalidArgumentError(
                    f"device must be a backend name ({', '.join(S.BACKENDS)}) or a device index"
                )
            lp.backend = S.BACKENDS[device.lower()]
        elif isinstance(device, int) and not isinstance(device, bool):
            handle = lib.device_get(c_int("device", device))
            if not handle:
                raise InvalidArgumentError(
                    f"no device {device} (this process has {lib.device_count()} device(s))"
                )
            lp.device = handle
        else:
            raise TypeError("device must be None, a backend name or a device index")

        self._h = _Handles(lib)
        self._finalizer = weakref.finalize(self, _Handles.free, self._h)
        out = ctypes.c_void_p()
        with _lib.capture_errors() as cap:
            st = lib.model_load_file(c_path(self._path), ctypes.byref(lp), ctypes.byref(out))
        if st != 0:
            reason = cap.message or lib.status_text(st)
            raise error_for(st, f"cannot load model '{self._path}': {reason}", model=True)
        self._h.model = out.value
        try:
            self._idle.append(self._new_session())  # session errors surface here
            self._info = self._read_info()
        except BaseException:
            self._finalizer()  # no half-built model waits for the collector
            raise

    # ---- lifetime ----

    def close(self) -> None:
        """Frees the model, its sessions and every stream still open on it.
        Waits for calls in progress on other threads; idempotent."""
        if getattr(self._in_compute, "active", False):
            raise RuntimeError("a Model cannot be closed from inside its own abort callback")
        with self._state:
            self._closing = True
            while self._users:
                self._state.wait()
        for s in list(self._streams):
            s.close()
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self._info.family}/{self._info.variant}"
        return f"<transcribe.Model {self._path!r} {state}>"

    def _check_open(self) -> int:
        if not self._finalizer.alive or not self._h.model:
            raise InvalidArgumentError("the model is closed")
        return self._h.model

    def _new_session(self, pooled: bool = True) -> int:
        lib = self._lib
        sp = lib.new(S.SessionParams, lib.session_params_init)
        sp.n_threads = self._threads
        sp.kv_type = self._kv_type
        if lib.covers(S.SessionParams, "n_ctx"):
            sp.n_ctx = self._n_ctx
        out = ctypes.c_void_p()
        st = lib.session_init(self._check_open(), ctypes.byref(sp), ctypes.byref(out))
        if st != 0:
            msg = _lib.text(lib.model_last_error(self._h.model)) if lib.model_last_error else ""
            raise error_for(st, f"cannot create a session: {msg or lib.status_text(st)}")
        if pooled:
            self._h.sessions.append(int(out.value or 0))
        return int(out.value or 0)

    @contextmanager
    def _use(self, session: bool = True) -> Iterator[int]:
        """One call on the model: counts it (close() waits for it) and lends
        it a pooled session (0 when session is False)."""
        if getattr(self._in_compute, "active", False):
            # An abort callback calling into its own model would deadlock on
            # the compute lock (or corrupt the run): refuse it instead.
            raise RuntimeError("a Model cannot be used from inside its own abort callback")
        with self._state:
            if self._closing:
                raise InvalidArgumentError("the model is closed")
            self._check_open()
            self._users += 1
            sess = 0
            try:
                if session:
                    # creation under the state lock: model_last_error stays ours
                    sess = self._idle.pop() if self._idle else self._new_session()
            except BaseException:
                self._users -= 1
                raise
        try:
            yield sess
        finally:
            with self._state:
                if sess:
                    self._idle.append(sess)
                self._users -= 1
                self._state.notify_all()

    @contextmanager
    def _compute(self) -> Iterator[None]:
        """The library runs one compute call per model at a time."""
        with self._compute_lock:
            self._in_compute.active = True
            try:
                yield
            finally:
                self._in_compute.active = False

    # ---- identity ----

    def _read_info(self) -> ModelInfo:
        lib, m = self._lib, self._h.model
        caps = lib.new(S.Capabilities, lib.capabilities_init)
        st = lib.model_get_capabilities(m, ctypes.byref(caps))
        if st != 0:
            raise error_for(st, "cannot read the model's capabilities")
        targets: Tuple[str, ...] = ()
        if lib.covers(S.Capabilities, "translate_target_languages"):
            targets = _strings(caps.translate_target_languages, caps.n_translate_target_languages)
        features = frozenset(n for n, f in S.FEATURES.items() if lib.model_supports(m, f))
        rate = int(caps.native_sample_rate) or 16000
        return ModelInfo(
            path=self._path,
            family=_lib.text(lib.model_arch_string(m)),
            variant=_lib.text(lib.model_variant_string(m)),
            name=_lib.text(lib.model_meta_val_str(m, b"general.name")),
            backend=_lib.text(lib.model_backend(m)),
            languages=_strings(caps.languages, caps.n_languages),
            translate_targets=targets,
            capabilities=Capabilities(
                sample_rate=rate,
                max_timestamps=S.TIMESTAMP_NAMES.get(int(caps.max_timestamp_kind), "none"),
                language_detect=bool(caps.supports_language_detect),
                translate=bool(caps.supports_translate),
                streaming=bool(caps.supports_streaming)
                or (lib.covers(S.Capabilities, "supports_window_streaming")
                    and bool(caps.supports_window_streaming)),
                native_streaming=bool(caps.supports_streaming),
                spec_decode=bool(caps.supports_spec_decode),
                max_audio_ms=int(caps.max_audio_ms) if lib.covers(S.Capabilities, "max_audio_ms") else 0,
                features=features,
            ),
        )

    @property
    def info(self) -> ModelInfo:
        """Family, variant, languages and capabilities of the model."""
        return self._info

    @property
    def sample_rate(self) -> int:
        """The rate PCM input must have (16000 for every shipped model)."""
        return self._info.capabilities.sample_rate

    # ---- parameters ----

    def _run_params(
        self,
        keep: List[Any],
        language: Optional[str],
        task: str,
        target_language: Optional[str],
        timestamps: str,
        vocabulary: Union[str, Sequence[str], None],
        pnc: Mode = None,
        itn: Mode = None,
        diarize: Mode = None,
        keep_special_tags: bool = False,
        vad: Vad = None,
        vad_options: Optional[Mapping[str, Any]] = None,
        spec_k_drafts: Optional[int] = None,
    ) -> S.RunParams:
        lib = self._lib
        for name, v in (("language", language), ("target_language", target_language)):
            if v is not None and not isinstance(v, str):
                raise TypeError(f"{name} must be a language code string or None, not {v!r}")
        p = lib.new(S.RunParams, lib.run_params_init)
        if target_language and task == "transcribe":
            task = "translate"  # as the CLI: a target implies translation
        if task not in S.TASKS:
            raise InvalidArgumentError(f"task must be 'transcribe' or 'translate' (got {task!r})")
        if timestamps not in S.TIMESTAMP_KINDS:
            raise InvalidArgumentError(
                f"timestamps must be one of {', '.join(S.TIMESTAMP_KINDS)} (got {timestamps!r})"
            )
        p.task = S.TASKS[task]
        p.timestamps = S.TIMESTAMP_KINDS[timestamps]
        p.pnc = _mode("pnc", pnc)
        p.itn = _mode("itn", itn)
        p.diarize = _mode("diarize", diarize)
        p.keep_special_tags = bool(keep_special_tags)
        if spec_k_drafts is not None:
            # the CLI's range; an int only (3.9, "3" and True are mistakes)
            ok = isinstance(spec_k_drafts, numbers.Integral) and not isinstance(spec_k_drafts, bool)
            if not ok or not -1 <= spec_k_drafts <= 1024:
                raise InvalidArgumentError(
                    f"spec_k_drafts must be an integer from -1 to 1024, not {spec_k_drafts!r}"
                )
            p.spec_k_drafts = int(spec_k_drafts)
        info = getattr(self, "_info", None)
        if language and info is not None:
            # the model's spelling of a code in another case ("EN"), as the
            # CLI and the server; the library matches exactly
            language = _model_code(language, info.languages)
        if target_language and info is not None:
            target_language = _model_code(target_language, info.translate_targets)
        if language and language != "auto":
            b = language.encode("utf-8")
            keep.append(b)
            p.language = b
        if target_language:
            b = target_language.encode("utf-8")
            keep.append(b)
            p.target_language = b
        if vocabulary:
            terms = [vocabulary] if isinstance(vocabulary, str) else [str(t) for t in vocabulary]
            if not lib.covers(S.RunParams, "vocabulary"):
                raise UnsupportedError(
                    "vocabulary needs a libtranscribe whose transcribe_run_params has a "
                    "vocabulary field (this one has none)"
                )
            ftype = _field_type(type(p), "vocabulary")
            if ftype is ctypes.c_char_p:  # one string, a term per line
                joined = "\n".join(terms).encode("utf-8")
                keep.append(joined)
                p.vocabulary = joined
            else:  # const char *const *vocabulary + its count
                arr = (ctypes.c_char_p * len(terms))(*[t.encode("utf-8") for t in terms])
                keep.append(arr)
                p.vocabulary = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
                count = next(n for n in ("n_vocabulary", "vocabulary_count", "n_hotwords")
                             if hasattr(S.RunParams, n))
                setattr(p, count, len(terms))
        if vad is not None and vad is not False:
            if not lib.covers(S.RunParams, "vad_model"):
                raise UnsupportedError(
                    "vad needs a libtranscribe whose transcribe_run_params has vad_model "
                    "(this one has none)"
                )
            held = _vad.resolve(vad).lease()  # a close() meanwhile frees it after the run
            keep.append(held)
            p.vad_model = held.handle
            if vad_options:
                vp = _vad.vad_params(lib, vad_options)
                keep.append(vp)
                p.vad_params = ctypes.cast(ctypes.addressof(vp), _field_type(type(p), "vad_params"))
        elif vad_options:
            raise InvalidArgumentError("vad_options without vad")
        return p

    # ---- results ----

    def _collect(self, sess: int, i: Optional[int], n_samples: int, t_start: float,
                 render: Optional["_Render"] = None, status: int = S.OK) -> Result:
        """The result of the single run (i None) or batch row i, as the CLI
        prints it: text trimmed, times clamped into the audio; with render,
        the formats it asks for as the library prints them."""
        r = _read.read_result(self._lib, sess, i, n_samples, self.sample_rate, t_start)
        if render is not None and render.formats:
            duration_s = n_samples / float(self.sample_rate)
            r = _replace(r, formatted=render.run(self._lib, sess, i, duration_s, status))
        return r

    def _chunk_params(self, p: S.RunParams, chunk: str, chunk_max_s: int) -> None:
        """Long audio: the library splits an input one call cannot take at
        its pauses (run params chunking, chunk_max_ms)."""
        if chunk not in ("auto", "on", "off"):
            raise InvalidArgumentError(f"chunk must be 'auto', 'on' or 'off' (got {chunk!r})")
        if not isinstance(chunk_max_s, int) or not 2 <= chunk_max_s <= 3600:
            raise InvalidArgumentError(
                f"chunk_max_s must be an integer from 2 to 3600 (got {chunk_max_s!r})")
        if not self._lib.covers(S.RunParams, "chunk_batch"):
            if chunk == "on":
                raise UnsupportedError("chunk='on' needs a libtranscribe that splits long audio "
                                       "(transcribe_run_params.chunking)")
            return  # an older library runs the whole input
        p.chunking = S.CHUNKING[chunk]
        p.chunk_max_ms = chunk_max_s * 1000

    def _session_error(self, sess: int, st: int) -> str:
        lib = self._lib
        msg = _lib.text(lib.session_last_error(sess)) if lib.session_last_error else ""
        return _lib.reason(msg) or lib.status_text(st)

    # ---- transcription ----

    def transcribe(
        self,
        audio: AudioInput,
        language: Optional[str] = None,
        task: str = "transcribe",
        target_language: Optional[str] = None,
        timestamps: str = "auto",
        vocabulary: Union[str, Sequence[str], None] = None,
        abort: Abort = None,
        *,
        diarize: Mode = None,
        pnc: Mode = None,
        itn: Mode = None,
        keep_special_tags: bool = False,
        vad: Vad = None,
        vad_options: Optional[Mapping[str, Any]] = None,
        chunk: str = "auto",
        chunk_max_s: int = CHUNK_MAX_S,
        formats: Sequence[str] = (),
        format_options: Optional[Mapping[str, Any]] = None,
        spec_k_drafts: Optional[int] = None,
        diarizer: Optional["Model"] = None,
    ) -> Result:
        """Transcribes one input.

        Args:
            audio: a path, the bytes of an audio file (decoded and resampled
                by the library), or mono float32 PCM at ``model.sample_rate``
                (NumPy array, ``array('f')``, memoryview).
            language: language code hint; None or "auto" to detect.
            task: "transcribe" or "translate".
            target_language: translation target (implies "translate").
            timestamps: "auto" (finest the model gives), "none", "segment",
                "word" or "token"; an explicit kind is a ceiling.
            vocabulary: terms to bias recognition towards (models and
                library versions that support it; else UnsupportedError).
            abort: a callable polled during the run (True stops it) or a
                threading.Event; the run then raises AbortedError carrying
                the partial result.
            diarize, pnc, itn: True/False to force speaker attribution,
                punctuation+casing, inverse text normalisation on/off.
            vad: transcribe only the speech a voice activity detector finds
                (times stay on the input's clock): True (the bundled Silero
                VAD), a model path or a VadModel; ``vad_options`` tunes it
                (threshold, min_speech_ms, min_silence_ms, speech_pad_ms,
                max_speech_s, ...). Needs a library with run-param VAD.
            chunk: long audio, as the CLI's --chunk: "auto" lets the library
                split a file at pauses when the model cannot take it in one
                call (a fixed output budget and no long-form mode, or longer
                than its input limit) and join the pieces on the file's
                clock; "on" always splits, "off" never. ``chunk_max_s`` caps
                a piece (pieces aim at 2/3 of it). ``result.chunks`` lists
                the pieces.
            formats: output formats to render, any of "txt", "json", "srt",
                "vtt": ``result.format("srt")`` then gives the library's
                rendering, the bytes ``transcribe -f srt`` prints.
                ``format_options``: file, model (JSON's names; txt's header
                with header=True), tokens (JSON token rows), max_line_chars,
                max_cue_ms (subtitle cue shaping, as the CLI's flags).
            spec_k_drafts: speculative decoding, as the CLI's
                --spec-k-drafts: N > 0 drafts up to N tokens a step where
                ``model.info.capabilities.spec_decode`` is true (the text is
                exactly the plain run's, only faster where the output
                repeats itself); None or -1 the default (off), 0 off.
            diarizer: a loaded diarization Model (Sortformer): the library
                runs it over the same audio and every word and segment gets
                the speaker whose activity overlaps it most
                (``word.speaker_id``, ``segment.speaker_id``; the turns are
                ``result.speakers``). It must stay open during the call.

        Raises:
            TranscribeError (a subclass naming the failure). A run that hits
            the model's output cap is not an error: ``result.truncated``.
        """
        keep: List[Any] = []
        params = self._run_params(
            keep, language, task, target_language, timestamps, vocabulary,
            pnc, itn, diarize, keep_special_tags, vad, vad_options, spec_k_drafts,
        )
        self._chunk_params(params, chunk, chunk_max_s)
        if diarizer is not None:
            if not self._lib.covers(S.RunParams, "diarizer"):
                raise UnsupportedError("diarizer needs a libtranscribe whose "
                                       "transcribe_run_params has a diarizer field")
            if not isinstance(diarizer, Model) or diarizer.closed:
                raise InvalidArgumentError("diarizer must be an open transcribe.Model")
            keep.append(diarizer)
            params.diarizer = diarizer._h.model
        render = _Render(formats, format_options)
        lib = self._lib
        t_start = time.perf_counter()
        self._check_open()
        with to_pcm(lib, audio, self.sample_rate) as pcm, self._use() as sess:
            result: Optional[Result] = None
            with _Aborter(lib, sess, abort) as ab:
                with self._compute():
                    st = lib.run(sess, pcm.address, pcm.n, ctypes.byref(params))
                msg = self._session_error(sess, st) if st != S.OK else ""
                # a split run keeps what its pieces gave whatever its status
                split = lib.was_chunked is not None and bool(lib.was_chunked(sess))
            if split or st in (S.OK, S.ERR_OUTPUT_TRUNCATED, S.ERR_ABORTED):
                # outside the compute lock
                result = self._collect(sess, None, pcm.n, t_start, render, st)
            if st in (S.OK, S.ERR_OUTPUT_TRUNCATED) and ab.error is None:
                assert result is not None
                return result
        if ab.error is not None:
            raise ab.error
        raise error_for(st, msg, result=result)

    def transcribe_batch(
        self,
        audios: Sequence[AudioInput],
        language: Optional[str] = None,
        task: str = "transcribe",
        target_language: Optional[str] = None,
        timestamps: str = "auto",
        vocabulary: Union[str, Sequence[str], None] = None,
        abort: Abort = None,
        *,
        diarize: Mode = None,
        pnc: Mode = None,
        itn: Mode = None,
        keep_special_tags: bool = False,
        vad: Vad = None,
        vad_options: Optional[Mapping[str, Any]] = None,
        return_exceptions: bool = False,
        chunk: str = "auto",
        chunk_max_s: int = CHUNK_MAX_S,
        formats: Sequence[str] = (),
        format_options: Optional[Mapping[str, Any]] = None,
    ) -> List[Any]:
        """Transcribes several inputs with one set of parameters, in one
        library call (families with a batched path decode them together).

        Returns one Result per input, in order. An input that fails raises
        its error (``error.index`` tells which), or, with
        ``return_exceptions=True``, takes the error's place in the list.
        ``chunk`` and ``chunk_max_s`` as for transcribe: a long input is
        split at its pauses by itself.
        ``formats`` / ``format_options``: as in :meth:`transcribe`.
        """
        if isinstance(audios, (str, bytes, bytearray, memoryview, os.PathLike)) or (
            getattr(audios, "ndim", 2) < 2
        ):
            # one input, not a sequence of them: iterating it would make
            # "inputs" of its characters or samples
            raise TypeError(
                "transcribe_batch takes a sequence of inputs (paths, bytes or arrays); "
                f"got one {type(audios).__name__}: use transcribe() for a single input"
            )
        audios = list(audios)
        render = _Render(formats, format_options)
        if not audios:
            return []
        keep: List[Any] = []
        params = self._run_params(
            keep, language, task, target_language, timestamps, vocabulary,
            pnc, itn, diarize, keep_special_tags, vad, vad_options,
        )
        self._chunk_params(params, chunk, chunk_max_s)
        lib = self._lib
        t_start = time.perf_counter()
        self._check_open()
        out: List[Any] = [None] * len(audios)
        with ExitStack() as stack:
            # an input that cannot be read takes its error's place, as a
            # failed utterance does; the others run
            pcms = []
            for i, a in enumerate(audios):
                try:
                    pcms.append((i, stack.enter_context(to_pcm(lib, a, self.sample_rate))))
                except TranscribeError as e:
                    e.index = i  # type: ignore[attr-defined]
                    out[i] = e
            n = len(pcms)
            st = S.OK
            ab = None
            msg = ""
            if n:
                ptrs = (ctypes.c_void_p * n)(*[p.address for _, p in pcms])
                counts = (ctypes.c_int * n)(*[p.n for _, p in pcms])
                sess = stack.enter_context(self._use())
                with _Aborter(lib, sess, abort) as ab, self._compute():
                    st = lib.run_batch(sess, ptrs, counts, n, ctypes.byref(params))
                if st not in (S.OK, S.ERR_ABORTED) or ab.error is not None:
                    msg = self._session_error(sess, st)
                else:
                    got = lib.batch_n_results(sess)
                    for k, (i, pcm) in enumerate(pcms):
                        si = lib.batch_status(sess, k) if k < got else S.ERR_ABORTED
                        if si in (S.OK, S.ERR_OUTPUT_TRUNCATED):
                            r = self._collect(sess, k, pcm.n, t_start, render, si)
                            if si == S.ERR_OUTPUT_TRUNCATED:
                                r = _replace(r, truncated=True)
                            out[i] = r
                        else:
                            why = lib.batch_error(sess, k) if lib.batch_error else None
                            text = _lib.reason(why.decode("utf-8", "replace")) if why else ""
                            e = error_for(si, f"input {i}: {text or lib.status_text(si)}")
                            e.index = i  # type: ignore[attr-defined]
                            out[i] = e
                    msg = self._session_error(sess, st) if st != S.OK else ""
        if ab is not None and ab.error is not None:
            raise ab.error
        if st == S.ERR_ABORTED:
            e = AbortedError(msg, st, S.STATUS_NAMES[st])
            e.results = out  # type: ignore[attr-defined]
            raise e
        if st != S.OK:
            raise error_for(st, msg)
        if not return_exceptions:
            for r in out:
                if isinstance(r, TranscribeError):
                    raise r
        return out

    def stream(
        self,
        language: Optional[str] = None,
        timestamps: str = "auto",
        commit: str = "auto",
        agreement: int = 0,
        abort: Abort = None,
        *,
        vocabulary: Union[str, Sequence[str], None] = None,
    ) -> "Stream":
        """Starts a live transcription on a session of its own (needs a model
        with ``info.capabilities.streaming``; else UnsupportedError).

        ``commit``: "auto" (the family's stable-prefix rule), "stable" (text
        agreement over ``agreement`` hypotheses, 0: the library's 3) or
        "finalize" (nothing committed before finalize()).
        Use as a context manager::

            with model.stream() as s:
                for chunk in chunks:
                    update = s.feed(chunk)
                final = s.finalize()
        """
        return Stream(self, language, timestamps, commit, agreement, abort, vocabulary)


class _Render:
    """The output formats a call asks for and their options, rendered by the
    library (transcribe_format_result) while the session holds the result."""

    _OPTIONS = ("file", "model", "header", "tokens", "max_line_chars", "max_cue_ms")

    def __init__(self, formats: Sequence[str], options: Optional[Mapping[str, Any]]) -> None:
        if isinstance(formats, str):
            formats = [formats]
        self.formats = list(formats)
        for f in self.formats:
            if f not in S.FORMATS:
                raise InvalidArgumentError(f"format must be txt, json, srt or vtt (got {f!r})")
        self.options = dict(options or {})
        for k in self.options:
            if k not in self._OPTIONS:
                raise InvalidArgumentError(f"unknown format option {k!r}")

    def run(self, lib: "_lib.Lib", sess: int, i: Optional[int], duration_s: float,
            status: int) -> Dict[str, str]:
        if lib.format_result is None:
            raise UnsupportedError("this libtranscribe has no transcribe_format_result")
        o = self.options
        out: Dict[str, str] = {}
        for f in self.formats:
            p = lib.new(S.FormatParams, lib.format_params_init)
            p.format = S.FORMATS[f]
            p.max_line_chars = int(o.get("max_line_chars") or 0)
            p.max_cue_ms = int(o.get("max_cue_ms") or 0)
            p.json_tokens = bool(o.get("tokens", False))
            p.txt_header = bool(o.get("header", False))
            p.duration_s = duration_s
            p.file = str(o.get("file") or "").encode("utf-8")
            p.model = str(o.get("model") or "").encode("utf-8")
            p.run_status = int(status)
            text = ctypes.c_void_p()
            n = ctypes.c_size_t()
            st = lib.format_result(sess, -1 if i is None else i, ctypes.byref(p),
                                   ctypes.byref(text), ctypes.byref(n))
            if st != S.OK:
                raise error_for(st, f"cannot render {f}: {lib.status_text(st)}")
            try:
                out[f] = ctypes.string_at(text.value, n.value).decode("utf-8", errors="replace")
            finally:
                lib.format_free(text)
        return out


def _replace(r: Result, **kw: Any) -> Result:
    from dataclasses import replace

    return replace(r, **kw)


def _no_samples(audio: AudioInput) -> bool:
    """Whether audio is PCM with no samples (not a path or encoded bytes)."""
    if isinstance(audio, (str, os.PathLike, bytes, bytearray)):
        return False
    if isinstance(audio, memoryview):
        return audio.nbytes == 0 and audio.format not in ("B", "b", "c")
    try:
        return len(audio) == 0  # type: ignore[arg-type]
    except TypeError:
        return False


class Stream:
    """A live transcription: feed() audio as it arrives, then finalize().

    Created by :meth:`Model.stream`. Committed text only ever grows; the
    tentative tail may change with every feed.
    """

    def __init__(
        self,
        model: Model,
        language: Optional[str],
        timestamps: str,
        commit: str,
        agreement: int,
        abort: Abort,
        vocabulary: Union[str, Sequence[str], None],
    ) -> None:
        lib = model._lib
        self._model = model
        self._lib = lib
        if commit not in S.COMMIT_POLICIES:
            raise InvalidArgumentError(f"commit must be 'auto', 'stable' or 'finalize' (got {commit!r})")
        if not isinstance(agreement, int) or not 0 <= agreement <= 32:
            raise InvalidArgumentError(f"agreement must be 0..32 (got {agreement!r})")
        keep: List[Any] = []
        rp = model._run_params(keep, language, "transcribe", None, timestamps, vocabulary)
        sp = lib.new(S.StreamParams, lib.stream_params_init)
        if lib.covers(S.StreamParams, "commit_policy"):
            sp.commit_policy = S.COMMIT_POLICIES[commit]
        if lib.covers(S.StreamParams, "stable_prefix_agreement_n"):
            sp.stable_prefix_agreement_n = agreement
        if lib.covers(S.StreamParams, "window_fallback"):
            sp.window_fallback = True  # any model: natively, else the library's window driver
        self._holder: List[Optional[int]] = [None]
        self._finalizer = weakref.finalize(self, _free_session, lib, self._holder)
        self._samples = 0
        self._committed = ""
        self._final = False
        self._last: Optional[S.StreamUpdate] = None  # the last feed's or finalize's update
        self._gate = CallGate("stream")  # close() waits for feeds in progress
        with model._use(session=False):
            with model._state:  # a session of its own for the stream's life
                sess = model._new_session(pooled=False)
            self._holder[0] = sess
            self._aborter = _Aborter(lib, sess, abort, persistent=True)
            self._aborter.__enter__()
            with model._compute():
                st = lib.stream_begin(sess, ctypes.byref(rp), ctypes.byref(sp))
            if st != 0:
                msg = model._session_error(sess, st)
                self._finalizer()
                if st == S.ERR_NOT_IMPLEMENTED:
                    msg = f"{model.info.family} model does not stream: {msg}"
                raise error_for(st, msg)
            model._streams.add(self)

    def _session(self) -> int:
        if not self._finalizer.alive or not self._holder[0]:
            raise InvalidArgumentError("the stream is closed")
        return int(self._holder[0])

    def _snapshot(self, upd: S.StreamUpdate, changed: Optional[bool] = None) -> StreamUpdate:
        lib = self._lib
        self._last = upd
        t = lib.new(S.StreamText, lib.stream_text_init)
        lib.stream_get_text(self._session(), ctypes.byref(t))

        def view(ptr: Optional[int], n: int) -> str:
            return ctypes.string_at(ptr, n).decode("utf-8", errors="replace") if ptr and n else ""

        committed = view(t.committed_text, t.committed_text_bytes)
        new = committed[len(self._committed) :] if committed.startswith(self._committed) else committed
        self._committed = committed
        return StreamUpdate(
            committed=committed,
            tentative=view(t.tentative_text, t.tentative_text_bytes),
            text=view(t.full_text, t.full_text_bytes),
            new_committed=new,
            changed=bool(upd.result_changed) if changed is None else changed,
            is_final=bool(upd.is_final),
            revision=int(upd.revision),
            input_ms=int(upd.input_received_ms),
            committed_ms=int(upd.audio_committed_ms),
            buffered_ms=int(upd.buffered_ms),
        )

    def _feedable(self) -> int:
        """The session, where the stream still takes audio."""
        sess = self._session()
        if self._final:
            raise InvalidArgumentError("the stream is finalized: start another with model.stream()")
        return sess

    def _fail(self, st: int) -> TranscribeError:
        if self._aborter.error is not None:
            raise self._aborter.error
        return error_for(st, self._model._session_error(self._session(), st))

    def feed(self, audio: AudioInput) -> StreamUpdate:
        """Adds audio (float32 PCM at the model's rate, or any input
        transcribe() takes) and returns the texts after it. Empty PCM (a
        capture callback that delivered no frames) changes nothing: the
        current texts come back with ``changed`` False."""
        lib = self._lib
        if _no_samples(audio):
            with self._gate.call(), self._model._use(False):
                self._feedable()
                last = self._last or lib.new(S.StreamUpdate, lib.stream_update_init)
                return self._snapshot(last, changed=False)
        with self._gate.call(), to_pcm(lib, audio, self._model.sample_rate) as pcm, self._model._use(False):
            sess = self._feedable()
            upd = lib.new(S.StreamUpdate, lib.stream_update_init)
            with self._aborter.sigint, self._model._compute():
                st = lib.stream_feed(sess, pcm.address, pcm.n, ctypes.byref(upd))
            if st != 0:
                raise self._fail(st)
            self._samples += pcm.n
            return self._snapshot(upd)

    def finalize(self) -> StreamUpdate:
        """Ends the input: the last decode runs and everything is committed."""
        lib = self._lib
        with self._gate.call(), self._model._use(False):
            sess = self._session()
            upd = lib.new(S.StreamUpdate, lib.stream_update_init)
            with self._aborter.sigint, self._model._compute():
                st = lib.stream_finalize(sess, ctypes.byref(upd))
            if st != 0:
                raise self._fail(st)
            self._final = True
            return self._snapshot(upd)

    def result(self) -> Result:
        """The stream's current result as a Result (rows, times, language)."""
        with self._gate.call(), self._model._use(False):
            return self._model._collect(self._session(), None, self._samples, time.perf_counter())

    @property
    def state(self) -> str:
        """"idle", "active", "finished" or "failed"."""
        with self._gate.call():
            return S.STREAM_STATES.get(int(self._lib.stream_get_state(self._session())), "idle")

    def close(self) -> None:
        """Frees the stream's session (an unfinished stream is abandoned).
        Waits for a feed in progress on another thread; idempotent."""
        if getattr(self._model._in_compute, "active", False):
            raise RuntimeError("a Stream cannot be closed from inside an abort callback")
        self._gate.close()
        self._finalizer()
        self._model._streams.discard(self)

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
