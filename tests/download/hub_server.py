#!/usr/bin/env python3
"""A small stand-in for the model hub, for the download tests: files under
ROOT are served at /<repository>/resolve/main/<file> as the hub lays them
out, with the hub's X-Linked-Etag (sha256) and X-Linked-Size headers, Range
requests (206), and faults on demand. Loopback only, bounded: it exits after
--idle seconds without a request and after --lifetime seconds in all.

  --drop-after N   the first full GET of each file sends N bytes, then the
                   connection is cut (the client sees a short body)
  --redirect       resolve/main answers 302 to /cdn/<file> (as the hub sends
                   LFS files to its CDN), the headers on the 302
  --bad-sha        announce a wrong sha256
  --no-sha         announce none
  --error-once C   the first GET of each file is answered with HTTP status C
A path with "/loop-" in it redirects to itself forever. Each request is
logged to --log as "METHOD PATH RANGE".
"""
import argparse
import hashlib
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = None
state = {"last": time.monotonic(), "dropped": set(), "errored": set()}
lock = threading.Lock()


def log(line):
    with lock:
        state["last"] = time.monotonic()
        if args.log:
            with open(args.log, "a") as f:
                f.write(line + "\n")


class Hub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # quiet
        pass

    def do_HEAD(self):
        self.serve(head=True)

    def do_GET(self):
        self.serve(head=False)

    def fail(self, code, msg):
        body = (msg + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def serve(self, head):
        rng = self.headers.get("Range", "-")
        log(f"{self.command} {self.path} {rng}")
        path = self.path.split("?", 1)[0]
        if "/loop-" in path:
            self.send_response(302)
            self.send_header("Location", path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path.startswith("/cdn/"):
            rel = path[len("/cdn/"):]
            cdn = True
        else:
            rel = path.lstrip("/")
            cdn = False
        if ".." in rel.split("/"):
            return self.fail(400, "bad path")
        if args.error_once:
            with lock:
                first = rel not in state["errored"]
                state["errored"].add(rel)
            if first:
                return self.fail(args.error_once, "fault injected by the test")
        full = os.path.join(args.root, rel)
        if not os.path.isfile(full):
            return self.fail(404, "Entry not found")
        size = os.path.getsize(full)
        with open(full, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        if args.bad_sha:
            sha = hashlib.sha256(b"not the file").hexdigest()
        if args.redirect and not cdn:
            self.send_response(302)
            self.send_header("Location", "/cdn/" + rel)
            if not args.no_sha:
                self.send_header("X-Linked-Etag", f'"{sha}"')
                self.send_header("ETag", f'"{sha}"')
            self.send_header("X-Linked-Size", str(size))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start = 0
        if rng.startswith("bytes=") and rng.endswith("-"):
            try:
                start = int(rng[6:-1])
            except ValueError:
                return self.fail(400, "bad range")
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        self.send_header("Content-Length", str(size - start))
        self.send_header("Accept-Ranges", "bytes")
        if not args.no_sha and not cdn:
            self.send_header("X-Linked-Etag", f'"{sha}"')
            self.send_header("ETag", f'"{sha}"')
        if not cdn:
            self.send_header("X-Linked-Size", str(size))
        self.end_headers()
        if head:
            return
        limit = size - start
        with lock:
            cut = args.drop_after > 0 and start == 0 and rel not in state["dropped"]
            if cut:
                state["dropped"].add(rel)
                limit = min(limit, args.drop_after)
        with open(full, "rb") as f:
            f.seek(start)
            left = limit
            while left > 0:
                chunk = f.read(min(left, 65536))
                if not chunk:
                    break
                try:
                    self.wfile.write(chunk)
                except OSError:
                    return
                left -= len(chunk)
        if cut:
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that hung up (the full-disk case) is expected


def main():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log")
    p.add_argument("--drop-after", type=int, default=0)
    p.add_argument("--redirect", action="store_true")
    p.add_argument("--bad-sha", action="store_true")
    p.add_argument("--no-sha", action="store_true")
    p.add_argument("--error-once", type=int, default=0)
    p.add_argument("--idle", type=float, default=60)
    p.add_argument("--lifetime", type=float, default=300)
    args = p.parse_args()
    srv = Server(("127.0.0.1", 0), Hub)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(tmp, args.port_file)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    born = time.monotonic()
    while True:
        time.sleep(0.2)
        now = time.monotonic()
        if now - state["last"] > args.idle or now - born > args.lifetime:
            break
    srv.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
