// Type declarations of the transcribe package (bindings/node/index.js).

/** transcribe_status codes (values are the C API's). */
export declare const Status: Readonly<{
  OK: 0;
  ERR_INVALID_ARG: 1;
  ERR_NOT_IMPLEMENTED: 2;
  ERR_FILE_NOT_FOUND: 3;
  ERR_GGUF: 4;
  ERR_UNSUPPORTED_ARCH: 5;
  ERR_UNSUPPORTED_VARIANT: 6;
  ERR_OOM: 7;
  ERR_BACKEND: 8;
  ERR_SAMPLE_RATE: 9;
  ERR_UNSUPPORTED_LANGUAGE: 10;
  ERR_UNSUPPORTED_TASK: 11;
  ERR_UNSUPPORTED_TIMESTAMPS: 12;
  ERR_ABORTED: 13;
  ERR_BAD_STRUCT_SIZE: 14;
  ERR_UNSUPPORTED_PNC: 15;
  ERR_UNSUPPORTED_ITN: 16;
  ERR_INPUT_TOO_LONG: 17;
  ERR_OUTPUT_TRUNCATED: 18;
}>;

/** A failure of the library (or of an argument): the status code and its name. */
export declare class TranscribeError extends Error {
  constructor(message: string, status: number);
  readonly name: 'TranscribeError';
  /** The transcribe_status code, e.g. 3. */
  readonly status: number;
  /** Its name, e.g. 'TRANSCRIBE_ERR_FILE_NOT_FOUND'. */
  readonly statusName: string;
  /** Same as statusName (Node's convention). */
  readonly code: string;
  /** An aborted run: the part it transcribed, where there is one. */
  result?: Result;
}

/** Audio: a path (or file: URL), mono PCM at the model's rate (Float32Array;
 * Int16Array is scaled by 1/32768, Float64Array converted), or the bytes of
 * an audio file (WAV read in memory; FLAC/MP3/Ogg/Opus through a temporary
 * file when the library has libsndfile). */
export type AudioInput = string | URL | Float32Array | Int16Array | Float64Array | Uint8Array | ArrayBuffer;
export type PcmInput = Float32Array | Int16Array | Float64Array;

export type TimestampKind = 'auto' | 'none' | 'segment' | 'word' | 'token';
export type OutputFormat = 'txt' | 'json' | 'srt' | 'vtt';

export interface ModelOptions {
  /** CPU threads per run (0 or absent: the library's choice). */
  threads?: number;
  /** Decoder context (0: the model's maximum). */
  nCtx?: number;
  kvType?: 'auto' | 'f32' | 'f16';
}

export interface RunOptions {
  /** A language code; 'auto' or absent lets the model detect it. */
  language?: string;
  task?: 'transcribe' | 'translate';
  /** Implies task 'translate'. */
  targetLanguage?: string;
  /** The finest the model gives ('auto'), or a ceiling. */
  timestamps?: TimestampKind;
  /** Names and jargon to bias recognition towards (models with the vocabulary feature). */
  vocabulary?: string | string[];
  pnc?: boolean;
  itn?: boolean;
  /** Speaker attribution where the model diarizes. */
  diarize?: boolean;
  keepSpecialTags?: boolean;
  /** Long audio: split at pauses where one call cannot take it ('auto'), always, never. */
  chunk?: 'auto' | 'on' | 'off';
  /** Longest piece in seconds (2..3600, default 30). */
  chunkMaxS?: number;
  specKDrafts?: number;
  /** Transcribe only the speech a Silero VAD finds: true (the bundled silero-vad-v4.gguf) or a path. */
  vad?: boolean | string | URL;
  vadOptions?: VadOptions;
}

/** Silero's get_speech_timestamps settings (the CLI's --vad-*). */
export interface VadOptions {
  threshold?: number;
  negThreshold?: number;
  minSpeechMs?: number;
  minSilenceMs?: number;
  speechPadMs?: number;
  maxSpeechS?: number;
  windowSamples?: number;
}

export interface OutputOptions {
  /** Token rows in the result (the CLI's --tokens). */
  tokens?: boolean;
  /** Formats rendered by the library into result.formatted (the CLI's bytes). */
  formats?: OutputFormat[];
}

export interface TranscribeOptions extends RunOptions, OutputOptions {
  /** Aborts the run: it rejects with TRANSCRIBE_ERR_ABORTED. */
  signal?: AbortSignal;
}

export interface StreamOptions {
  language?: string;
  timestamps?: TimestampKind;
  vocabulary?: string | string[];
  /** 'auto' (the family's rule), 'stable' (agreement over hypotheses), 'finalize' (nothing before finish). */
  commit?: 'auto' | 'stable' | 'finalize';
  /** Hypotheses that must agree under 'stable' (0: the library's 3). */
  agreement?: number;
  /** Stream a model without native streaming through the library's window driver (default true). */
  windowFallback?: boolean;
  signal?: AbortSignal;
  vad?: boolean | string | URL;
  vadOptions?: VadOptions;
}

/** A row with times in milliseconds, clamped into the audio, as the CLI prints them. */
export interface Timed {
  t0_ms: number;
  t1_ms: number;
  text: string;
}
export interface Segment extends Timed {
  /** Diarized runs: 1-based speaker id and its name ('S1'). */
  speaker_id?: number;
  speaker?: string;
}
export interface Word extends Timed {
  /** Diarized runs: the word's 1-based speaker id and its name ('S1'). */
  speaker_id?: number;
  speaker?: string;
}
/** A subtitle cue; diarized runs name the speaker of its words. */
export interface Cue extends Timed {
  speaker_id?: number;
  speaker?: string;
}
export interface Token extends Timed {
  id: number;
  /** Confidence where the family gives one. */
  p?: number;
}
export interface Chunk {
  t0_ms: number;
  t1_ms: number;
  end: string;
  status: string;
}
export interface Timings {
  loadMs: number;
  melMs: number;
  encodeMs: number;
  decodeMs: number;
}

/** A result: the fields of `transcribe -f json` (without file and model). */
export interface Result {
  text: string;
  language: string;
  /** Audio tags where the model gives them (SenseVoice). */
  emotion?: string;
  audio_event?: string;
  /** Seconds. */
  duration: number;
  timestamps: 'none' | 'segment' | 'word' | 'token';
  /** The run status when it is not OK (an aborted or truncated run). */
  error?: string;
  truncated?: boolean;
  /** The pieces of long audio run one by one. */
  chunks?: Chunk[];
  /** The subtitle cues (SRT/VTT). */
  cues: Cue[];
  segments: Segment[];
  words?: Word[];
  tokens?: Token[];
  /** Not enumerable: stage timings. */
  readonly timings: Timings;
  /** Not enumerable: the formats asked for with `formats`. */
  readonly formatted: Partial<Record<OutputFormat, string>>;
}

export interface Capabilities {
  maxTimestamps: 'none' | 'auto' | 'segment' | 'word' | 'token';
  languageDetect: boolean;
  translate: boolean;
  /** model.stream() works (natively or through the window driver). */
  streaming: boolean;
  nativeStreaming: boolean;
  specDecode: boolean;
  maxAudioMs: number;
  /** 'initial_prompt', 'temperature_fallback', 'long_form', 'cancellation', 'pnc', 'itn', 'diarization', 'vocabulary'. */
  features: string[];
}

export interface ModelInfo {
  path: string;
  family: string;
  variant: string;
  name: string;
  backend: string;
  sampleRate: number;
  languages: string[];
  translateTargets: string[];
  capabilities: Capabilities;
}

export interface StreamUpdate {
  /** Only grows during a stream. */
  committed: string;
  /** The current guess after it; may change. */
  tentative: string;
  /** The whole current hypothesis. */
  text: string;
  /** What this step added to committed. */
  newCommitted: string;
  changed: boolean;
  isFinal: boolean;
  revision: number;
  /** Audio received so far. */
  inputMs: number;
  /** Audio the stream is done with: its text is final and its samples are
   * dropped. Committed text may run ahead of it (words agreed on while
   * their audio is still held for context). */
  committedMs: number;
  /** Audio received but not decoded yet (a drain hint). */
  bufferedMs: number;
}

export interface FinalUpdate extends StreamUpdate {
  /** The stream's result, as Model.transcribe gives it. */
  result: Result;
}

export declare class Stream {
  /** Streams come from Model.stream(). */
  private constructor();
  readonly state: 'active' | 'finished' | 'failed' | 'closed';
  readonly sampleRate: number;
  /** Adds PCM at the model's rate (copied when called); steps run one at a
   * time in call order. Empty PCM resolves to the current texts, unchanged. */
  feed(pcm: PcmInput): Promise<StreamUpdate>;
  /** Ends the input; the update carries the result. */
  finish(options?: OutputOptions): Promise<FinalUpdate>;
  /** The step in flight and every later one reject with TRANSCRIBE_ERR_ABORTED. */
  abort(): void;
  /** Frees the stream's session; idempotent. */
  close(): void;
}

export declare class Model {
  /** Loads a model synchronously (a file map: fast); Model.load loads off the event loop. */
  constructor(path: string | URL, options?: ModelOptions);
  static load(path: string | URL, options?: ModelOptions): Promise<Model>;
  readonly path: string;
  readonly closed: boolean;
  readonly info: ModelInfo;
  readonly sampleRate: number;
  /** Runs on libuv's thread pool; one compute per model at a time, several models in parallel. */
  transcribe(audio: AudioInput, options?: TranscribeOptions): Promise<Result>;
  stream(options?: StreamOptions): Stream;
  /** Aborts every run and stream step of this model in flight. */
  abort(): void;
  /** Frees the model once calls in flight end; closes its streams; idempotent. */
  close(): void;
}

/** The path of a model file the package ships with, or null. */
export declare function bundledModel(name?: string): string | null;
/** Which library messages reach stderr (default 'warn'). */
export declare function setLogLevel(level: 'none' | 'error' | 'warn' | 'info' | 'debug'): void;
/** The library's version. */
export declare const version: string;
/** The addon file in use. */
export declare const addonPath: string;
