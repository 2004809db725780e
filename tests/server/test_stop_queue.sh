#!/usr/bin/env bash
# A stopping server answers every connection the kernel has already accepted
# for it. The server is paused (SIGSTOP) while 12 clients connect and send
# whole requests: the kernel completes their handshakes and queues them on
# the listening socket. Then SIGTERM and SIGCONT: the server's accept thread
# and its stop race for that queue; whichever takes a connection, its client
# must get a whole answer, 200 or 503 "shutting_down" with Retry-After, never
# a reset or an empty reply (closing a listening socket resets what is queued
# on it, which a balancer cannot retry for a streamed upload). The server
# exits 0. Skips (77) without python3.
# usage: test_stop_queue.sh SERVER SOURCE_DIR
SERVER=$1
SRC=$2
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
if [ -z "$PY" ]; then
    echo "skip: no python3 for the clients"
    exit 77
fi
srv_start -m "$SRC/models/parakeet-ctc-synth-en.gguf" --parallel 1
kill -STOP "$SRV_PID"
"$PY" - "$PORT" "$SRV_PID" "$SRC/samples/synth-heldout-klatt3.wav" >"$WORK/clients.out" 2>&1 <<'PYEOF'
import io, os, signal, socket, sys, wave
port, pid = int(sys.argv[1]), int(sys.argv[2])
# the first second of the recording: 32 KB a request, so that whole requests
# fit in the kernel's buffers while nobody reads them
with wave.open(sys.argv[3], "rb") as r:
    params, frames = r.getparams(), r.readframes(16000)
buf = io.BytesIO()
with wave.open(buf, "wb") as w:
    w.setparams(params)
    w.writeframes(frames)
wav = buf.getvalue()
b = "tr-stop-queue-boundary"
body = (f'--{b}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n'
        'Content-Type: audio/wav\r\n\r\n').encode() + wav + f'\r\n--{b}--\r\n'.encode()
head = (f'POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\n'
        f'Content-Type: multipart/form-data; boundary={b}\r\nContent-Length: {len(body)}\r\n'
        'Connection: close\r\n\r\n').encode()
socks = []
for i in range(12):
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(head + body)  # the kernel takes it: the server is paused
    socks.append(s)
os.kill(pid, signal.SIGTERM)
os.kill(pid, signal.SIGCONT)
counts = {"200": 0, "503": 0, "bad": 0}
for i, s in enumerate(socks):
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except OSError as e:
        data = b""
        print(f"client {i}: {e}")
    s.close()
    status = data[9:12].decode(errors="replace") if data.startswith(b"HTTP/1.1 ") else ""
    if status == "200" or (status == "503" and b"shutting_down" in data and b"Retry-After" in data):
        counts[status] += 1
    else:
        counts["bad"] += 1
        print(f"client {i}: {data[:80]!r}")
print(f"answers: {counts['200']} x 200, {counts['503']} x 503; without an answer: {counts['bad']}")
sys.exit(1 if counts["bad"] else 0)
PYEOF
rc=$?
sed 's/^/     | /' "$WORK/clients.out"
check "every queued connection got a whole answer, 200 or 503 (rc=$rc)" [ "$rc" -eq 0 ]
qrc=$rc
rc=0
for _ in $(seq 1 600); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
wait "$SRV_PID" || rc=$?
SRV_PID=""
check "the server exited 0 (rc=$rc)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] && [ "$qrc" -eq 0 ] || tail -30 "$SRV_LOG"
finish
