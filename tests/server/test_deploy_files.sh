#!/usr/bin/env bash
# The deployment files of tools/server/deploy, checked where a checker exists:
# haproxy.cfg with `haproxy -c`; the systemd unit with `systemd-analyze
# verify` (on an instance, its ExecStart pointed at the built server; any
# line it prints about the unit fails the test, since it exits 0 on unknown
# keys); the Containerfile by a small reader of its own (no podman, buildah
# or hadolint here): known instructions, FROM first, JSON-array ENTRYPOINT
# and CMD, COPY --from naming an earlier stage. Each checker that is missing
# is said; with none at all the test is skipped (77).
# usage: test_deploy_files.sh SERVER SOURCE_DIR
set -u
SERVER=$(realpath "$1") SRC=$2
D=$SRC/tools/server/deploy
WORK=$(mktemp -d -t tr-deploy.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
FAILS=0
CHECKS=0
check() {
    local what=$1; shift
    CHECKS=$((CHECKS + 1))
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; FAILS=$((FAILS + 1)); fi
}

HAPROXY=$(command -v haproxy || ls /usr/sbin/haproxy 2>/dev/null || true)
if [ -n "$HAPROXY" ]; then
    check "haproxy -c accepts haproxy.cfg" "$HAPROXY" -q -c -f "$D/haproxy.cfg"
    sed 's/balance leastconn/balance most-idle/' "$D/haproxy.cfg" >"$WORK/bad.cfg"
    check "... and refuses a broken copy" bash -c "! '$HAPROXY' -q -c -f '$WORK/bad.cfg' 2>/dev/null"
else
    echo "note: no haproxy: haproxy.cfg not checked (scripts/deps --test installs it)"
fi

# verify_unit FILE: systemd-analyze verify, any line about the unit is a failure
verify_unit() {
    local out
    out=$(systemd-analyze verify "$1" 2>&1) || { echo "$out"; return 1; }
    if echo "$out" | grep -F "$(basename "$1")" >/dev/null; then echo "$out"; return 1; fi
    return 0
}
if command -v systemd-analyze >/dev/null 2>&1; then
    sed "s|/usr/local/bin/transcribe-server|$SERVER|" "$D/transcribe-server@.service" \
        >"$WORK/transcribe-server@8081.service"
    check "systemd-analyze verify accepts transcribe-server@.service" \
        verify_unit "$WORK/transcribe-server@8081.service"
    sed 's/^KillMode=mixed/KillMode=bogus/' "$WORK/transcribe-server@8081.service" \
        >"$WORK/transcribe-server@8082.service"
    check "... and flags a broken copy" bash -c \
        "systemd-analyze verify '$WORK/transcribe-server@8082.service' 2>&1 | grep -q 'kill mode'"
    check "the unit's stop timeout covers drain + grace" bash -c \
        "grep -q -- '--drain-delay 3 --shutdown-grace 60' '$D/transcribe-server@.service' &&
         grep -q '^TimeoutStopSec=75' '$D/transcribe-server@.service'"
else
    echo "note: no systemd-analyze: the unit is not checked"
fi

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
if [ -n "$PY" ]; then
    check "the Containerfile reads as valid instructions" "$PY" - "$D/Containerfile" <<'EOF'
import json, re, sys
KNOWN = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
         "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
text = open(sys.argv[1]).read()
lines, cur = [], ""
for raw in text.splitlines():
    if not cur and (not raw.strip() or raw.lstrip().startswith("#")):
        continue
    if raw.rstrip().endswith("\\"):
        cur += raw.rstrip()[:-1] + " "
        continue
    lines.append(cur + raw)
    cur = ""
if cur:
    sys.exit("a line continues past the end")
stages, bad = [], []
for n, l in enumerate(lines):
    word, _, rest = l.strip().partition(" ")
    if word.upper() not in KNOWN or word != word.upper():
        bad.append(f"unknown instruction {word!r}")
    if n == 0 and word != "FROM":
        bad.append("the first instruction is not FROM")
    if word == "FROM":
        m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", rest.strip(), re.I)
        if not m:
            bad.append(f"bad FROM {rest!r}")
        else:
            stages.append(m.group(2))
    if word in ("ENTRYPOINT", "CMD"):
        try:
            v = json.loads(rest)
            assert isinstance(v, list) and all(isinstance(x, str) for x in v)
        except Exception:
            bad.append(f"{word} is not a JSON array of strings")
    if word == "COPY":
        m = re.search(r"--from=(\S+)", rest)
        if m and m.group(1) not in stages[:-1]:
            bad.append(f"COPY --from={m.group(1)} names no earlier stage")
if bad:
    sys.exit("; ".join(bad))
print(f"     {len(lines)} instructions, stages {stages}")
EOF
fi
if [ "$CHECKS" -eq 0 ]; then
    echo "skip: neither haproxy, systemd-analyze nor python3 here"
    exit 77
fi
echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" -eq 0 ]
