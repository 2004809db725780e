'use strict';
// npm's install step (package.json "install"): makes sure index.js finds a
// transcribe.node built on this machine against the headers of the node
// that runs it. Nothing is downloaded and node-gyp is not used:
//  1. TRANSCRIBE_NODE_ADDON names an addon, or the checkout's CMake build
//     has one (build/bindings/node/transcribe.node, made when configure
//     found Node's headers): nothing to do;
//  2. else src/addon.c is compiled with cc into build/transcribe.node, with
//     Node's headers from <node prefix>/include/node or /usr/include/node
//     (Debian: libnode-dev) and the library from $TRANSCRIBE_LIBRARY (the
//     file or its folder), the checkout's build/lib, or `pkg-config
//     transcribe` (a `cmake --install` prefix on PKG_CONFIG_PATH); the
//     header from the library's ../include or the checkout's include/.
//     The addon records the library's folder as its run path.
//     TRANSCRIBE_NODE_BUILD=1 compiles even where case 1 holds.
// The checkout is the one the package sits in, or, for a package packed
// with `npm pack` and installed elsewhere, the one origin.json names: the
// prepack step (`node build-addon.js --record-origin`) writes it into the
// tarball and postpack (`--forget-origin`) removes it from the checkout.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = __dirname;
const originFile = path.join(here, 'origin.json');
const isCheckout = (d) => !!d && fs.existsSync(path.join(d, 'include', 'transcribe.h'));

if (process.argv[2] === '--record-origin') {
  fs.writeFileSync(originFile, JSON.stringify({ checkout: path.resolve(here, '..', '..') }) + '\n');
  process.exit(0);
}
if (process.argv[2] === '--forget-origin') {
  fs.rmSync(originFile, { force: true });
  process.exit(0);
}

let checkout = path.resolve(here, '..', '..');
if (!isCheckout(checkout) && fs.existsSync(originFile)) {
  checkout = JSON.parse(fs.readFileSync(originFile, 'utf8')).checkout;
}
const inCheckout = isCheckout(checkout);

function fail(msg) {
  console.error(`transcribe: ${msg}`);
  process.exit(1);
}

function existing() {
  if (process.env.TRANSCRIBE_NODE_ADDON) return process.env.TRANSCRIBE_NODE_ADDON;
  const cmake = path.join(checkout, 'build', 'bindings', 'node', 'transcribe.node');
  return inCheckout && fs.existsSync(cmake) ? cmake : null;
}

function nodeHeaders() {
  const prefix = path.dirname(path.dirname(fs.realpathSync(process.execPath)));
  for (const d of [path.join(prefix, 'include', 'node'), '/usr/include/node', '/usr/local/include/node']) {
    if (fs.existsSync(path.join(d, 'node_api.h'))) return d;
  }
  return fail('no node_api.h next to this node or in /usr/include/node (Debian: apt-get install libnode-dev)');
}

function libraryFlags() {
  let libdir = process.env.TRANSCRIBE_LIBRARY;
  if (!libdir && inCheckout && fs.existsSync(path.join(checkout, 'build', 'lib', 'libtranscribe.so'))) {
    libdir = path.join(checkout, 'build', 'lib');
  }
  if (libdir) {
    if (fs.existsSync(libdir) && fs.statSync(libdir).isFile()) libdir = path.dirname(libdir);
    libdir = path.resolve(libdir);
    const inc = [path.join(libdir, '..', 'include'), inCheckout ? path.join(checkout, 'include') : null]
      .find((d) => d && fs.existsSync(path.join(d, 'transcribe.h')));
    if (!inc) fail(`no transcribe.h in ${path.join(libdir, '..', 'include')} or a checkout`);
    return [`-I${inc}`, `-L${libdir}`, '-ltranscribe', `-Wl,-rpath,${libdir}`];
  }
  try {
    return execFileSync('pkg-config', ['--cflags', '--libs', 'transcribe'], { encoding: 'utf8' })
      .trim().split(/\s+/).filter(Boolean);
  } catch (_) {
    return fail('libtranscribe not found: build the checkout (cmake --build build), set ' +
      'TRANSCRIBE_LIBRARY to the folder of libtranscribe.so, or put its prefix\'s ' +
      'lib/pkgconfig on PKG_CONFIG_PATH');
  }
}

const found = existing();
if (found && process.env.TRANSCRIBE_NODE_BUILD !== '1') {
  console.log(`transcribe: using the addon ${found}`);
  process.exit(0);
}
const out = path.join(here, 'build', 'transcribe.node');
fs.mkdirSync(path.dirname(out), { recursive: true });
const cc = process.env.CC || 'cc';
const args = ['-std=c11', '-O2', '-fPIC', '-shared', '-fvisibility=hidden', '-Wall',
  '-o', out, path.join(here, 'src', 'addon.c'), '-isystem', nodeHeaders(), ...libraryFlags(),
  '-lpthread'];
try {
  execFileSync(cc, args, { stdio: 'inherit' });
} catch (e) {
  fail(`${cc} failed (${e.message})`);
}
console.log(`transcribe: built ${out}`);
