# Shared by the server tests (sourced): start a transcribe-server on a free
# loopback port, stop it at the end (also on failure), small assertions.
# The caller sets SERVER (the binary) and calls srv_start ARGS...; the port is
# the one the server prints (it binds port 0, so no two tests collide).
set -u
SRV_PID=""
SRV_LOG=""
FAILS=0
CHECKS=0
WORK=$(mktemp -d -t tr-server-test.XXXXXX)

srv_cleanup() {
    if [ -n "$SRV_PID" ] && kill -0 "$SRV_PID" 2>/dev/null; then
        kill -TERM "$SRV_PID" 2>/dev/null
        for _ in $(seq 1 100); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SRV_PID" 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap srv_cleanup EXIT

# srv_start ARGS...: starts the server, waits for its "listening on" line,
# sets PORT and URL.
srv_start() {
    SRV_LOG="$WORK/server.$RANDOM.log"
    "$SERVER" --port 0 "$@" 2>"$SRV_LOG" &
    SRV_PID=$!
    PORT=""
    for _ in $(seq 1 300); do
        PORT=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\)/$|\1|p' "$SRV_LOG")
        [ -n "$PORT" ] && break
        kill -0 "$SRV_PID" 2>/dev/null || break
        sleep 0.05
    done
    if [ -z "$PORT" ]; then
        echo "FAIL: server did not start:"; cat "$SRV_LOG"; exit 1
    fi
    URL="http://127.0.0.1:$PORT"
}

# srv_stop: SIGTERM, then the exit status must be 0 (under ASan a leak
# makes it non-zero).
srv_stop() {
    kill -TERM "$SRV_PID"
    local rc=0
    wait "$SRV_PID" || rc=$?
    SRV_PID=""
    check "server exits 0 after SIGTERM (rc=$rc)" [ "$rc" -eq 0 ]
    if [ "$rc" -ne 0 ]; then tail -40 "$SRV_LOG"; fi
}

check() {
    local what=$1; shift
    CHECKS=$((CHECKS + 1))
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; FAILS=$((FAILS + 1)); fi
}

# code METHOD-ARGS...: prints the HTTP status of a curl call (body in $WORK/body,
# headers in $WORK/headers).
code() {
    curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' --max-time 60 "$@"
}

# raw TEXT [WAIT_S]: sends TEXT (printf format) on a fresh connection and
# prints the status code of the reply's first line ("noconn" if none opens).
raw() {
    local fmt=$1 wait_s=${2:-5} line=""
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || { echo "noconn"; return; }
    printf "$fmt" >&3 2>/dev/null
    IFS= read -r -t "$wait_s" line <&3
    exec 3<&- 3>&-
    echo "$line" | sed -n 's|^HTTP/1\.[01] \([0-9]*\).*|\1|p'
}

contains() { grep -q -- "$2" "$1"; }

alive() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$URL/health")" = 200 ]; }

finish() {
    echo "$CHECKS checks, $FAILS failed"
    [ "$FAILS" -eq 0 ]
}
