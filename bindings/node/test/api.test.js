'use strict';
// The API of bindings/node against the C CLI: every input kind, results
// equal to `transcribe -f json`, abort, bad input, concurrency.
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { test, describe, before, after } = require('node:test');

const { Model, TranscribeError, Status, bundledModel, version } = require('..');
const { MODEL, SAMPLE, JFK, cli, cliJson, readWav, wavBytes, longAudio } = require('./helpers');

let model;
before(() => { model = new Model(MODEL); });
after(() => model.close());

// JSON of an object as the CLI prints it (keys in the CLI's order).
const same = (a, b) => assert.equal(JSON.stringify(a), JSON.stringify(b));

async function rejectsWith(promise, status, re) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof TranscribeError, `not a TranscribeError: ${e && e.stack}`);
    assert.ok(e instanceof Error);
    assert.equal(e.status, status, `status ${e.status} (${e.message})`);
    assert.equal(e.statusName, Object.keys(Status).map((k) => `TRANSCRIBE_${k}`)[status]);
    assert.equal(e.code, e.statusName);
    if (re) assert.match(e.message, re);
    return true;
  });
}

describe('results equal the CLI -f json', () => {
  for (const file of [SAMPLE, JFK]) {
    test(path.basename(file), async () => {
      same(await model.transcribe(file), cliJson(file));
      same(await model.transcribe(file, { tokens: true }), cliJson(file, ['--tokens']));
      same(await model.transcribe(file, { timestamps: 'segment' }),
        cliJson(file, ['--timestamps', 'segment']));
    });
  }
  test('the rendered formats are the CLI bytes', async () => {
    const r = await model.transcribe(SAMPLE, { formats: ['srt', 'vtt', 'txt'] });
    assert.equal(r.formatted.srt, cli(['-f', 'srt', SAMPLE]));
    assert.equal(r.formatted.vtt, cli(['-f', 'vtt', SAMPLE]));
    assert.equal(r.formatted.txt, cli(['-f', 'txt', SAMPLE]));
    assert.deepEqual(Object.keys(r.formatted).sort(), ['srt', 'txt', 'vtt']);
  });
  test('a result is a plain object: text, segments, words with times', async () => {
    const r = await model.transcribe(SAMPLE);
    assert.equal(Object.getPrototypeOf(r), Object.prototype);
    assert.equal(r.text, 'it costs two thousand eight hundred and fifty nine dollars and fifty one cents');
    assert.ok(r.segments.length >= 1 && r.words.length === 14);
    for (const w of r.words) assert.ok(w.t0_ms <= w.t1_ms && typeof w.text === 'string');
    assert.equal(r.duration, 4.942);
    assert.ok(r.timings.encodeMs >= 0 && !Object.keys(r).includes('timings'));
  });
});

describe('voice activity detection', () => {
  const VAD = bundledModel('silero-vad-v4.gguf');
  test('vad: true equals the CLI --vad', async () => {
    for (const file of [JFK, SAMPLE]) {
      same(await model.transcribe(file, { vad: true, tokens: true }), cliJson(file, ['--vad', '--tokens']));
    }
    same(await model.transcribe(JFK, { vad: VAD }), cliJson(JFK, ['--vad-model', VAD]));
  });
  test('vadOptions equal the CLI --vad-* flags', async () => {
    same(await model.transcribe(JFK, { vad: true, vadOptions: { threshold: 0.7, minSilenceMs: 300 } }),
      cliJson(JFK, ['--vad-threshold', '0.7', '--vad-min-silence-ms', '300']));
  });
  test('silence gives an empty result', async () => {
    const r = await model.transcribe(new Float32Array(16000 * 3), { vad: true });
    assert.equal(r.text, '');
    assert.deepEqual(r.segments, []);
  });
  test('bad VAD settings', async () => {
    await rejectsWith(model.transcribe(SAMPLE, { vad: '/nonexistent/vad.gguf' }), Status.ERR_FILE_NOT_FOUND);
    await rejectsWith(model.transcribe(SAMPLE, { vad: MODEL }), Status.ERR_UNSUPPORTED_ARCH);
    await rejectsWith(model.transcribe(SAMPLE, { vad: 3 }), Status.ERR_INVALID_ARG);
    await rejectsWith(model.transcribe(SAMPLE, { vadOptions: {} }), Status.ERR_INVALID_ARG, /without vad/);
    await rejectsWith(model.transcribe(SAMPLE, { vad: true, vadOptions: { threshold: 2 } }),
      Status.ERR_INVALID_ARG);
    await rejectsWith(model.transcribe(SAMPLE, { vad: true, vadOptions: { threshold: '0.5' } }),
      Status.ERR_INVALID_ARG, /^threshold must be a number$/);
    await rejectsWith(model.transcribe(SAMPLE, { vad: true, vadOptions: { treshold: 0.2 } }),
      Status.ERR_INVALID_ARG, /unknown vadOptions option/);
    await rejectsWith(model.transcribe(SAMPLE, { vad: true, vadOptions: { windowSamples: 100 } }),
      Status.ERR_INVALID_ARG);
  });
});

describe('every input kind gives the path result', () => {
  let expected;
  let wav;
  before(async () => {
    expected = await model.transcribe(SAMPLE, { tokens: true });
    wav = readWav(SAMPLE);
  });
  const kinds = {
    'Float32Array': () => wav.float32,
    'Int16Array': () => wav.int16,
    'Float64Array': () => Float64Array.from(wav.float32),
    'Buffer (WAV file bytes)': () => fs.readFileSync(SAMPLE),
    'Uint8Array (WAV file bytes)': () => new Uint8Array(fs.readFileSync(SAMPLE)),
    'ArrayBuffer (WAV file bytes)': () => {
      const b = fs.readFileSync(SAMPLE);
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.length);
    },
    'WAV bytes written here': () => wavBytes(wav.int16, 16000),
    'file: URL': () => pathToFileURL(SAMPLE),
    'a Float32Array view into a larger buffer': () => {
      const big = new Float32Array(wav.float32.length + 100);
      big.set(wav.float32, 50);
      return big.subarray(50, 50 + wav.float32.length);
    },
  };
  for (const [name, make] of Object.entries(kinds)) {
    test(name, async () => same(await model.transcribe(make(), { tokens: true }), expected));
  }
  test('WAV bytes at 8 kHz are resampled to the model rate', async () => {
    const half = new Int16Array(Math.floor(wav.int16.length / 2));
    for (let i = 0; i < half.length; i++) half[i] = wav.int16[2 * i];
    const r = await model.transcribe(wavBytes(half, 8000));
    assert.equal(r.duration, Math.round((half.length / 8000) * 1000) / 1000);
    assert.ok(r.text.includes('thousand'), r.text);
  });
  test('Model.load loads off the event loop', async () => {
    const m = await Model.load(MODEL, { threads: 1 });
    try {
      same(await m.transcribe(SAMPLE, { tokens: true }), expected);
    } finally {
      m.close();
    }
  });
  test('the input buffer may change once the call has started', async () => {
    const pcm = wav.float32.slice();
    const p = model.transcribe(pcm, { tokens: true });
    pcm.fill(0);
    same(await p, expected);
  });
});

describe('model', () => {
  test('info', () => {
    const i = model.info;
    assert.equal(i.family, 'parakeet');
    assert.equal(i.sampleRate, 16000);
    assert.equal(model.sampleRate, 16000);
    assert.ok(Array.isArray(i.languages));
    assert.equal(typeof i.capabilities.streaming, 'boolean');
    assert.ok(Array.isArray(i.capabilities.features));
    assert.equal(i.path, MODEL);
    assert.match(version, /^\d+\.\d+\.\d+/);
  });
  test('the bundled model is found', () => {
    assert.equal(fs.realpathSync(bundledModel()), fs.realpathSync(MODEL));
    assert.ok(bundledModel('silero-vad-v4.gguf'));
    assert.equal(bundledModel('no-such-model.gguf'), null);
  });
  test('the event loop runs while a transcription computes', async () => {
    let ticks = 0;
    const timer = setInterval(() => { ticks++; }, 1);
    const r = await model.transcribe(longAudio(60), { chunk: 'off' });
    clearInterval(timer);
    assert.ok(r.text.length > 0);
    assert.ok(ticks > 0, 'no timer callback ran during the transcription');
  });
});

describe('abort', () => {
  test('an AbortSignal stops a run: ABORTED, with the part done', async () => {
    const ac = new AbortController();
    const p = model.transcribe(longAudio(120), { signal: ac.signal, chunk: 'on' });
    setTimeout(() => ac.abort(), 30);
    await rejectsWith(p, Status.ERR_ABORTED);
    const err = await p.catch((e) => e);
    if (err.result) assert.equal(typeof err.result.text, 'string');
    same(await model.transcribe(SAMPLE), cliJson(SAMPLE)); // the model still works
  });
  test('a signal aborted before the call rejects at once', async () => {
    const ac = new AbortController();
    ac.abort();
    await rejectsWith(model.transcribe(SAMPLE, { signal: ac.signal }), Status.ERR_ABORTED);
  });
  test('model.abort() stops the runs in flight, not the later ones', async () => {
    const m = new Model(MODEL);
    try {
      const a = m.transcribe(longAudio(120), { chunk: 'on' });
      const b = m.transcribe(longAudio(120), { chunk: 'on' });
      setTimeout(() => m.abort(), 30);
      await rejectsWith(a, Status.ERR_ABORTED);
      await rejectsWith(b, Status.ERR_ABORTED);
      same(await m.transcribe(SAMPLE), cliJson(SAMPLE));
    } finally {
      m.close();
    }
  });
  test('a signal that fires after the run has no effect', async () => {
    const ac = new AbortController();
    const r = await model.transcribe(SAMPLE, { signal: ac.signal });
    ac.abort();
    same(r, cliJson(SAMPLE));
  });
});

describe('bad input', () => {
  const INVALID = Status.ERR_INVALID_ARG;
  test('wrong audio types', async () => {
    for (const bad of [undefined, null, 42, {}, [0.1, 0.2], true, new Int32Array(10),
      new Uint16Array(10), () => 1, '']) {
      await rejectsWith(model.transcribe(bad), INVALID);
    }
  });
  test('wrong options', async () => {
    const cases = [
      [{ timestamps: 'sometimes' }, /timestamps/],
      [{ task: 'summarize' }, /task/],
      [{ chunk: 'maybe' }, /chunk/],
      [{ chunkMaxS: 1 }, /chunkMaxS/],
      [{ language: 5 }, /language/],
      [{ vocabulary: [1, 2] }, /vocabulary/],
      [{ pnc: 'yes' }, /pnc/],
      [{ tokens: 1 }, /tokens/],
      [{ formats: ['docx'] }, /format/],
      [{ signal: {} }, /signal/],
      [{ langauge: 'en' }, /unknown transcribe option 'langauge'/],
      ['en', /options must be an object/],
    ];
    for (const [opts, re] of cases) await rejectsWith(model.transcribe(SAMPLE, opts), INVALID, re);
  });
  test('a missing audio file', async () => {
    await rejectsWith(model.transcribe('/nonexistent/audio.wav'), Status.ERR_FILE_NOT_FOUND);
  });
  test('audio the library cannot read', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'transcribe-node-'));
    try {
      const junk = path.join(dir, 'junk.wav');
      fs.writeFileSync(junk, 'this is not audio at all, not even close');
      await assert.rejects(model.transcribe(junk), TranscribeError);
      await assert.rejects(model.transcribe(fs.readFileSync(junk)), TranscribeError);
      await rejectsWith(model.transcribe(path.join(dir)), INVALID);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  test('a WAV cut short is refused with the reason', async () => {
    const b = fs.readFileSync(SAMPLE);
    await rejectsWith(model.transcribe(b.subarray(0, 1000)), INVALID, /past the end/);
    await rejectsWith(model.transcribe(b.subarray(0, 20)), INVALID);
  });
  test('empty audio', async () => {
    await assert.rejects(model.transcribe(new Float32Array(0)), /the audio has no samples/);
  });
  test('a language the model does not have', async () => {
    await assert.rejects(model.transcribe(SAMPLE, { language: 'xx' }), (e) => {
      assert.ok(e instanceof TranscribeError && e.status !== Status.OK);
      return true;
    });
  });
  test('bad models', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'transcribe-node-'));
    try {
      assert.throws(() => new Model('/nonexistent/model.gguf'),
        (e) => e instanceof TranscribeError && e.status === Status.ERR_FILE_NOT_FOUND);
      const junk = path.join(dir, 'junk.gguf');
      fs.writeFileSync(junk, Buffer.alloc(4096, 7));
      assert.throws(() => new Model(junk),
        (e) => e instanceof TranscribeError && e.status === Status.ERR_GGUF && e.message.length > 0);
      const cut = path.join(dir, 'cut.gguf');
      fs.writeFileSync(cut, fs.readFileSync(MODEL).subarray(0, 100000));
      assert.throws(() => new Model(cut), (e) => e instanceof TranscribeError && e.status !== 0);
      await rejectsWith(Model.load(junk), Status.ERR_GGUF);
      await rejectsWith(Model.load('/nonexistent/model.gguf'), Status.ERR_FILE_NOT_FOUND);
      assert.throws(() => new Model(42), (e) => e.status === INVALID);
      assert.throws(() => new Model(MODEL, { threads: -1 }), (e) => e.status === INVALID);
      assert.throws(() => new Model(MODEL, { kvType: 'f8' }), (e) => e.status === INVALID);
      assert.throws(() => new Model(MODEL, { thread: 2 }), /unknown model option/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  test('a closed model', async () => {
    const m = new Model(MODEL);
    const inflight = m.transcribe(SAMPLE);
    m.close();
    m.close(); // idempotent
    same(await inflight, cliJson(SAMPLE)); // a call in flight finishes
    assert.ok(m.closed);
    await rejectsWith(m.transcribe(SAMPLE), INVALID, /closed/);
    assert.throws(() => m.stream(), /closed/);
    assert.throws(() => m.abort(), /closed/);
  });
});

test('4 concurrent transcriptions on two models equal the sequential ones', async () => {
  const a = new Model(MODEL);
  const b = await Model.load(MODEL);
  try {
    const inputs = [SAMPLE, JFK, readWav(JFK).float32, fs.readFileSync(SAMPLE)];
    const expected = [];
    for (const x of inputs) expected.push(await a.transcribe(x, { tokens: true }));
    for (let round = 0; round < 3; round++) {
      const got = await Promise.all(
        inputs.map((x, i) => (i % 2 ? b : a).transcribe(x, { tokens: true })));
      got.forEach((r, i) => same(r, expected[i]));
    }
    same(expected[0], cliJson(SAMPLE, ['--tokens']));
    same(expected[1], cliJson(JFK, ['--tokens']));
  } finally {
    a.close();
    b.close();
  }
});

test('worker threads: each loads the addon and transcribes; a worker ends with a model open', async () => {
  const { Worker } = require('node:worker_threads');
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const { Model } = require(${JSON.stringify(require.resolve('..'))});
    const m = new Model(workerData.model);
    m.transcribe(workerData.file).then((r) => {
      parentPort.postMessage(JSON.stringify(r));
      if (workerData.close) m.close(); // else the worker's teardown frees it
    });`;
  const run = (file, close) => new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { model: MODEL, file, close } });
    let msg = null;
    w.on('message', (m) => { msg = m; });
    w.on('error', reject);
    w.on('exit', (c) => (c === 0 ? resolve(msg) : reject(new Error(`worker exit ${c}`))));
  });
  const [a, b] = await Promise.all([run(SAMPLE, true), run(JFK, false)]);
  assert.equal(a, JSON.stringify(cliJson(SAMPLE)));
  assert.equal(b, JSON.stringify(cliJson(JFK)));
});
