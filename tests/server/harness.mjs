// Shared by the node tests: start a transcribe-server on a free loopback
// port (it binds port 0 and prints the port), stop it at the end (also on
// failure), and count checks.
import { spawn, spawnSync } from "node:child_process";

export function startServer(bin, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ["--port", "0", ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let log = "";
    const timer = setTimeout(() => { p.kill("SIGKILL"); reject(new Error("server did not start:\n" + log)); }, 30000);
    p.stderr.on("data", (d) => {
      log += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(log);
      if (m && !p.url) {
        clearTimeout(timer);
        p.url = `http://127.0.0.1:${m[1]}`;
        resolve(p);
      }
    });
    p.on("exit", (code) => { if (!p.url) { clearTimeout(timer); reject(new Error(`server exited ${code}:\n${log}`)); } });
    const stop = () => { try { p.kill("SIGKILL"); } catch {} };
    process.on("exit", stop);
  });
}

export function stopServer(p) {
  return new Promise((resolve) => {
    if (p.exitCode !== null) return resolve(p.exitCode);
    const t = setTimeout(() => p.kill("SIGKILL"), 20000);
    p.on("exit", (code) => { clearTimeout(t); resolve(code); });
    p.kill("SIGTERM");
  });
}

// The CLI's JSON for the same file and model (the reference for the text
// and times).
export function cliJson(cli, args) {
  const r = spawnSync(cli, ["-q", "-f", "json", ...args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`CLI failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

let checks = 0, fails = 0;
export function check(what, ok, detail) {
  checks++;
  if (ok) console.log(`ok   ${what}`);
  else { fails++; console.log(`FAIL ${what}${detail !== undefined ? ": " + JSON.stringify(detail).slice(0, 400) : ""}`); }
}
export function finish() {
  console.log(`${checks} checks, ${fails} failed`);
  return fails === 0 ? 0 : 1;
}
export const near = (a, b, tol = 0.0015) => typeof a === "number" && Math.abs(a - b) <= tol;

// Exit code 77: ctest's "skipped" (SKIP_RETURN_CODE).
export function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(77);
}
