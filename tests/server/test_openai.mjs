// transcribe-server through the official `openai` npm client, unchanged:
// transcriptions (json, verbose_json + word timestamps, srt, stream) and
// translations, each compared with the CLI's output for the same file and
// model. Usage: node test_openai.mjs SERVER CLI SOURCE_DIR
import fs from "node:fs";
import path from "node:path";
import { startServer, stopServer, cliJson, check, finish, near, skip } from "./harness.mjs";

const [server, cli, src] = process.argv.slice(2);
let OpenAI;
try { ({ default: OpenAI } = await import("openai")); }
catch { skip("the openai package is not installed (npm ci in tests/server)"); }

const pk = path.join(src, "models/parakeet-ctc-synth-en.gguf");
const wh = path.join(src, "tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf");
const wav = path.join(src, "samples/synth-heldout-klatt3.wav");
const jfk = path.join(src, "samples/jfk.wav");
const ref = cliJson(cli, ["-m", pk, wav]);
const refTr = cliJson(cli, ["-m", wh, "-t", jfk]);

const srv = await startServer(server, ["-m", pk, "-m", `whisper-tiny=${wh}`, "--api-key", "test-key", "-q"]);
let rc = 1;
try {
  const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "test-key", maxRetries: 0 });
  const model = "parakeet-ctc-synth-en";

  const list = await client.models.list();
  check("models.list has both", list.data.map((m) => m.id).join(",") === "parakeet-ctc-synth-en,whisper-tiny", list.data);

  const j = await client.audio.transcriptions.create({ file: fs.createReadStream(wav), model });
  check("json: text = CLI text", j.text === ref.text, [j.text, ref.text]);

  const v = await client.audio.transcriptions.create({
    file: fs.createReadStream(wav), model, response_format: "verbose_json",
    timestamp_granularities: ["word", "segment"],
  });
  check("verbose_json: text", v.text === ref.text, v.text);
  check("verbose_json: duration", near(v.duration, ref.duration), [v.duration, ref.duration]);
  check("verbose_json: language", v.language === "en", v.language);
  check("verbose_json: segments = CLI segments", v.segments.length === ref.segments.length &&
        v.segments.every((s, i) => near(s.start, ref.segments[i].t0_ms / 1000) && near(s.end, ref.segments[i].t1_ms / 1000)),
        [v.segments, ref.segments]);
  check("verbose_json: segment fields", v.segments.every((s, i) => s.id === i && Array.isArray(s.tokens) && s.tokens.length > 0 &&
        typeof s.avg_logprob === "number"), v.segments[0]);
  const refWords = ref.words.filter((w) => w.text.trim());
  check("verbose_json: words = CLI words", v.words.length === refWords.length &&
        v.words.every((w, i) => w.word === refWords[i].text.trim() && near(w.start, refWords[i].t0_ms / 1000) &&
                                near(w.end, refWords[i].t1_ms / 1000)), [v.words.slice(0, 3), refWords.slice(0, 3)]);

  check("verbose_json: cues = CLI cues (what srt prints)", JSON.stringify(v.cues) === JSON.stringify(ref.cues),
        [v.cues, ref.cues]);
  // an 11 s segment: cut into cues at words, as the CLI's SRT
  const refJfk = cliJson(cli, ["-m", pk, jfk]);
  const vj = await client.audio.transcriptions.create({ file: fs.createReadStream(jfk), model, response_format: "verbose_json" });
  check("verbose_json: a long segment's cues = CLI cues", vj.cues.length > vj.segments.length &&
        JSON.stringify(vj.cues) === JSON.stringify(refJfk.cues), [vj.cues, refJfk.cues]);

  const srt = await client.audio.transcriptions.create({ file: fs.createReadStream(wav), model, response_format: "srt" });
  const cue = ref.cues[0];
  const ts = (ms) => new Date(ms).toISOString().slice(11, 23).replace(".", ",");
  check("srt: first cue = CLI cue", typeof srt === "string" &&
        srt.startsWith(`1\n${ts(cue.t0_ms)} --> ${ts(cue.t1_ms)}\n${cue.text}\n`), srt);

  const stream = await client.audio.transcriptions.create({ file: fs.createReadStream(wav), model, stream: true });
  let deltas = "", done = null, n = 0;
  for await (const ev of stream) {
    if (ev.type === "transcript.text.delta") { deltas += ev.delta; n++; }
    else if (ev.type === "transcript.text.done") done = ev.text;
  }
  check("stream: deltas arrive", n > 0, n);
  check("stream: deltas add up to the text", deltas === ref.text, deltas);
  check("stream: done = CLI text", done === ref.text, done);

  const tr = await client.audio.translations.create({ file: fs.createReadStream(jfk), model: "whisper-tiny" });
  check("translations: text = CLI -t text", tr.text === refTr.text, [tr.text, refTr.text]);

  try {
    await client.audio.transcriptions.create({ file: fs.createReadStream(wav), model: "no-such-model" });
    check("unknown model throws", false);
  } catch (e) {
    check("unknown model: NotFoundError 404", e instanceof OpenAI.NotFoundError && e.status === 404, e.status);
    check("unknown model: code model_not_found", e.code === "model_not_found", e.error);
  }
  try {
    const bad = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "wrong", maxRetries: 0 });
    await bad.audio.transcriptions.create({ file: fs.createReadStream(wav), model });
    check("wrong key throws", false);
  } catch (e) {
    check("wrong key: AuthenticationError 401", e instanceof OpenAI.AuthenticationError && e.status === 401, e.status);
  }
  rc = finish();
} finally {
  const code = await stopServer(srv);
  if (code !== 0) { console.log(`FAIL server exit code ${code}`); rc = 1; }
}
process.exit(rc);
