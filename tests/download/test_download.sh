#!/usr/bin/env bash
# transcribe-download against a local stand-in for the hub (hub_server.py, on
# 127.0.0.1, a free port): a fresh download, one resumed after the server cut
# the connection half-way (on the next run, and within one run), a 404, a
# 503 tried again and a 403 not, a redirect, a redirect loop, a checksum
# mismatch (the file removed), a page served in place of a .gguf (removed), a full
# cache (a file size limit, `ulimit -f`; and a 2 MiB tmpfs where the test may
# mount one, i.e. as root), no network, an unknown name (the closest names),
# --list, the progress bar on a terminal only, and `transcribe -m NAME`,
# `transcribe-server -m NAME` and Python's Model("NAME") offline from the
# cache. The served model is the bundled one under a catalogue of the test's
# own (TRANSCRIBE_CATALOGUE).
# usage: test_download.sh TRANSCRIBE-DOWNLOAD TRANSCRIBE LIBTRANSCRIBE.so|"" SOURCE_DIR [SERVER]
set -u
DL=$1 CLI=$2 LIB=$3 SRC=$4 SERVER=${5:-}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
if [ -z "$PY" ]; then
    echo "skip: no python3 for the stand-in hub server"
    exit 77
fi
WORK=$(mktemp -d -t tr-download-test.XXXXXX) # under $TMPDIR, else the system default
HUB_PID=""
FAILS=0
CHECKS=0
stop_hub() {
    if [ -n "$HUB_PID" ]; then
        kill "$HUB_PID" 2>/dev/null
        wait "$HUB_PID" 2>/dev/null
        HUB_PID=""
    fi
}
TMPFS=""
trap 'stop_hub; [ -n "$TMPFS" ] && umount "$TMPFS"; rm -rf "$WORK"' EXIT
check() {
    local what=$1; shift
    CHECKS=$((CHECKS + 1))
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; FAILS=$((FAILS + 1)); fi
}
has() { grep -q -- "$2" "$1"; }

MODEL=$SRC/models/parakeet-ctc-synth-en.gguf
WAV=$SRC/samples/synth-heldout-klatt3.wav
SIZE=$(stat -c %s "$MODEL")
# the hub's layout: <repository>/resolve/main/<file>
mkdir -p "$WORK/hub/test-org/synth-ctc-gguf/resolve/main"
cp "$MODEL" "$WORK/hub/test-org/synth-ctc-gguf/resolve/main/synth-ctc-Q8_0.gguf"
printf '# test catalogue\n' >"$WORK/catalogue.tsv"
printf 'synth-ctc\tparakeet\tsynth\ttest-org/synth-ctc-gguf\tsynth-ctc-{QUANT}.gguf\tF32,Q8_0\tQ8_0=6.2MiB\tmit\n' >>"$WORK/catalogue.tsv"
printf 'gone-model\tparakeet\tgone\ttest-org/gone-model-gguf\tgone-model-{QUANT}.gguf\tQ8_0\t?\t?\n' >>"$WORK/catalogue.tsv"
printf 'loop-model\tparakeet\tloop\ttest-org/loop-model-gguf\tloop-model-{QUANT}.gguf\tQ8_0\t?\t?\n' >>"$WORK/catalogue.tsv"
printf 'html-model\tparakeet\thtml\ttest-org/html-model-gguf\thtml-model-{QUANT}.gguf\tQ8_0\t?\t?\n' >>"$WORK/catalogue.tsv"
mkdir -p "$WORK/hub/test-org/html-model-gguf/resolve/main"
printf '<!DOCTYPE html><html><body>Sign in to continue</body></html>\n' \
    >"$WORK/hub/test-org/html-model-gguf/resolve/main/html-model-Q8_0.gguf"
export TRANSCRIBE_CATALOGUE=$WORK/catalogue.tsv
unset TRANSCRIBE_MODEL_DIR TRANSCRIBE_MODEL_BASE_URL HF_TOKEN

# start_hub [OPTIONS]: a fresh hub server; sets BASE and HUB_LOG
start_hub() {
    stop_hub
    HUB_LOG=$WORK/hub.$RANDOM.log
    rm -f "$WORK/port"
    "$PY" "$SRC/tests/download/hub_server.py" --root "$WORK/hub" --port-file "$WORK/port" \
        --log "$HUB_LOG" --idle 60 --lifetime 240 "$@" &
    HUB_PID=$!
    for _ in $(seq 1 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
    if [ ! -s "$WORK/port" ]; then echo "FAIL: the hub server did not start"; exit 1; fi
    BASE="http://127.0.0.1:$(cat "$WORK/port")"
    : >"$HUB_LOG"
}
# dl CACHE ARGS...: runs the tool, stdout to $WORK/out, stderr to $WORK/err; sets RC
dl() {
    local cache=$1; shift
    RC=0
    timeout 60 "$DL" --dir "$cache" --base-url "$BASE" "$@" >"$WORK/out" 2>"$WORK/err" || RC=$?
}
show_err() { sed 's/^/     | /' "$WORK/err"; }

# ---- a fresh download ----
start_hub
C1=$WORK/cache1
dl "$C1" synth-ctc
show_err
check "fresh download exits 0 (rc=$RC)" [ "$RC" -eq 0 ]
check "it prints the cached path" [ "$(cat "$WORK/out")" = "$C1/synth-ctc-Q8_0.gguf" ]
check "the file equals the served one" cmp -s "$MODEL" "$C1/synth-ctc-Q8_0.gguf"
check "its sha256 was checked" has "$WORK/err" "checking sha256"
check "no .part is left" [ ! -e "$C1/synth-ctc-Q8_0.gguf.part" ]
: >"$HUB_LOG"
dl "$C1" synth-ctc
check "a second run finds it cached without a request" \
    bash -c "[ $RC -eq 0 ] && grep -q 'is cached' '$WORK/err' && [ ! -s '$HUB_LOG' ]"
check "no progress bar when stderr is not a terminal" bash -c "! grep -q '\[#' '$WORK/err'"
if command -v script >/dev/null 2>&1; then
    # a terminal (script(1) gives the tool a pseudo-terminal): the bar shows
    : >"$WORK/tty.out"
    timeout 60 script -qec "'$DL' --dir '$WORK/cache1tty' --base-url '$BASE' synth-ctc" \
        "$WORK/tty.out" >/dev/null 2>&1 </dev/null
    check "a progress bar on a terminal" grep -q '\[#*\.*\] *[0-9]*%' "$WORK/tty.out"
fi
RC=0
timeout 30 "$DL" --list --dir "$C1" >"$WORK/list" 2>&1 || RC=$?
check "--list shows the cached quantization marked" \
    bash -c "[ $RC -eq 0 ] && grep -q '^synth-ctc .*F32 Q8_0\\*' '$WORK/list'"

# ---- the server cuts the connection half-way: the next run resumes ----
start_hub --drop-after $((SIZE / 2))
C2=$WORK/cache2
dl "$C2" synth-ctc --retries 0
show_err
check "a cut transfer fails with --retries 0 (rc=$RC)" [ "$RC" -eq 1 ]
check "it says the connection dropped" has "$WORK/err" "connection dropped"
check "the part file keeps the first half" \
    [ "$(stat -c %s "$C2/synth-ctc-Q8_0.gguf.part" 2>/dev/null)" = "$((SIZE / 2))" ]
check "no final file yet" [ ! -e "$C2/synth-ctc-Q8_0.gguf" ]
dl "$C2" synth-ctc --retries 0
show_err
check "the next run completes (rc=$RC)" [ "$RC" -eq 0 ]
check "it asked for the rest only (Range: bytes=$((SIZE / 2))-)" has "$HUB_LOG" "bytes=$((SIZE / 2))-"
check "the resumed file equals the served one" cmp -s "$MODEL" "$C2/synth-ctc-Q8_0.gguf"
# within one run: the tool tries again by itself
start_hub --drop-after $((SIZE / 3))
C3=$WORK/cache3
dl "$C3" synth-ctc --retries 2
check "one run resumes by itself after a cut (rc=$RC)" [ "$RC" -eq 0 ]
check "... with a Range request" has "$HUB_LOG" "bytes=$((SIZE / 3))-"
check "... and the file is whole" cmp -s "$MODEL" "$C3/synth-ctc-Q8_0.gguf"

# ---- a name the server does not have: 404 ----
dl "$WORK/cache4" gone-model
show_err
check "a 404 fails (rc=$RC)" [ "$RC" -eq 1 ]
check "it says HTTP 404" has "$WORK/err" "HTTP 404"
check "nothing is left in the cache" bash -c "[ -z \"\$(ls -A '$WORK/cache4' 2>/dev/null)\" ]"

# ---- HTTP errors: a 503 is tried again, a 403 is not ----
start_hub --error-once 503
dl "$WORK/cache4b" synth-ctc --retries 1
show_err
check "a 503 is tried again and the download completes (rc=$RC)" \
    bash -c "[ $RC -eq 0 ] && grep -q 'HTTP 503' '$WORK/err' && grep -q 'trying again' '$WORK/err'"
start_hub --error-once 403
dl "$WORK/cache4c" synth-ctc --retries 3
check "a 403 fails at once, with a word on tokens (rc=$RC)" \
    bash -c "[ $RC -eq 1 ] && grep -q 'HTTP 403.*HF_TOKEN' '$WORK/err' && [ \$(grep -c ' ' '$HUB_LOG') -eq 1 ]"

# ---- a redirect (as the hub sends LFS files to its CDN), and a loop ----
start_hub --redirect
C5=$WORK/cache5
dl "$C5" synth-ctc
show_err
check "a redirected download exits 0 (rc=$RC)" [ "$RC" -eq 0 ]
check "it followed the redirect" has "$HUB_LOG" "GET /cdn/test-org/synth-ctc-gguf/resolve/main/synth-ctc-Q8_0.gguf"
check "... and checked the sha256 from the redirect's X-Linked-Etag" has "$WORK/err" "checking sha256"
check "... and the file is whole" cmp -s "$MODEL" "$C5/synth-ctc-Q8_0.gguf"
dl "$WORK/cache5b" loop-model
check "a redirect loop fails (rc=$RC)" [ "$RC" -eq 1 ]
check "it says too many redirects" has "$WORK/err" "too many redirects"

# ---- a checksum mismatch: the file is rejected and removed ----
start_hub --bad-sha
C6=$WORK/cache6
dl "$C6" synth-ctc
show_err
check "a checksum mismatch fails (rc=$RC)" [ "$RC" -eq 1 ]
check "it says checksum mismatch" has "$WORK/err" "checksum mismatch"
check "neither the file nor a part is kept" \
    bash -c "[ ! -e '$C6/synth-ctc-Q8_0.gguf' ] && [ ! -e '$C6/synth-ctc-Q8_0.gguf.part' ]"

# ---- a page in place of the model (a mirror's login page, served 200): rejected, removed ----
start_hub
C6b=$WORK/cache6b
dl "$C6b" html-model
show_err
check "a .gguf that is not GGUF fails (rc=$RC)" [ "$RC" -eq 1 ]
check "it says it is not a GGUF file" has "$WORK/err" "is not a GGUF file"
check "neither the file nor a part is kept" \
    bash -c "[ ! -e '$C6b/html-model-Q8_0.gguf' ] && [ ! -e '$C6b/html-model-Q8_0.gguf.part' ]"

# ---- a full cache: a 2 MiB file size limit (ulimit -f) ----
start_hub
C7=$WORK/cache7
RC=0
(ulimit -f 2048 && exec timeout 60 "$DL" --dir "$C7" --base-url "$BASE" synth-ctc) \
    >"$WORK/out" 2>"$WORK/err" || RC=$?
show_err
check "a full cache fails (rc=$RC)" [ "$RC" -eq 1 ]
check "it says the disk or size limit is full" has "$WORK/err" "File too large"
check "no final file" [ ! -e "$C7/synth-ctc-Q8_0.gguf" ]
dl "$C7" synth-ctc --retries 0
check "with room again the next run resumes and completes (rc=$RC)" \
    bash -c "[ $RC -eq 0 ] && grep -q 'bytes=2097152-' '$HUB_LOG' && cmp -s '$MODEL' '$C7/synth-ctc-Q8_0.gguf'"

# ---- a full disk: a 2 MiB tmpfs, where this test may mount one (root) ----
mkdir -p "$WORK/tmpfs"
if mount -t tmpfs -o size=2m tmpfs "$WORK/tmpfs" 2>/dev/null; then
    TMPFS=$WORK/tmpfs
    dl "$TMPFS/cache" synth-ctc
    show_err
    check "a cache on a full 2 MiB tmpfs fails up front (rc=$RC)" [ "$RC" -eq 1 ]
    check "it says how much is needed and free" has "$WORK/err" "not enough space in $TMPFS/cache"
    check "nothing is left there" bash -c "[ -z \"\$(ls -A '$TMPFS/cache' 2>/dev/null)\" ]"
    umount "$TMPFS" && TMPFS=""
else
    echo "note: cannot mount a tmpfs here (not root?): the file size limit above stands for a full disk"
fi

# ---- no network: nothing listens ----
stop_hub
RC=0
timeout 60 "$DL" --dir "$WORK/cache8" --base-url "http://127.0.0.1:9" synth-ctc >"$WORK/out" \
    2>"$WORK/err" || RC=$?
show_err
check "no server fails (rc=$RC)" [ "$RC" -eq 1 ]
check "it says it cannot connect" has "$WORK/err" "cannot connect"

# ---- an unknown name: the closest names, no network needed ----
RC=0
TRANSCRIBE_CATALOGUE= timeout 30 "$DL" --dir "$WORK/cache9" parakeet-tdt-0.6b >"$WORK/out" \
    2>"$WORK/err" || RC=$?
show_err
check "an unknown name fails (rc=$RC)" [ "$RC" -eq 1 ]
check "it names the closest ones" has "$WORK/err" "closest: parakeet-tdt-0.6b-v2, parakeet-tdt-0.6b-v3"
RC=0
TRANSCRIBE_CATALOGUE= timeout 30 "$DL" --list --dir "$WORK/cache9" >"$WORK/list" 2>&1 || RC=$?
check "the built-in catalogue lists parakeet-tdt-0.6b-v3" \
    bash -c "[ $RC -eq 0 ] && grep -q '^parakeet-tdt-0.6b-v3 ' '$WORK/list'"

# ---- transcribe -m NAME, offline from the cache (the hub is stopped) ----
RC=0
timeout 60 "$CLI" -q -m "$MODEL" "$WAV" >"$WORK/want.txt" 2>/dev/null || RC=$?
check "the CLI transcribes with the model's path (rc=$RC)" [ "$RC" -eq 0 ]
RC=0
TRANSCRIBE_MODEL_DIR=$C1 timeout 60 "$CLI" -m synth-ctc "$WAV" >"$WORK/got.txt" 2>"$WORK/err" || RC=$?
show_err
check "transcribe -m synth-ctc runs offline from the cache (rc=$RC)" [ "$RC" -eq 0 ]
check "... with the same text as the path" cmp -s "$WORK/want.txt" "$WORK/got.txt"
check "... and says where the model came from" has "$WORK/err" "from the model cache"
RC=0
XDG_CACHE_HOME=$WORK/xdg TRANSCRIBE_MODEL_DIR= timeout 60 "$CLI" -m synth-ctc-Q8_0 "$WAV" \
    >"$WORK/got.txt" 2>"$WORK/err" || RC=$?
check "a name not in the cache fails (rc=$RC)" [ "$RC" -eq 1 ]
check "... and says how to fetch it" has "$WORK/err" "transcribe-download synth-ctc"
mkdir -p "$WORK/xdg/transcribe" && cp "$MODEL" "$WORK/xdg/transcribe/synth-ctc-Q8_0.gguf"
RC=0
XDG_CACHE_HOME=$WORK/xdg TRANSCRIBE_MODEL_DIR= timeout 60 "$CLI" -q -m synth-ctc-Q8_0 "$WAV" \
    >"$WORK/got.txt" 2>"$WORK/err" || RC=$?
check "the cache defaults to \$XDG_CACHE_HOME/transcribe (rc=$RC)" \
    bash -c "[ $RC -eq 0 ] && cmp -s '$WORK/want.txt' '$WORK/got.txt'"
RC=0
timeout 60 "$CLI" -m synth-ctcc "$WAV" >/dev/null 2>"$WORK/err" || RC=$?
check "an unknown -m name fails with the closest names (rc=$RC)" \
    bash -c "[ $RC -eq 1 ] && grep -q 'closest: synth-ctc' '$WORK/err'"

# ---- transcribe-server -m NAME: served under that name, from the cache ----
if [ -n "$SERVER" ]; then
    TRANSCRIBE_MODEL_DIR=$C1 "$SERVER" --port 0 -m synth-ctc -q 2>"$WORK/srv.log" &
    SPID=$!
    SPORT=""
    for _ in $(seq 1 200); do
        SPORT=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\)/$|\1|p' "$WORK/srv.log")
        [ -n "$SPORT" ] && break
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.05
    done
    check "transcribe-server -m synth-ctc starts from the cache" [ -n "$SPORT" ]
    if [ -n "$SPORT" ]; then
        curl -s --max-time 30 -F file=@"$WAV" -F model=synth-ctc -F response_format=text \
            "http://127.0.0.1:$SPORT/v1/audio/transcriptions" >"$WORK/srv.txt"
        check "... serves it as model synth-ctc, with the CLI's text" \
            bash -c "[ \"\$(cat '$WORK/srv.txt')\" = \"\$(cat '$WORK/want.txt')\" ]"
    fi
    kill -TERM "$SPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
    RC=0
    TRANSCRIBE_MODEL_DIR=$WORK/empty timeout 30 "$SERVER" --port 0 -m synth-ctc -q \
        >/dev/null 2>"$WORK/err" || RC=$?
    check "transcribe-server -m NAME not cached: an error that says how to fetch it (rc=$RC)" \
        bash -c "[ $RC -eq 1 ] && grep -q 'transcribe-download synth-ctc' '$WORK/err'"
fi

# ---- Python: Model("NAME") through the same cache ----
if [ -z "$LIB" ]; then
    echo "note: no library for Python given (the sanitizer build): Model('NAME') not run"
elif "$PY" -c "import ctypes" 2>/dev/null; then
    RC=0
    TRANSCRIBE_MODEL_DIR=$C1 TRANSCRIBE_LIBRARY=$LIB TRANSCRIBE_DOWNLOAD=$DL \
        PYTHONPATH=$SRC/bindings/python timeout 60 "$PY" -c "
import sys, transcribe
with transcribe.Model('synth-ctc') as m:
    sys.stdout.write(m.transcribe(sys.argv[1]).text.strip() + '\n')
" "$WAV" >"$WORK/py.txt" 2>"$WORK/err" || RC=$?
    show_err
    check "Python's Model('synth-ctc') loads from the cache (rc=$RC)" [ "$RC" -eq 0 ]
    check "... with the CLI's text" \
        bash -c "[ \"\$(tr -s ' \n' ' ' <'$WORK/py.txt' | sed 's/ *$//')\" = \"\$(tr -s ' \n' ' ' <'$WORK/want.txt' | sed 's/^ *//; s/ *$//')\" ]"
fi

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" -eq 0 ]
