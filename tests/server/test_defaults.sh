#!/usr/bin/env bash
# transcribe-server with no options but the port: the bundled model is served
# (as the CLI uses it), the default upload limit is 25 MB (a larger claimed
# body gets 413 at once, a real 30 MB upload too), --version answers and an
# unknown option is named as unknown. Usage: test_defaults.sh SERVER SOURCE_DIR
SERVER=$1 SRC=$2
. "$SRC/tests/server/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
T=/v1/audio/transcriptions

out=$("$SERVER" --version 2>&1); rc=$?
check "--version exits 0 ($rc)" [ "$rc" -eq 0 ]
check "--version names the server and its version" grep -q '^transcribe-server [0-9]' <<<"$out"
for args in "--bogus" "--bogus x"; do
    # shellcheck disable=SC2086
    out=$("$SERVER" $args 2>&1); rc=$?
    check "'$args': exit 1 ($rc)" [ "$rc" -eq 1 ]
    check "'$args': named as an unknown option" grep -q "unknown option '--bogus'" <<<"$out"
done

unset TRANSCRIBE_MODEL
srv_start -q
check "no -m: the bundled model is served" contains "$SRV_LOG" "using bundled model .*parakeet-ctc-synth-en.gguf"
code "$URL/v1/models" >/dev/null
check "/v1/models lists it" contains "$WORK/body" '"parakeet-ctc-synth-en"'

raw() { # raw request text, seconds to wait: the status code of the reply
    local line=""
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || { echo "noconn"; return; }
    printf "$1" >&3 2>/dev/null
    IFS= read -r -t "$2" line <&3
    exec 3<&- 3>&-
    echo "$line" | sed -n 's|^HTTP/1\.[01] \([0-9]*\).*|\1|p'
}
B=XyZzY
t0=$(date +%s)
c=$(raw "POST $T HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=$B\r\nContent-Length: 30000000\r\n\r\n--$B\r\n" 10)
t1=$(date +%s)
check "30 MB claimed body under the default limit: 413 ($c)" [ "$c" = 413 ]
check "... at once ($((t1 - t0)) s)" [ $((t1 - t0)) -le 5 ]
head -c 30000000 /dev/zero >"$WORK/big.bin"
check "30 MB upload: 413" [ "$(code -F file=@"$WORK/big.bin" "$URL$T")" = 413 ]
check "the server still answers" alive
srv_stop
finish
