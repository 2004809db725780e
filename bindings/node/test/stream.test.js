'use strict';
// model.stream(): committed text only grows, finish() commits the rest and
// gives the result; steps run one at a time; abort, close, bad input.
const assert = require('node:assert/strict');
const { test, before, after } = require('node:test');

const { Model, TranscribeError, Status } = require('..');
const { MODEL, SAMPLE, readWav } = require('./helpers');

let model;
let pcm;
before(() => {
  model = new Model(MODEL);
  pcm = readWav(SAMPLE).float32;
});
after(() => model.close());

async function feedAll(s, samples, chunk) {
  const updates = [];
  for (let pos = 0; pos < samples.length; pos += chunk) {
    updates.push(await s.feed(samples.subarray(pos, pos + chunk)));
  }
  return updates;
}

test('the bundled model streams through the window driver', () => {
  const caps = model.info.capabilities;
  assert.ok(caps.streaming && !caps.nativeStreaming);
  assert.throws(() => model.stream({ windowFallback: false }),
    (e) => e instanceof TranscribeError && e.status === Status.ERR_NOT_IMPLEMENTED);
});

test('committed text only grows; finish commits the rest', async () => {
  const s = model.stream();
  assert.equal(s.state, 'active');
  const updates = await feedAll(s, pcm, 8000); // 0.5 s steps
  let prev = '';
  let received = 0;
  for (const u of updates) {
    assert.ok(u.committed.startsWith(prev), `${prev} -> ${u.committed}`);
    assert.equal(u.newCommitted, u.committed.slice(prev.length));
    assert.ok(!u.isFinal && u.inputMs >= received);
    prev = u.committed;
    received = u.inputMs;
  }
  assert.ok(Math.abs(received - pcm.length / 16) <= 1, `${received} ms received`);
  const final = await s.finish({ tokens: true, formats: ['srt'] });
  assert.ok(final.isFinal && final.committed.startsWith(prev));
  assert.equal(final.tentative, '');
  assert.ok(final.committed.trim().length > 0);
  assert.equal(s.state, 'finished');
  const r = final.result;
  assert.ok(r.text.includes('thousand'), r.text);
  assert.equal(r.duration, 4.942);
  assert.ok(Array.isArray(r.segments) && Array.isArray(r.words) && Array.isArray(r.tokens));
  assert.match(r.formatted.srt, /^1\n00:00:0/);
  await assert.rejects(s.feed(pcm.subarray(0, 1600)), /finished/);
  s.close();
  assert.equal(s.state, 'closed');
  await assert.rejects(s.feed(pcm.subarray(0, 1600)), /closed/);
  await assert.rejects(s.finish(), /closed/);
});

test('steps queued without awaiting run in order', async () => {
  const s = model.stream();
  try {
    const steps = [];
    for (let pos = 0; pos < pcm.length; pos += 16000) steps.push(s.feed(pcm.subarray(pos, pos + 16000)));
    const fin = s.finish();
    const ups = await Promise.all(steps);
    for (let i = 1; i < ups.length; i++) assert.ok(ups[i].inputMs > ups[i - 1].inputMs);
    assert.ok((await fin).result.text.includes('thousand'));
  } finally {
    s.close();
  }
});

test('feed copies the samples when called; empty PCM changes nothing', async () => {
  const s = model.stream({ commit: 'finalize' });
  const first = await s.feed(new Float32Array(0));
  assert.ok(!first.changed && first.inputMs === 0 && first.text === '');
  // one buffer refilled by the caller as soon as feed() returns (a capture loop)
  const buf = new Float32Array(16000);
  let last;
  for (let pos = 0; pos < pcm.length; pos += buf.length) {
    const n = Math.min(buf.length, pcm.length - pos);
    buf.set(pcm.subarray(pos, pos + n));
    const step = s.feed(n === buf.length ? buf : buf.subarray(0, n));
    buf.fill(0);
    last = await step;
  }
  const same = await s.feed(new Float32Array(0));
  assert.ok(!same.changed && same.newCommitted === '' && same.inputMs === last.inputMs);
  const f = await s.finish();
  assert.ok(f.committed.includes('thousand'), f.committed);
  await assert.rejects(s.finish(), /finished/);
  s.close();
});

test('Int16Array and Float64Array feeds', async () => {
  const s = model.stream({ commit: 'finalize' });
  const { int16 } = readWav(SAMPLE);
  for (const u of await feedAll(s, int16, 16000)) assert.equal(u.committed, '');
  await s.feed(Float64Array.from(pcm.subarray(0, 160)));
  const f = await s.finish();
  assert.ok(f.committed.includes('thousand'), f.committed);
  s.close();
});

test('abort: stream.abort(), a signal, model.abort()', async () => {
  for (const how of ['stream', 'signal', 'model']) {
    const ac = new AbortController();
    const s = model.stream(how === 'signal' ? { signal: ac.signal } : {});
    await s.feed(pcm.subarray(0, 16000));
    if (how === 'stream') s.abort();
    if (how === 'signal') ac.abort();
    if (how === 'model') model.abort();
    const r = s.feed(pcm.subarray(16000, 48000)).then(() => s.finish());
    if (how === 'model') {
      // model.abort() stops the steps in flight; a later step runs
      await r;
    } else {
      await assert.rejects(r, (e) => e instanceof TranscribeError && e.status === Status.ERR_ABORTED);
      assert.equal(s.state, 'failed');
      // and every later step, without the C layer's words
      await assert.rejects(s.finish(), (e) => e.status === Status.ERR_ABORTED && !/transcribe_/.test(e.message));
    }
    s.close();
  }
});

test('bad input', async () => {
  for (const bad of [undefined, 'x', [0.5], new Uint8Array(10), {}]) {
    const s = model.stream();
    await assert.rejects(s.feed(bad), (e) => e.status === Status.ERR_INVALID_ARG);
    s.close();
  }
  assert.throws(() => model.stream({ commit: 'sometimes' }), /commit/);
  assert.throws(() => model.stream({ agreement: 99 }), /agreement/);
  assert.throws(() => model.stream({ windowFallback: 'yes' }), /windowFallback/);
  assert.throws(() => model.stream({ diarize: true }), /unknown stream option/);
  const s = model.stream();
  await assert.rejects(s.finish({ formats: ['pdf'] }), /format/);
  s.close();
});

test('abort before any step: the steps reject ABORTED', async () => {
  const s = model.stream();
  s.abort();
  await assert.rejects(s.feed(pcm.subarray(0, 1600)), (e) => e.status === Status.ERR_ABORTED);
  await assert.rejects(s.finish(), (e) => e.status === Status.ERR_ABORTED);
  s.close();
  assert.equal(s.state, 'closed');
  const { Stream } = require('..');
  assert.throws(() => new Stream(), TypeError);
});

test('closing the model closes its streams', async () => {
  const m = new Model(MODEL);
  const s = m.stream();
  await s.feed(pcm.subarray(0, 16000));
  m.close();
  assert.equal(s.state, 'closed');
  await assert.rejects(s.feed(pcm.subarray(0, 16000)), /closed/);
});

test('a stream with the VAD commits each speech region', async () => {
  const s = model.stream({ vad: true });
  const withSilence = new Float32Array(pcm.length + 32000);
  withSilence.set(pcm, 16000);
  await feedAll(s, withSilence, 8000);
  const f = await s.finish();
  assert.ok(f.committed.includes('thousand'), f.committed);
  assert.ok(f.result.segments.every((seg) => seg.t0_ms >= 500), JSON.stringify(f.result.segments));
  s.close();
  assert.throws(() => model.stream({ vadOptions: { threshold: 0.4 } }), /without vad/);
});
