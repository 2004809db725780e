'use strict';
// Shared by the node --test suites: the repository's bundled model and
// samples, the CLI's JSON for comparison, and a small WAV reader.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MODEL = path.join(ROOT, 'models', 'parakeet-ctc-synth-en.gguf');
const SAMPLE = path.join(ROOT, 'samples', 'synth-heldout-klatt3.wav');
const JFK = path.join(ROOT, 'samples', 'jfk.wav');
const CLI = process.env.TRANSCRIBE_CLI || path.join(ROOT, 'build', 'bin', 'transcribe');

// The CLI's stdout for `transcribe -m MODEL ARGS... FILE`.
// (LD_PRELOAD is not passed on: a run of these tests under a preloaded ASan
// runtime, for an ASan build of the addon, must not preload it into a CLI
// that links its own.)
function cli(args) {
  const env = { ...process.env };
  delete env.LD_PRELOAD;
  return execFileSync(CLI, ['-q', '-m', MODEL, ...args], { encoding: 'utf8', env });
}

// The CLI's -f json object without the file and model names.
function cliJson(file, extra = []) {
  const r = JSON.parse(cli(['-f', 'json', ...extra, file]));
  delete r.file;
  delete r.model;
  return r;
}

// 16-bit PCM mono WAV -> { rate, int16, float32 } (the library's scaling: 1/32768).
function readWav(file) {
  const b = fs.readFileSync(file);
  let off = 12;
  let rate = 0;
  while (off + 8 <= b.length) {
    const id = b.toString('ascii', off, off + 4);
    const size = b.readUInt32LE(off + 4);
    if (id === 'fmt ') rate = b.readUInt32LE(off + 12);
    if (id === 'data') {
      const n = Math.floor(size / 2);
      const int16 = new Int16Array(n);
      for (let i = 0; i < n; i++) int16[i] = b.readInt16LE(off + 8 + 2 * i);
      const float32 = Float32Array.from(int16, (v) => v / 32768);
      return { rate, int16, float32 };
    }
    off += 8 + size + (size & 1);
  }
  throw new Error(`${file}: no data chunk`);
}

// A 16-bit mono WAV file's bytes for PCM samples.
function wavBytes(int16, rate) {
  const b = Buffer.alloc(44 + 2 * int16.length);
  b.write('RIFF', 0, 'ascii');
  b.writeUInt32LE(36 + 2 * int16.length, 4);
  b.write('WAVEfmt ', 8, 'ascii');
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(rate, 24);
  b.writeUInt32LE(rate * 2, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36, 'ascii');
  b.writeUInt32LE(2 * int16.length, 40);
  for (let i = 0; i < int16.length; i++) b.writeInt16LE(int16[i], 44 + 2 * i);
  return b;
}

// n seconds of audio: the sample repeated.
function longAudio(seconds) {
  const { float32 } = readWav(SAMPLE);
  const out = new Float32Array(16000 * seconds);
  for (let i = 0; i < out.length; i += float32.length) {
    out.set(float32.subarray(0, Math.min(float32.length, out.length - i)), i);
  }
  return out;
}

module.exports = { ROOT, MODEL, SAMPLE, JFK, CLI, cli, cliJson, readWav, wavBytes, longAudio };
