'use strict';
// No leak over 500 load / transcribe / close cycles: the resident set after
// cycle 500 stays within a loose bound of the one after the warm-up. Every
// tenth cycle also streams, and every tenth leaves the model to the garbage
// collector instead of close().
const assert = require('node:assert/strict');
const { test } = require('node:test');

const { Model } = require('..');
const { MODEL, SAMPLE, readWav } = require('./helpers');

const CYCLES = 500;
const WARMUP = 100;
// Loose: models left to the collector make the heap and the allocator grow
// by about 20 MB before they level off (by cycle ~750 of such cycles alone);
// a leaked session or model per cycle would cost hundreds of MB. Small leaks
// are LeakSanitizer's (test_node_api in the sanitizer build).
const BOUND_MB = 60;

// After a collection and the finalizers it schedules (they run on the
// loop: the models left to the collector are freed there).
async function rssMb() {
  for (let k = 0; k < 2; k++) {
    if (global.gc) global.gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().rss / (1 << 20);
}

test(`${CYCLES} load / transcribe / close cycles: RSS stays flat`, async () => {
  const pcm = readWav(SAMPLE).float32;
  let base = 0;
  let text = null;
  const trace = [];
  for (let i = 1; i <= CYCLES; i++) {
    const m = new Model(MODEL, { threads: 1 });
    const r = await m.transcribe(i % 2 ? SAMPLE : pcm, { tokens: true, formats: ['srt'] });
    if (text === null) text = r.text;
    assert.equal(r.text, text);
    if (i % 10 === 0) {
      const s = m.stream();
      await s.feed(pcm.subarray(0, 16000));
      await s.finish();
      if (i % 20 === 0) s.close(); // else the model's close() closes it
    }
    if (i % 10 !== 5) m.close(); // cycle 5, 15, ...: the collector frees it
    if (i === WARMUP) base = await rssMb();
    if (i % 100 === 0) trace.push(`${i}: ${(await rssMb()).toFixed(1)}`);
  }
  const end = await rssMb();
  console.log(`rss (MB) after cycle ${trace.join(', ')}`);
  console.log(`rss after ${WARMUP} cycles ${base.toFixed(1)} MB, after ${CYCLES} ` +
    `${end.toFixed(1)} MB (growth ${(end - base).toFixed(1)} MB, bound ${BOUND_MB})`);
  assert.ok(end - base < BOUND_MB, `RSS grew ${(end - base).toFixed(1)} MB`);
});
