'use strict';
// The package as a user installs it: `npm pack` of bindings/node, installed
// offline into a fresh project, where npm's install step compiles the addon
// against this machine's Node headers and the built library (nothing is
// downloaded); then the README's example from that project with no
// variables set. And index.d.ts type-checks an example with Debian's tsc.
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test, before, after } = require('node:test');

const { SAMPLE, cliJson } = require('./helpers');

const PKG = path.resolve(__dirname, '..');
const LIB = process.env.TRANSCRIBE_TEST_LIBRARY;
let tmp;
before(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'transcribe-node-pkg-')); });
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function which(cmd) {
  try {
    return execFileSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).trim() || null;
  } catch (_) {
    return null;
  }
}

// the environment without the test runner's addon override
function cleanEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  delete env.TRANSCRIBE_NODE_ADDON;
  return env;
}

test('npm pack, npm install --offline, the README example', (t) => {
  if (!which('npm')) return t.skip('npm is not installed');
  if (!LIB) return t.skip('TRANSCRIBE_TEST_LIBRARY is not set (ctest sets it)');
  const packDir = path.join(tmp, 'pack');
  fs.mkdirSync(packDir);
  const npmOpts = ['--no-audit', '--no-fund', '--loglevel=error'];
  const tgz = execFileSync('npm', ['pack', '--pack-destination', packDir, ...npmOpts, PKG],
    { encoding: 'utf8', env: cleanEnv() }).trim().split('\n').pop();
  const proj = path.join(tmp, 'project');
  fs.mkdirSync(proj);
  fs.writeFileSync(path.join(proj, 'package.json'), '{"name":"demo","version":"1.0.0","private":true}\n');
  execFileSync('npm', ['install', '--offline', ...npmOpts, path.join(packDir, tgz)], {
    // the addon compiled by npm's install step (else the checkout's CMake build is used)
    cwd: proj, stdio: 'pipe', env: cleanEnv({ TRANSCRIBE_LIBRARY: LIB, TRANSCRIBE_NODE_BUILD: '1' }),
  });
  const installed = path.join(proj, 'node_modules', 'transcribe');
  assert.ok(!fs.lstatSync(installed).isSymbolicLink(), 'a copy, not a link to the checkout');
  assert.ok(fs.existsSync(path.join(installed, 'build', 'transcribe.node')));
  // the README's example, from the project, no variables
  const example = `
    const { Model, bundledModel } = require('transcribe');
    (async () => {
      const model = new Model(bundledModel());
      const result = await model.transcribe(${JSON.stringify(SAMPLE)});
      for (const s of result.segments) console.log(\`[\${s.t0_ms / 1000} -> \${s.t1_ms / 1000}] \${s.text}\`);
      console.log(JSON.stringify(result));
      model.close();
    })();`;
  const out = execFileSync(process.execPath, ['-e', example], { cwd: proj, encoding: 'utf8', env: cleanEnv() })
    .trim().split('\n');
  assert.equal(out[0], '[0 -> 4.942] it costs two thousand eight hundred and fifty nine dollars and fifty one cents');
  assert.equal(out[1], JSON.stringify(cliJson(SAMPLE)));
  const addon = execFileSync(process.execPath, ['-p', "require('transcribe').addonPath"],
    { cwd: proj, encoding: 'utf8', env: cleanEnv() }).trim();
  assert.equal(addon, path.join(fs.realpathSync(installed), 'build', 'transcribe.node'));
});

test('index.d.ts type-checks an example (tsc --strict)', (t) => {
  const tsc = which('tsc');
  if (!tsc) return t.skip('tsc is not installed (Debian: node-typescript; scripts/deps --test)');
  const file = path.join(tmp, 'example.ts');
  fs.writeFileSync(file, `
import { Model, Stream, TranscribeError, Status, Result, StreamUpdate, bundledModel, setLogLevel }
  from ${JSON.stringify(PKG)};
async function main(): Promise<void> {
  setLogLevel('error');
  const model: Model = await Model.load(bundledModel() ?? 'model.gguf', { threads: 2, kvType: 'f16' });
  const ac = new AbortController();
  const r: Result = await model.transcribe('a.wav', { language: 'en', timestamps: 'word', signal: ac.signal,
                                                      tokens: true, formats: ['srt'], vad: true,
                                                      vadOptions: { threshold: 0.6 } });
  const first: number = r.segments[0].t0_ms;
  const words: string[] = (r.words ?? []).map((w) => w.text);
  const speakers: (string | undefined)[] = [...(r.words ?? []), ...r.cues].map((w) => w.speaker);
  console.log(speakers);
  const srt: string | undefined = r.formatted.srt;
  console.log(first, words, srt, r.timings.encodeMs, model.info.capabilities.streaming);
  const s: Stream = model.stream({ commit: 'stable', agreement: 3 });
  const u: StreamUpdate = await s.feed(new Float32Array(16000));
  const f = await s.feed(new Int16Array(16000)).then(() => s.finish());
  console.log(u.committed, f.result.text, s.state);
  s.close();
  try {
    await model.transcribe(new Float32Array(0));
  } catch (e) {
    if (e instanceof TranscribeError && e.status === Status.ERR_INVALID_ARG) console.log(e.statusName);
  }
  model.close();
}
main();
`);
  execFileSync(tsc, ['--noEmit', '--strict', '--target', 'es2020', '--lib', 'es2020,dom',
    '--module', 'commonjs', '--moduleResolution', 'node', file], { encoding: 'utf8', stdio: 'pipe' });
  // and a misuse is an error
  fs.writeFileSync(file, `import { Model } from ${JSON.stringify(PKG)};\n` +
    `new Model('m.gguf').transcribe('a.wav', { timestamps: 'sometimes' });\n`);
  let out = null;
  try {
    execFileSync(tsc, ['--noEmit', '--strict', '--lib', 'es2020,dom', file], { encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    out = `${e.stdout}${e.stderr}`;
  }
  assert.match(out || 'tsc accepted it', /TS2322.*sometimes/);
});

test('packing leaves the checkout clean', () => {
  const st = execFileSync('git', ['status', '--porcelain', '--ignored', '--', '.'],
    { cwd: PKG, encoding: 'utf8' });
  assert.equal(st.split('\n').filter((l) => l.startsWith('!!')).join('\n'), '');
});
