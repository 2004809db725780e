'use strict';
// transcribe for Node.js: the API over the Node-API addon (src/addon.c),
// which calls the library's public C API. Every transcription, stream step
// and asynchronous load runs on libuv's thread pool, off the event loop.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { fileURLToPath } = require('node:url');

// ---- statuses (transcribe_status: values are ABI) ----

const STATUS_NAMES = [
  'TRANSCRIBE_OK',
  'TRANSCRIBE_ERR_INVALID_ARG',
  'TRANSCRIBE_ERR_NOT_IMPLEMENTED',
  'TRANSCRIBE_ERR_FILE_NOT_FOUND',
  'TRANSCRIBE_ERR_GGUF',
  'TRANSCRIBE_ERR_UNSUPPORTED_ARCH',
  'TRANSCRIBE_ERR_UNSUPPORTED_VARIANT',
  'TRANSCRIBE_ERR_OOM',
  'TRANSCRIBE_ERR_BACKEND',
  'TRANSCRIBE_ERR_SAMPLE_RATE',
  'TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE',
  'TRANSCRIBE_ERR_UNSUPPORTED_TASK',
  'TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS',
  'TRANSCRIBE_ERR_ABORTED',
  'TRANSCRIBE_ERR_BAD_STRUCT_SIZE',
  'TRANSCRIBE_ERR_UNSUPPORTED_PNC',
  'TRANSCRIBE_ERR_UNSUPPORTED_ITN',
  'TRANSCRIBE_ERR_INPUT_TOO_LONG',
  'TRANSCRIBE_ERR_OUTPUT_TRUNCATED',
];
const Status = Object.freeze(
  Object.fromEntries(STATUS_NAMES.map((n, i) => [n.replace(/^TRANSCRIBE_/, ''), i])));

/** An error of the library: `status` is the transcribe_status code,
 * `statusName` (also `code`) its name, e.g. 'TRANSCRIBE_ERR_FILE_NOT_FOUND'.
 * An aborted run carries the part it transcribed in `result`. */
class TranscribeError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'TranscribeError';
    this.status = status | 0;
    this.statusName = STATUS_NAMES[this.status] || `TRANSCRIBE_STATUS_${this.status}`;
    this.code = this.statusName;
  }
}

function invalid(msg) {
  return new TranscribeError(msg, Status.ERR_INVALID_ARG);
}

// ---- the addon and the bundled models ----

// The checkout the package sits in, or the one it was packed from (npm
// pack records it in origin.json): its build and its bundled models.
const CHECKOUT = (() => {
  const isCheckout = (d) => !!d && fs.existsSync(path.join(d, 'include', 'transcribe.h'));
  const root = path.resolve(__dirname, '..', '..');
  if (isCheckout(root)) return root;
  try {
    const origin = JSON.parse(fs.readFileSync(path.join(__dirname, 'origin.json'), 'utf8')).checkout;
    return isCheckout(origin) ? origin : null;
  } catch (_) {
    return null;
  }
})();

// First match: $TRANSCRIBE_NODE_ADDON; what the install script built
// (build/transcribe.node in the package); the checkout's CMake build.
function addonCandidates() {
  const out = [];
  if (process.env.TRANSCRIBE_NODE_ADDON) out.push(process.env.TRANSCRIBE_NODE_ADDON);
  out.push(path.join(__dirname, 'build', 'transcribe.node'));
  if (CHECKOUT) out.push(path.join(CHECKOUT, 'build', 'bindings', 'node', 'transcribe.node'));
  return out;
}

function loadAddon() {
  const tried = addonCandidates();
  for (const p of tried) {
    if (fs.existsSync(p)) return { native: require(p), file: p };
  }
  const e = new Error(
    'transcribe: the native addon is not built (looked at ' + tried.join(', ') + '). ' +
    'Build the library with CMake where Node headers are installed (Debian: libnode-dev, or ' +
    'the nodejs package that ships /usr/include/node), or run `npm install` in bindings/node.');
  e.code = 'TRANSCRIBE_ADDON_NOT_FOUND';
  throw e;
}

const { native, file: addonFile } = loadAddon();
native.setErrorClass(TranscribeError);

function dataDirs() {
  const dirs = [__dirname, path.join(__dirname, 'models')];
  if (CHECKOUT) dirs.push(path.join(CHECKOUT, 'models'));
  try { // share/transcribe of the prefix the loaded library sits in
    for (const line of fs.readFileSync('/proc/self/maps', 'utf8').split('\n')) {
      const i = line.indexOf('/');
      const p = i >= 0 ? line.slice(i) : '';
      if (path.basename(p).startsWith('libtranscribe.')) {
        dirs.push(path.join(path.dirname(path.dirname(p)), 'share', 'transcribe'));
        break;
      }
    }
  } catch (_) { /* not Linux */ }
  dirs.push('/usr/local/share/transcribe', '/usr/share/transcribe');
  return dirs;
}

/** Path of a model the package ships with (the bundled demo model by
 * default, or 'silero-vad-v4.gguf'), or null when none is found. */
function bundledModel(name = 'parakeet-ctc-synth-en.gguf') {
  for (const d of dataDirs()) {
    const p = path.join(d, name);
    if (fs.existsSync(p)) return p;
  }
  return null;
}

const LOG_LEVELS = { none: 0, error: 1, warn: 2, info: 3, debug: 4 };

/** Which library messages reach stderr: 'none', 'error', 'warn' (default),
 * 'info' or 'debug'. Errors also reach the caller as TranscribeError. */
function setLogLevel(level) {
  if (!Object.prototype.hasOwnProperty.call(LOG_LEVELS, level)) {
    throw invalid(`log level must be one of ${Object.keys(LOG_LEVELS).join(', ')} (got ${level})`);
  }
  native.setLogLevel(LOG_LEVELS[level]);
}

// ---- options ----

const TIMESTAMPS = { none: 0, auto: 1, segment: 2, word: 3, token: 4 };
const CHUNK = { auto: 0, on: 1, off: 2 };
const FORMATS = { txt: 0, json: 1, srt: 2, vtt: 3 };
const KV_TYPES = { auto: 0, f32: 1, f16: 2 };
const COMMIT = { auto: 0, finalize: 1, stable: 2 };

const RUN_KEYS = ['language', 'task', 'targetLanguage', 'timestamps', 'vocabulary', 'pnc', 'itn',
  'diarize', 'keepSpecialTags', 'chunk', 'chunkMaxS', 'specKDrafts', 'vad', 'vadOptions'];
const VAD_KEYS = ['threshold', 'negThreshold', 'minSpeechMs', 'minSilenceMs', 'speechPadMs',
  'maxSpeechS', 'windowSamples'];
const TRANSCRIBE_KEYS = [...RUN_KEYS, 'tokens', 'formats', 'signal'];
const STREAM_KEYS = ['language', 'timestamps', 'vocabulary', 'commit', 'agreement',
  'windowFallback', 'signal', 'vad', 'vadOptions'];
const FINISH_KEYS = ['tokens', 'formats'];
const MODEL_KEYS = ['threads', 'nCtx', 'kvType'];

function checkKeys(options, allowed, what) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw invalid(`${what} options must be an object`);
  }
  for (const k of Object.keys(options)) {
    if (!allowed.includes(k)) {
      throw invalid(`unknown ${what} option '${k}' (known: ${allowed.join(', ')})`);
    }
  }
  return options;
}

function pick(table, value, name) {
  if (!Object.prototype.hasOwnProperty.call(table, value)) {
    throw invalid(`${name} must be one of ${Object.keys(table).map((k) => `'${k}'`).join(', ')} ` +
      `(got ${JSON.stringify(value)})`);
  }
  return table[value];
}

// true / false / undefined -> ON / OFF / DEFAULT
function mode(value, name) {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'boolean') throw invalid(`${name} must be a boolean`);
  return value ? 2 : 1;
}

function optString(value, name) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid(`${name} must be a string`);
  return value;
}

// VAD models, loaded once per path for the life of the process (small).
const vadModels = new Map();

function vadOptions(o, out) {
  if (o.vad === undefined || o.vad === null || o.vad === false) {
    if (o.vadOptions !== undefined && o.vadOptions !== null) throw invalid('vadOptions without vad');
    return;
  }
  let p = o.vad;
  if (p === true) {
    p = bundledModel('silero-vad-v4.gguf');
    if (!p) {
      throw new TranscribeError('the bundled Silero VAD model (silero-vad-v4.gguf) is not found: ' +
        'pass its path as vad', Status.ERR_FILE_NOT_FOUND);
    }
  }
  if (p instanceof URL) p = fileURLToPath(p);
  if (typeof p !== 'string' || p.length === 0) throw invalid('vad must be true, false or a VAD model path');
  const key = path.resolve(p);
  if (!vadModels.has(key)) vadModels.set(key, native.vadLoad(p));
  out.vadModel = vadModels.get(key);
  if (o.vadOptions !== undefined) out.vadOptions = checkKeys(o.vadOptions, VAD_KEYS, 'vadOptions');
}

function runOptions(o, forStream) {
  const out = {};
  vadOptions(o, out);
  const language = optString(o.language, 'language');
  if (language && language !== 'auto') out.language = language;
  const target = optString(o.targetLanguage, 'targetLanguage');
  let task = o.task === undefined ? 'transcribe' : o.task;
  if (target) {
    out.targetLanguage = target;
    if (task === 'transcribe') task = 'translate'; // as the CLI: a target implies translation
  }
  if (!forStream) out.task = pick({ transcribe: 0, translate: 1 }, task, 'task');
  out.timestamps = pick(TIMESTAMPS, o.timestamps === undefined ? 'auto' : o.timestamps,
    'timestamps');
  if (o.vocabulary !== undefined && o.vocabulary !== null) {
    const v = typeof o.vocabulary === 'string' ? [o.vocabulary] : o.vocabulary;
    if (!Array.isArray(v) || v.some((t) => typeof t !== 'string')) {
      throw invalid('vocabulary must be a string or an array of strings');
    }
    out.vocabulary = v;
  }
  if (forStream) return out;
  out.pnc = mode(o.pnc, 'pnc');
  out.itn = mode(o.itn, 'itn');
  out.diarize = mode(o.diarize, 'diarize');
  if (o.keepSpecialTags !== undefined) {
    if (typeof o.keepSpecialTags !== 'boolean') throw invalid('keepSpecialTags must be a boolean');
    out.keepSpecialTags = o.keepSpecialTags;
  }
  out.chunking = pick(CHUNK, o.chunk === undefined ? 'auto' : o.chunk, 'chunk');
  if (o.chunkMaxS !== undefined) {
    if (!Number.isInteger(o.chunkMaxS) || o.chunkMaxS < 2 || o.chunkMaxS > 3600) {
      throw invalid(`chunkMaxS must be an integer from 2 to 3600 (got ${o.chunkMaxS})`);
    }
    out.chunkMaxMs = o.chunkMaxS * 1000;
  }
  if (o.specKDrafts !== undefined) out.specKDrafts = o.specKDrafts;
  return out;
}

function outputOptions(o, out) {
  if (o.tokens !== undefined) {
    if (typeof o.tokens !== 'boolean') throw invalid('tokens must be a boolean');
    out.tokens = o.tokens;
  }
  let mask = 0;
  if (o.formats !== undefined) {
    if (!Array.isArray(o.formats)) throw invalid("formats must be an array of 'txt', 'json', 'srt', 'vtt'");
    for (const f of o.formats) mask |= 1 << pick(FORMATS, f, 'a format');
  }
  out.formats = mask;
  return out;
}

function checkSignal(signal) {
  if (signal === undefined || signal === null) return null;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' ||
      typeof signal.addEventListener !== 'function') {
    throw invalid('signal must be an AbortSignal');
  }
  return signal;
}

function abortedError() {
  return new TranscribeError('aborted', Status.ERR_ABORTED);
}

// ---- results ----

// The library's JSON (the CLI's -f json) without the file and model names;
// timings and the rendered formats ride along, not enumerable, so that the
// result serializes as the CLI prints it.
function makeResult(payload) {
  const r = JSON.parse(payload.json);
  delete r.file;
  delete r.model;
  Object.defineProperty(r, 'timings', { value: payload.timings || {}, enumerable: false });
  Object.defineProperty(r, 'formatted', { value: payload.formatted || {}, enumerable: false });
  return r;
}

function isWav(bytes) {
  if (bytes.length < 12) return false;
  const tag = String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]);
  const wave = String.fromCharCode(bytes[8], bytes[9], bytes[10], bytes[11]);
  return (tag === 'RIFF' || tag === 'RF64') && wave === 'WAVE';
}

// The input as the addon takes it: a path string, PCM (Float32Array,
// Float64Array, Int16Array) or WAV bytes, passed on synchronously (the
// addon copies samples and bytes before the call returns); other audio
// bytes (FLAC, MP3, Ogg: the library's decoders read files) are written
// to a temporary file first: { bytes } is returned for those.
function prepareInput(audio) {
  if (typeof audio === 'string') {
    if (audio.length === 0) throw invalid('the audio path is empty');
    return { input: audio };
  }
  if (audio instanceof URL) return { input: fileURLToPath(audio) };
  if (audio instanceof Float32Array || audio instanceof Float64Array ||
      audio instanceof Int16Array) {
    if (audio.length === 0) throw invalid('the audio has no samples');
    return { input: audio };
  }
  let bytes = null;
  if (audio instanceof ArrayBuffer) bytes = new Uint8Array(audio);
  else if (audio instanceof Uint8Array) bytes = audio;
  if (!bytes) {
    throw invalid('audio must be a path, a URL, PCM at the model\'s rate (Float32Array, ' +
      'Int16Array, Float64Array) or the bytes of an audio file (Buffer, Uint8Array, ' +
      `ArrayBuffer); got ${audio === null ? 'null' : typeof audio}`);
  }
  if (isWav(bytes) || bytes.length === 0) return { input: bytes };
  return { bytes: Buffer.from(bytes) }; // a copy: the caller may reuse its buffer
}

async function withTempFile(bytes, use) {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'transcribe-'));
  try {
    const file = path.join(dir, 'audio');
    await fs.promises.writeFile(file, bytes);
    return await use(file);
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

// ---- Model ----

class Model {
  #handle;
  #path;
  #info = null;
  #streams = new Set();

  /**
   * Loads a model file (synchronous; `Model.load` loads off the event loop).
   * @param {string} modelPath GGUF (or whisper.cpp .bin) file
   * @param {{threads?: number, nCtx?: number, kvType?: 'auto'|'f32'|'f16'}} [options]
   */
  constructor(modelPath, options, _handle) {
    const o = checkKeys(options, MODEL_KEYS, 'model');
    this.#path = Model.#checkPath(modelPath);
    this.#handle = _handle || native.modelLoad(this.#path, Model.#loadOptions(o));
  }

  static #checkPath(p) {
    if (p instanceof URL) p = fileURLToPath(p);
    if (typeof p !== 'string' || p.length === 0) throw invalid('the model path must be a non-empty string');
    return p;
  }

  static #loadOptions(o) {
    const out = {};
    if (o.threads !== undefined) out.threads = o.threads;
    if (o.nCtx !== undefined) out.nCtx = o.nCtx;
    if (o.kvType !== undefined) out.kvType = pick(KV_TYPES, o.kvType, 'kvType');
    return out;
  }

  /** Loads a model on the thread pool. */
  static async load(modelPath, options) {
    const o = checkKeys(options, MODEL_KEYS, 'model');
    const p = Model.#checkPath(modelPath);
    const handle = await new Promise((resolve, reject) => {
      native.modelLoadAsync(p, Model.#loadOptions(o), (err, h) => (err ? reject(err) : resolve(h)));
    });
    return new Model(p, o, handle);
  }

  #open() {
    if (!this.#handle) throw invalid('the model is closed');
    return this.#handle;
  }

  get path() { return this.#path; }
  get closed() { return !this.#handle; }

  /** Family, variant, name, languages and capabilities. */
  get info() {
    if (!this.#info) this.#info = Object.freeze({ path: this.#path, ...native.modelInfo(this.#open()) });
    return this.#info;
  }

  /** The rate PCM input must have (16000 for every shipped model). */
  get sampleRate() { return this.info.sampleRate; }

  /**
   * Transcribes a path, PCM at `sampleRate` (Float32Array; Int16Array and
   * Float64Array are converted) or the bytes of an audio file. Resolves to a
   * plain object with the fields of the CLI's `-f json`.
   */
  transcribe(audio, options) {
    let handle;
    let params;
    let signal;
    let prep;
    try {
      const o = checkKeys(options, TRANSCRIBE_KEYS, 'transcribe');
      handle = this.#open();
      params = outputOptions(o, runOptions(o, false));
      signal = checkSignal(o.signal);
      if (signal && signal.aborted) throw abortedError();
      prep = prepareInput(audio);
    } catch (e) {
      return Promise.reject(e);
    }
    if (prep.bytes) {
      return withTempFile(prep.bytes, (file) => {
        if (!this.#handle) throw invalid('the model is closed');
        return Model.#run(handle, file, params, signal);
      });
    }
    return Model.#run(handle, prep.input, params, signal);
  }

  // Starts the work now (the addon copies the input) and settles with it.
  static #run(handle, input, params, signal) {
    return new Promise((resolve, reject) => {
      let onAbort = null;
      const job = native.transcribe(handle, input, params, (err, payload) => {
        if (onAbort) signal.removeEventListener('abort', onAbort);
        const result = payload && payload.json ? makeResult(payload) : undefined;
        if (err) {
          if (result) err.result = result;
          reject(err);
        } else {
          resolve(result);
        }
      });
      if (signal) {
        onAbort = () => native.jobAbort(job);
        signal.addEventListener('abort', onAbort, { once: true });
      }
    });
  }

  /** A live transcription: feed() PCM as it arrives, then finish(). Models
   * without native streaming go through the library's window driver
   * (windowFallback, default true). */
  stream(options) {
    const o = checkKeys(options, STREAM_KEYS, 'stream');
    const params = runOptions(o, true);
    params.commit = pick(COMMIT, o.commit === undefined ? 'auto' : o.commit, 'commit');
    if (o.agreement !== undefined) params.agreement = o.agreement;
    if (o.windowFallback !== undefined) {
      if (typeof o.windowFallback !== 'boolean') throw invalid('windowFallback must be a boolean');
      params.windowFallback = o.windowFallback;
    }
    const signal = checkSignal(o.signal);
    const s = new Stream(native.streamOpen(this.#open(), params), this.sampleRate, signal,
      () => this.#streams.delete(s));
    this.#streams.add(s);
    return s;
  }

  /** Stops every transcription and stream step of this model started
   * before the call; they reject with TRANSCRIBE_ERR_ABORTED. */
  abort() {
    native.modelAbort(this.#open());
  }

  /** Frees the model (its streams are closed; calls in flight finish first,
   * later calls reject). Idempotent. */
  close() {
    if (!this.#handle) return;
    for (const s of [...this.#streams]) s.close();
    native.modelClose(this.#handle);
    this.#handle = null;
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `Model { path: ${JSON.stringify(this.#path)}${this.#handle ? '' : ', closed'} }`;
  }
}

if (typeof Symbol.dispose === 'symbol') {
  Model.prototype[Symbol.dispose] = function dispose() { this.close(); };
}

// ---- Stream ----

class Stream {
  #handle;
  #chain = Promise.resolve();
  #committed = '';
  #state = 'active';
  #rate;
  #onClose;
  #signal;
  #onAbort = null;
  #aborted = false; // abort() or the signal: every later step rejects ABORTED
  #last = null; // the last step's update

  constructor(handle, rate, signal, onClose) {
    if (handle === undefined) throw new TypeError('a Stream comes from model.stream()');
    this.#handle = handle;
    this.#rate = rate;
    this.#onClose = onClose;
    this.#signal = signal;
    if (signal) {
      this.#onAbort = () => this.abort();
      if (signal.aborted) this.#onAbort();
      else signal.addEventListener('abort', this.#onAbort, { once: true });
    }
  }

  /** 'active', 'finished', 'failed' or 'closed'. */
  get state() { return this.#state; }
  get sampleRate() { return this.#rate; }

  // One step of a stream at a time: each waits for the one before.
  #enqueue(start) {
    const p = this.#chain.then(() => new Promise((resolve, reject) => {
      if (!this.#handle) throw invalid('the stream is closed');
      if (this.#aborted) {
        this.#state = 'failed';
        throw new TranscribeError('the stream was aborted', Status.ERR_ABORTED);
      }
      if (this.#state === 'failed') throw invalid('the stream failed: start another with model.stream()');
      start(this.#handle, (err, v) => {
        if (err) {
          if (err.status !== Status.ERR_INVALID_ARG && this.#state !== 'closed') this.#state = 'failed';
          reject(err);
        } else {
          resolve(v);
        }
      });
    }));
    this.#chain = p.catch(() => {});
    return p;
  }

  #update(u) {
    const c = u.committed;
    u.newCommitted = c.startsWith(this.#committed) ? c.slice(this.#committed.length) : c;
    this.#committed = c;
    this.#last = u;
    return u;
  }

  /** Adds PCM at the model's rate (Float32Array; Int16Array, Float64Array
   * converted) and resolves to the texts after it: `committed` only grows,
   * `tentative` may change with every feed, `text` is the whole hypothesis. */
  feed(pcm) {
    if (!(pcm instanceof Float32Array || pcm instanceof Int16Array || pcm instanceof Float64Array)) {
      return Promise.reject(invalid('feed takes PCM: a Float32Array, Int16Array or Float64Array'));
    }
    if (this.#state === 'finished') return Promise.reject(invalid('the stream is finished'));
    if (pcm.length === 0) {
      // a capture callback that delivered no frames: the current texts, unchanged
      return this.#chain.then(() => {
        if (!this.#handle) throw invalid('the stream is closed');
        const last = this.#last || { committed: '', tentative: '', text: '', isFinal: false,
          revision: 0, inputMs: 0, committedMs: 0, bufferedMs: 0 };
        return { ...last, newCommitted: '', changed: false };
      });
    }
    // the samples as they are now: the step starts later (after the one
    // before, or in a microtask), when the caller may have refilled its buffer
    const samples = pcm.slice();
    return this.#enqueue((h, cb) => native.streamFeed(h, samples, cb)).then((u) => this.#update(u));
  }

  /** Ends the input: the last decode runs and everything is committed. The
   * update's `result` is the stream's result as `Model.transcribe` gives it. */
  finish(options) {
    if (this.#state === 'finished') return Promise.reject(invalid('the stream is finished'));
    let params;
    try {
      params = outputOptions(checkKeys(options, FINISH_KEYS, 'finish'), {});
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#enqueue((h, cb) => native.streamFinish(h, params, cb)).then((u) => {
      this.#state = 'finished';
      if (u.result) u.result = makeResult(u.result);
      return this.#update(u);
    });
  }

  /** Stops the step in flight and every later one (ABORTED). */
  abort() {
    this.#aborted = true;
    if (this.#handle) native.streamAbort(this.#handle);
  }

  /** Frees the stream's session (a step in flight stops). Idempotent. */
  close() {
    if (!this.#handle) return;
    if (this.#onAbort) this.#signal.removeEventListener('abort', this.#onAbort);
    native.streamClose(this.#handle);
    this.#handle = null;
    this.#state = 'closed';
    this.#onClose();
  }
}

if (typeof Symbol.dispose === 'symbol') {
  Stream.prototype[Symbol.dispose] = function dispose() { this.close(); };
}

module.exports = {
  Model,
  Stream,
  TranscribeError,
  Status,
  bundledModel,
  setLogLevel,
  version: native.version(),
  addonPath: addonFile,
};
