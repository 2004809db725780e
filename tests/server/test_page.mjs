// The page at / in a real browser: headless Debian chromium driven by
// puppeteer-core uploads a sample, waits for the transcript, checks its text
// against the CLI's, and that clicking a word or a segment seeks the audio
// player there; a diarizing model (MOSS) offers "Speakers", and its rows show
// who speaks (issue 31 item 5). A screenshot is written as a test artifact.
// Usage: node test_page.mjs SERVER CLI SOURCE_DIR SCREENSHOT.png
import fs from "node:fs";
import path from "node:path";
import { startServer, stopServer, cliJson, check, finish, near, skip } from "./harness.mjs";

const [server, cli, src, shot] = process.argv.slice(2);
let puppeteer;
try { ({ default: puppeteer } = await import("puppeteer-core")); }
catch { skip("puppeteer-core is not installed (npm ci in tests/server)"); }
const chrome = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find((p) => fs.existsSync(p));
if (!chrome) skip("no chromium (apt-get install chromium)");

const pk = path.join(src, "models/parakeet-ctc-synth-en.gguf");
const wav = path.join(src, "samples/synth-heldout-klatt3.wav");
const ref = cliJson(cli, ["-m", pk, wav]);
const moss = path.join(src, "tests/data/moss/tiny/moss-tiny-ref-F16.gguf");
const mix = path.join(src, "tests/data/moss/mix.wav");
const refSpk = cliJson(cli, ["-m", moss, "--diarize", mix]);

const srv = await startServer(server, ["-m", pk, "-m", "moss=" + moss, "-q"]);
let browser, rc = 1;
try {
  browser = await puppeteer.launch({
    executablePath: chrome, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required",
           "--mute-audio", "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"],
  });
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await page.setViewport({ width: 1000, height: 760 });
  await page.goto(srv.url + "/", { waitUntil: "networkidle0" });
  await page.waitForFunction(() => document.querySelectorAll("#model option").length > 0, { timeout: 10000 });
  check("model list filled", (await page.$eval("#model", (s) => s.value)) === "parakeet-ctc-synth-en");
  check("language list from the model", (await page.$$eval("#language option", (o) => o.map((x) => x.value))).includes("en"));
  check("no Speakers box for a model that cannot tell", await page.$eval("#spk-box", (e) => e.classList.contains("hidden")));

  const input = await page.$("#file");
  await input.uploadFile(wav);
  await page.waitForFunction(() => !document.querySelector("#go").disabled, { timeout: 5000 });
  await page.click("#go");
  await page.waitForSelector("#transcript .seg", { timeout: 30000 });
  const text = await page.$$eval("#transcript .seg .text", (els) => els.map((e) => e.textContent).join(" "));
  check("transcript text = CLI text", text.trim() === ref.text.trim(), [text, ref.text]);
  const status = await page.$eval("#status", (e) => e.textContent);
  check("status says done", status.startsWith("done"), status);

  // the player has the uploaded audio
  await page.waitForFunction(() => document.querySelector("#player").readyState >= 1, { timeout: 10000 });
  const dur = await page.$eval("#player", (a) => a.duration);
  check("player loaded the audio", near(dur, ref.duration, 0.05), dur);

  // clicking a word seeks to its start time (the CLI's word time)
  const refWords = ref.words.filter((w) => w.text.trim());
  const k = Math.floor(refWords.length / 2);
  const words = await page.$$("#transcript .word");
  check("one clickable span per word", words.length === refWords.length, [words.length, refWords.length]);
  await words[k].click();
  const want = refWords[k].t0_ms / 1000;
  await page.waitForFunction((t) => Math.abs(document.querySelector("#player").currentTime - t) < 0.3,
                             { timeout: 5000 }, want).catch(() => {});
  const t1 = await page.$eval("#player", (a) => a.currentTime);
  check(`clicking word "${refWords[k].text.trim()}" seeks to ${want} s`, Math.abs(t1 - want) < 0.3, t1);
  // clicking a segment's time seeks to the segment's start
  await page.$eval("#player", (a) => a.pause());
  await page.click("#transcript .seg .t");
  await page.waitForFunction(() => document.querySelector("#player").currentTime < 0.3, { timeout: 5000 }).catch(() => {});
  const t2 = await page.$eval("#player", (a) => a.currentTime);
  check("clicking a segment seeks to its start", near(t2, ref.segments[0].t0_ms / 1000, 0.3), t2);
  check("download buttons", (await page.$$("#dl-srt, #dl-vtt, #dl-json")).length === 3);
  // the SRT the page saves is the server's (and the CLI's) cues, not one cue per segment
  const pageCues = await page.evaluate(() => cues(","));
  check("page SRT cues = CLI cues", pageCues.length === ref.cues.length &&
        pageCues.every((c, i) => c.endsWith("\n" + ref.cues[i].text.trim())), [pageCues, ref.cues]);
  check("no errors in the page", errors.length === 0, errors);
  await page.$eval("#player", (a) => a.pause());
  fs.mkdirSync(path.dirname(shot), { recursive: true });
  await page.screenshot({ path: shot, fullPage: true });
  check(`screenshot written (${shot})`, fs.statSync(shot).size > 1000);

  // recording: chromium's fake microphone (a beep), recorded, turned into a
  // 16 kHz WAV in the page and transcribed
  await page.click("#record");
  await page.waitForFunction(() => document.querySelector("#record").textContent === "Stop", { timeout: 5000 });
  await new Promise((r) => setTimeout(r, 1500));
  await page.click("#record");
  await page.waitForFunction(() => /recording\.wav/.test(document.querySelector("#chosen").textContent), { timeout: 10000 })
    .catch(() => {});
  const chosen = await page.$eval("#chosen", (e) => e.textContent);
  check("a recording becomes a WAV upload", /^recording\.wav \(\d+ KiB\)$/.test(chosen), chosen);
  await page.click("#go");
  await page.waitForFunction(() => /^(done|failed)/.test(document.querySelector("#status").textContent), { timeout: 30000 });
  const st2 = await page.$eval("#status", (e) => e.textContent);
  check("the recording is transcribed", st2.startsWith("done") && / 1\.\d s of audio$/.test(st2), st2);
  check("no errors in the page after recording", errors.length === 0, errors);

  // speakers: MOSS with the box ticked shows each row's speaker, as the CLI's --diarize
  await page.select("#model", "moss");
  check("Speakers box for a diarizing model", !(await page.$eval("#spk-box", (e) => e.classList.contains("hidden"))));
  await page.click("#diarize");
  await input.uploadFile(mix);
  await page.waitForFunction(() => /mix\.wav/.test(document.querySelector("#chosen").textContent), { timeout: 5000 });
  await page.click("#go");
  await page.waitForFunction(() => /^(done|failed)/.test(document.querySelector("#status").textContent), { timeout: 60000 });
  const rows = await page.$$eval("#transcript .seg", (els) => els.map((e) => {
    const w = e.querySelector(".who");
    return [w ? w.textContent : "", e.querySelector(".text").textContent.trim()];
  }));
  const wantSpk = refSpk.segments.map((g) => [g.speaker || "", g.text.trim()]);
  check("rows show the CLI's speakers and text", JSON.stringify(rows) === JSON.stringify(wantSpk), [rows, wantSpk]);
  check("two speakers", new Set(rows.map((r) => r[0])).size === 2, rows);
  check("no errors in the page after diarizing", errors.length === 0, errors);
  rc = finish();
} finally {
  if (browser) await browser.close().catch(() => {});
  const code = await stopServer(srv);
  if (code !== 0) { console.log(`FAIL server exit code ${code}`); rc = 1; }
}
process.exit(rc);
