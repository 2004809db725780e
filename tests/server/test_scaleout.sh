#!/usr/bin/env bash
# Scale-out: two transcribe-server replicas behind HAProxy (the configuration
# of tools/server/deploy/haproxy.cfg with this test's free loopback ports), a
# bounded mix of requests from 4 clients (scaleout_client.py), one replica
# stopped (SIGTERM) in the middle. Every request must end answered with the
# CLI's output or refused with a retryable 503 - none lost, none hanging (60 s
# per request); the stopped replica drains (its /health 503 "draining" while
# it still serves, /metrics transcribe_draining 1) and exits 0, the other
# takes the rest. Prints the counts. Skips (77) without haproxy or python3.
# usage: test_scaleout.sh SERVER CLI SOURCE_DIR [REQUESTS per phase, default 120]
set -u
SERVER=$1 CLI=$2 SRC=$3 N=${4:-120}
AFTER=$((N / 4))
HAPROXY=$(command -v haproxy || ls /usr/sbin/haproxy 2>/dev/null || true)
if [ -z "$HAPROXY" ]; then
    echo "skip: haproxy is not installed (scripts/deps --test installs it)"
    exit 77
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
if [ -z "$PY" ]; then
    echo "skip: no python3 for the client"
    exit 77
fi
WORK=$(mktemp -d -t tr-scaleout.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
FAILS=0
CHECKS=0
check() {
    local what=$1; shift
    CHECKS=$((CHECKS + 1))
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; FAILS=$((FAILS + 1)); fi
}
MODEL=$SRC/models/parakeet-ctc-synth-en.gguf
# for a failed phase: the balancer's log of answers other than 200 (its
# termination state and retry count say who closed what)
balancer_log() {
    echo "     balancer log, answers other than 200 (last 20):"
    grep ' transcribe replicas/' "$WORK/haproxy.log" | grep -v ' 200 ' | tail -20 | sed 's/^/     | /'
}

# replica NAME [PORT]: starts one (on a free port); sets NAME_PID and NAME_PORT
replica() {
    local log=$WORK/$1.log port=""
    "$SERVER" --port "${2:-0}" -m "$MODEL" --parallel 2 --drain-delay 3 --shutdown-grace 30 -q 2>"$log" &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 300); do
        port=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\)/$|\1|p' "$log")
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if [ -z "$port" ]; then echo "FAIL: replica $1 did not start:"; cat "$log"; exit 1; fi
    eval "$1_PID=$pid; $1_PORT=$port"
}
replica A
replica B
LB_PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -e "s|bind 127.0.0.1:8080|bind 127.0.0.1:$LB_PORT|" \
    -e "s|server r1 127.0.0.1:8081|server r1 127.0.0.1:$A_PORT|" \
    -e "s|server r2 127.0.0.1:8082|server r2 127.0.0.1:$B_PORT|" \
    -e 's|^global$|global\n    log stderr format raw local0 info|' \
    -e 's|^defaults$|defaults\n    log global\n    option httplog|' \
    "$SRC/tools/server/deploy/haproxy.cfg" >"$WORK/haproxy.cfg"
check "the balancer's configuration is valid (haproxy -c)" \
    "$HAPROXY" -q -c -f "$WORK/haproxy.cfg"
"$HAPROXY" -db -f "$WORK/haproxy.cfg" >"$WORK/haproxy.log" 2>&1 &
PIDS+=($!)
LB=http://127.0.0.1:$LB_PORT
up=""
for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$LB/health")" = 200 ] && { up=1; break; }
    sleep 0.1
done
check "the balancer answers /health" [ -n "$up" ]

# what the answers must be: the CLI's output for the same audio
WAVS=()
for w in synth-heldout-klatt3 jfk; do
    "$CLI" -q -m "$MODEL" "$SRC/samples/$w.wav" >"$WORK/$w.txt" 2>/dev/null
    "$CLI" -q -m "$MODEL" -f srt "$SRC/samples/$w.wav" >"$WORK/$w.srt" 2>/dev/null
    WAVS+=(--wav "$SRC/samples/$w.wav:$WORK/$w.txt:$WORK/$w.srt")
done

# phase 1: replica A drains (SIGTERM, --drain-delay 3)
echo "phase 1: $N requests, replica r1 stopped with SIGTERM (drained) after $AFTER answers"
RC=0
timeout 240 "$PY" "$SRC/tests/server/scaleout_client.py" --url "$LB" \
    --stop-url "http://127.0.0.1:$A_PORT" --stop-pid "$A_PID" --stop-after "$AFTER" \
    --requests "$N" --clients 4 "${WAVS[@]}" >"$WORK/client.out" 2>&1 || RC=$?
sed 's/^/     | /' "$WORK/client.out"
check "every request answered correctly or refused with a retryable status, none lost (rc=$RC)" \
    [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || balancer_log
# the stopped replica has exited, 0; the other still serves
rc_a=timeout
for _ in $(seq 1 400); do
    if ! kill -0 "$A_PID" 2>/dev/null; then rc_a=0; wait "$A_PID" || rc_a=$?; break; fi
    sleep 0.1
done
check "the stopped replica exited 0 (rc=$rc_a)" [ "$rc_a" = 0 ]
check "its log shows the drain" grep -q "draining: /health answers 503" "$WORK/A.log"
curl -s --max-time 10 "http://127.0.0.1:$B_PORT/metrics" >"$WORK/b.metrics"
check "the other replica's /metrics counts its transcriptions" \
    grep -Eq '^transcribe_transcriptions_total [1-9]' "$WORK/b.metrics"
check "... and it is not draining" grep -q '^transcribe_draining 0' "$WORK/b.metrics"
check "the balancer still answers, from the other replica" bash -c \
    "curl -s -D - -o /dev/null --max-time 30 -F file=@'$SRC/samples/synth-heldout-klatt3.wav' \
     '$LB/v1/audio/transcriptions' | grep -qi '^x-served-by: r2'"

# phase 2: a new replica takes r1's port, the balancer brings it back, then it
# is stopped at once (two SIGTERMs: no drain delay): the balancer learns of it
# from refused connections and 503s, and still nothing is lost
replica C "$A_PORT"
back=""
for _ in $(seq 1 150); do
    curl -s -D - -o /dev/null --max-time 10 "$LB/v1/models" | grep -qi '^x-served-by: r1' && { back=1; break; }
    sleep 0.1
done
check "the balancer sends requests to the new replica on r1's port" [ -n "$back" ]
echo "phase 2: $N requests, replica r1 (new) stopped at once (two SIGTERMs) after $AFTER answers"
RC=0
timeout 240 "$PY" "$SRC/tests/server/scaleout_client.py" --url "$LB" \
    --stop-url "http://127.0.0.1:$C_PORT" --stop-pid "$C_PID" --stop-after "$AFTER" --abrupt \
    --requests "$N" --clients 4 "${WAVS[@]}" >"$WORK/client2.out" 2>&1 || RC=$?
sed 's/^/     | /' "$WORK/client2.out"
check "abrupt stop: every request answered or refused with a retryable status, none lost (rc=$RC)" \
    [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || balancer_log
rc_c=timeout
for _ in $(seq 1 400); do
    if ! kill -0 "$C_PID" 2>/dev/null; then rc_c=0; wait "$C_PID" || rc_c=$?; break; fi
    sleep 0.1
done
check "the abruptly stopped replica exited 0 (rc=$rc_c)" [ "$rc_c" = 0 ]
echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" -eq 0 ]
