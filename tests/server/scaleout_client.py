#!/usr/bin/env python3
"""The client of test_scaleout.sh: a bounded mix of requests through the
load balancer from several threads; after --stop-after answers it sends
SIGTERM to one replica (--stop-pid) and looks at that replica directly while
it drains (/health 503 "draining", /metrics transcribe_draining 1). Every
request must end answered correctly (200 with the CLI's text) or refused
with a retryable status (503); anything else (another status, a wrong body,
a reset, a timeout) counts as lost. Prints the counts; exit 1 when any was
lost, when nothing was answered after the stop, or the drain was not seen.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid


def multipart(fields, file_name, data):
    b = uuid.uuid4().hex
    out = []
    for k, v in fields.items():
        out.append(f'--{b}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    out.append(
        f'--{b}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
        "Content-Type: audio/wav\r\n\r\n".encode()
    )
    out.append(data)
    out.append(f"\r\n--{b}--\r\n".encode())
    return b"".join(out), f"multipart/form-data; boundary={b}"


def fetch(url, body=None, ctype=None, timeout=60):
    req = urllib.request.Request(url, data=body, method="POST" if body else "GET")
    if ctype:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True, help="the balancer")
    p.add_argument("--stop-url", required=True, help="the replica to stop, directly")
    p.add_argument("--stop-pid", type=int, required=True)
    p.add_argument("--stop-after", type=int, default=30)
    p.add_argument("--requests", type=int, default=120)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--abrupt", action="store_true",
                   help="a second SIGTERM at once: no drain delay, the balancer learns of the "
                        "stop from refused connections and 503s")
    p.add_argument("--wav", action="append", required=True, help="FILE:EXPECTED_TXT:EXPECTED_SRT")
    a = p.parse_args()

    inputs = []
    for spec in a.wav:
        path, txt, srt = spec.split(":")
        with open(path, "rb") as f:
            data = f.read()
        with open(txt, encoding="utf-8") as f:
            want_txt = f.read().strip()
        with open(srt, "rb") as f:
            want_srt = f.read()
        inputs.append((os.path.basename(path), data, want_txt, want_srt))
    # the mix: transcriptions in three formats over the inputs, and the
    # balancer's view of /health and /v1/models
    kinds = []
    for name, data, want_txt, want_srt in inputs:
        kinds += [("text", name, data, want_txt), ("srt", name, data, want_srt),
                  ("json", name, data, want_txt)]
    kinds += [("models", None, None, None)]

    lock = threading.Lock()
    counts = {"requests": 0, "answered": 0, "refused_retry": 0, "lost": 0}
    by_replica = {}
    after_stop = {}
    refusals = {}
    lost_detail = []
    stop = {"done": False, "t": None, "health": None, "draining": None}
    latency = []
    next_i = [0]

    def one(i):
        kind, name, data, want = kinds[i % len(kinds)]
        t0 = time.monotonic()
        try:
            if kind == "models":
                st, hd, body = fetch(a.url + "/v1/models")
                ok = st == 200 and b'"parakeet-ctc-synth-en"' in body
            else:
                fmt = "json" if kind == "json" else kind
                body_in, ctype = multipart({"response_format": fmt}, name, data)
                st, hd, body = fetch(a.url + "/v1/audio/transcriptions", body_in, ctype)
                if st == 200 and kind == "json":
                    ok = json.loads(body).get("text", "").strip() == want
                elif st == 200 and kind == "text":
                    ok = body.decode("utf-8").strip() == want
                else:
                    ok = st == 200 and body == want
        except Exception as e:  # a reset, a timeout: lost
            st, hd, ok, body = None, {}, False, repr(e).encode()
        dt = time.monotonic() - t0
        hd = {k.lower(): v for k, v in hd.items()}
        served = hd.get("x-served-by", "?")
        with lock:
            counts["requests"] += 1
            latency.append(dt)
            if ok:
                counts["answered"] += 1
                by_replica[served] = by_replica.get(served, 0) + 1
                if stop["done"]:
                    after_stop[served] = after_stop.get(served, 0) + 1
            elif st == 503:
                counts["refused_retry"] += 1
                key = f"503 from {served}, Retry-After={hd.get('retry-after', 'none')}"
                refusals[key] = refusals.get(key, 0) + 1
            else:
                counts["lost"] += 1
                lost_detail.append(f"#{i} {kind} {name}: status {st}: {body[:200]!r}")
            start_stop = not stop["done"] and counts["answered"] >= a.stop_after
            if start_stop:
                stop["done"] = True
        if start_stop:
            os.kill(a.stop_pid, signal.SIGTERM)
            stop["t"] = time.monotonic()
            if a.abrupt:
                time.sleep(0.05)
                try:
                    os.kill(a.stop_pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                return
            # the stopping replica, directly: it drains (health fails, still serving)
            for _ in range(40):
                try:
                    hs, _, hb = fetch(a.stop_url + "/health", timeout=5)
                    ms, _, mb = fetch(a.stop_url + "/metrics", timeout=5)
                except Exception:
                    break
                if hs == 503:
                    stop["health"] = hb.decode().strip()
                    stop["draining"] = [ln for ln in mb.decode().splitlines()
                                        if ln.startswith("transcribe_draining ")]
                    break
                time.sleep(0.05)

    def worker():
        while True:
            with lock:
                i = next_i[0]
                if i >= a.requests:
                    return
                next_i[0] += 1
            one(i)

    threads = [threading.Thread(target=worker) for _ in range(a.clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    latency.sort()
    print(f"requests {counts['requests']}, answered {counts['answered']}, "
          f"refused with retry {counts['refused_retry']}, lost {counts['lost']}")
    print(f"answered by replica: {dict(sorted(by_replica.items()))}; after the SIGTERM: "
          f"{dict(sorted(after_stop.items()))}")
    for k, v in sorted(refusals.items()):
        print(f"refused: {v} x {k}")
    if not a.abrupt:
        print(f"the stopped replica while draining: /health {stop['health']}; {stop['draining']}")
    if latency:
        print(f"latency p50 {latency[len(latency) // 2] * 1000:.0f} ms, max {latency[-1] * 1000:.0f} ms; "
              f"wall {wall:.1f} s, {a.clients} clients")
    for d in lost_detail[:10]:
        print("lost:", d)
    bad = []
    if counts["lost"]:
        bad.append(f"{counts['lost']} lost")
    if counts["requests"] != a.requests:
        bad.append("not every request ended")
    if not stop["done"]:
        bad.append("the replica was never stopped")
    if not after_stop:
        bad.append("nothing answered after the stop")
    if not a.abrupt and (not stop["health"] or "draining" not in stop["health"]):
        bad.append("the stopping replica's /health never said draining")
    if not a.abrupt and stop["draining"] != ["transcribe_draining 1"]:
        bad.append(f"its /metrics said {stop['draining']}")
    if bad:
        print("FAIL: " + "; ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
