#!/usr/bin/env bash
# transcribe-server under hostile input: each case gets a specific 4xx, the
# server keeps serving, and it exits 0 at the end (under the sanitizer build,
# a leak or a memory error makes that fail). Usage: test_hostile.sh SERVER SOURCE_DIR
SERVER=$1 SRC=$2
. "$SRC/tests/server/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
PK="$SRC/models/parakeet-ctc-synth-en.gguf"
WAV="$SRC/samples/synth-heldout-klatt3.wav"
T=/v1/audio/transcriptions
srv_start -m "$PK" --max-upload-mb 2 --max-audio-s 6 --timeout 20 -q

# raw HTTP over bash's /dev/tcp: sends $1 (printf format), waits up to $2 s
# for the status line, prints the status code
B=XyZzY
one_of() { local v=$1; shift; for x in "$@"; do [ "$v" = "$x" ] && return 0; done; return 1; }
mp() { # a multipart part: name, value
    printf -- '--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' "$B" "$1" "$2"
}

check "multipart without boundary: 400" \
    [ "$(code -H 'Content-Type: multipart/form-data' --data-binary 'abc' "$URL$T")" = 400 ]
check "malformed multipart body: 400" \
    [ "$(code -H "Content-Type: multipart/form-data; boundary=$B" --data-binary $'--XyZzY\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF' "$URL$T")" = 400 ]
check "not multipart: 415" [ "$(code -H 'Content-Type: application/json' --data-binary '{}' "$URL$T")" = 415 ]
check "missing file: 400" [ "$(code -F model=parakeet-ctc-synth-en "$URL$T")" = 400 ]
check "missing file names the param" contains "$WORK/body" '"param":"file"'
check "non-audio file: 415" [ "$(code -F file=@"$SRC/CMakeLists.txt" "$URL$T")" = 415 ]
head -c 30 "$WAV" >"$WORK/trunc-header.wav"
check "WAV cut inside its header: 415" [ "$(code -F file=@"$WORK/trunc-header.wav" "$URL$T")" = 415 ]
head -c 60000 "$WAV" >"$WORK/trunc-data.wav"
c=$(code -F file=@"$WORK/trunc-data.wav" "$URL$T")
check "WAV cut inside its data: 415 ($c)" [ "$c" = 415 ]
# the same as RF64 (sizes in a ds64 chunk): whole, it is transcribed; cut, refused
le() { local v=$1 n=$2 i; for ((i = 0; i < n; i++)); do printf "\\x%02x" $(((v >> (8 * i)) & 255)); done; }
dlen=$(( $(stat -c %s "$WAV") - 44 ))
{ printf "RF64$(le 4294967295 4)WAVEds64$(le 28 4)$(le $((dlen + 72)) 8)$(le "$dlen" 8)$(le $((dlen / 2)) 8)$(le 0 4)"
  head -c 36 "$WAV" | tail -c 24; printf "data$(le 4294967295 4)"; tail -c +45 "$WAV"; } >"$WORK/whole.rf64.wav"
check "RF64 WAV: 200" [ "$(code -F file=@"$WORK/whole.rf64.wav" "$URL$T")" = 200 ]
head -c 60000 "$WORK/whole.rf64.wav" >"$WORK/trunc.rf64.wav"
c=$(code -F file=@"$WORK/trunc.rf64.wav" "$URL$T")
check "RF64 WAV cut inside its data: 415 ($c)" [ "$c" = 415 ]
: >"$WORK/empty.wav"
check "empty file: 415" [ "$(code -F file=@"$WORK/empty.wav" "$URL$T")" = 415 ]
check "empty file says so" contains "$WORK/body" 'the file is empty (0 bytes)'
head -c 3000000 /dev/zero >"$WORK/big.bin"
check "upload over --max-upload-mb: 413" [ "$(code -F file=@"$WORK/big.bin" "$URL$T")" = 413 ]
# (without a Content-Length the limit shows only after it is passed: the
# daemon cannot answer in the middle of a body, so it closes)
c=$(curl -s -o /dev/null -w '%{http_code}' -H 'Transfer-Encoding: chunked' -F file=@"$WORK/big.bin" "$URL$T")
check "chunked upload over the limit: closed ($c)" one_of "$c" 413 000 100
# a long file: the same sample three times over (> --max-audio-s 6)
check "audio over --max-audio-s: 413" [ "$(code -F file=@"$SRC/samples/jfk.wav" "$URL$T")" = 413 ]
check "413 says audio_too_long" contains "$WORK/body" '"code":"audio_too_long"'
# a small upload of long audio: 20 s of 8-bit PCM at 1000 Hz is 20 KB but
# 320 000 samples once resampled; refused from its length before that
{ printf 'RIFF\x44\x4e\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\xe8\x03\x00\x00\xe8\x03\x00\x00\x01\x00\x08\x00data\x20\x4e\x00\x00'
  head -c 20000 /dev/zero | tr '\0' '\200'; } >"$WORK/low-rate.wav"
check "20 KB WAV of 20 s at 1000 Hz over --max-audio-s: 413" [ "$(code -F file=@"$WORK/low-rate.wav" "$URL$T")" = 413 ]
check "  says audio_too_long" contains "$WORK/body" '"code":"audio_too_long"'
c=$(raw "POST $T HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=$B\r\nContent-Length: 2147483648\r\n\r\n--$B\r\n" 5)
check "2 GB Content-Length with a slow body: 413 at once ($c)" [ "$c" = 413 ]
c=$(raw "POST $T HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=$B\r\nContent-Length: 9223372036854775808\r\n\r\n--$B\r\n" 5)
check "Content-Length of 2^63: 413 at once ($c)" [ "$c" = 413 ]
# "--BOUNDARY--" inside the file's bytes (no CRLF before it) is data
{ printf -- '--%s\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n' "$B"
  cat "$WAV"; printf -- 'tail--%s--tail\r\n--%s--\r\n' "$B" "$B"; } >"$WORK/lookalike.txt"
c=$(code -H "Content-Type: multipart/form-data; boundary=$B" --data-binary @"$WORK/lookalike.txt" "$URL$T")
check "closing-delimiter look-alike inside the file: 200 ($c)" [ "$c" = 200 ]
# valid forms libmicrohttpd's post processor refuses are read by the
# server's own reader (tools/server/multipart.c): the same transcript
form_as() { # boundary, Content-Type parameters ("%s": the boundary), response_format
    { printf -- '--%s\r\nContent-Disposition: form-data; name="response_format"\r\n\r\ntext\r\n' "$1"
      printf -- '--%s\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n' "$1"
      printf -- 'Content-Type: audio/wav\r\n\r\n'
      cat "$WAV"; printf -- '\r\n--%s--\r\nepilogue\r\n' "$1"; } >"$WORK/form.txt"
    # shellcheck disable=SC2059
    code -H "Content-Type: multipart/form-data; $(printf "$2" "$1")" --data-binary @"$WORK/form.txt" "$URL$T"
}
same_200() { [ "$1" = 200 ] && cmp -s "$WORK/body" "$WORK/want.txt"; }
c=$(code -F file=@"$WAV" -F response_format=text "$URL$T"); cp "$WORK/body" "$WORK/want.txt"
check "the plain form: 200 ($c)" [ "$c" = 200 ]
c=$(form_as "$B" 'boundary=%s; charset=utf-8')
check "a parameter after the boundary: 200 ($c), same text" same_200 "$c"
c=$(form_as "$B" 'BOUNDARY=%s')
check "BOUNDARY= in upper case: 200 ($c), same text" same_200 "$c"
c=$(form_as "q" 'boundary=%s')
check "a one-character boundary: 200 ($c), same text" same_200 "$c"
c=$(form_as "q" 'boundary="%s"; x=1')
check "a quoted one-character boundary, a parameter after it: 200 ($c)" same_200 "$c"
head -c 2000 "$WORK/form.txt" >"$WORK/form-cut.txt"
c=$(code -H "Content-Type: multipart/form-data; boundary=q; x=1" --data-binary @"$WORK/form-cut.txt" "$URL$T")
check "such a form cut short: 400 ($c)" [ "$c" = 400 ]
check "  invalid_multipart" contains "$WORK/body" '"code":"invalid_multipart"'
{ printf -- '--q\r\n'; head -c 9000 /dev/zero | tr '\0' a; } >"$WORK/form-hdr.txt"
c=$(code -H "Content-Type: multipart/form-data; boundary=q; x=1" --data-binary @"$WORK/form-hdr.txt" "$URL$T")
check "such a form with 9 KB of part headers: 400 ($c)" [ "$c" = 400 ]
{ printf -- '--q\r\nContent-Type: text/plain\r\n\r\nv\r\n--q--\r\n'; } >"$WORK/form-noname.txt"
c=$(code -H "Content-Type: multipart/form-data; boundary=q; x=1" --data-binary @"$WORK/form-noname.txt" "$URL$T")
check "such a form with a part of no name: 400 ($c)" [ "$c" = 400 ]
{ for i in $(seq 1 10000); do mp "f$i" "v"; done; mp model parakeet-ctc-synth-en; printf -- '--%s--\r\n' "$B"; } >"$WORK/fields.txt"
check "10 000 form fields: 400" [ "$(code -H "Content-Type: multipart/form-data; boundary=$B" --data-binary @"$WORK/fields.txt" "$URL$T")" = 400 ]
check "too_many_fields" contains "$WORK/body" '"code":"too_many_fields"'
{ for i in $(seq 1 3000); do echo "header = \"X-Flood-$i: $(printf '%060d' "$i")\""; done; } >"$WORK/flood.cfg"
c=$(code -K "$WORK/flood.cfg" "$URL/health")
check "header flood: 431 or 413 ($c)" one_of "$c" 431 413
c=$(raw "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: $(head -c 200000 /dev/zero | tr '\0' a)\r\n\r\n" 5)
# The daemon answers once its 64 KiB connection buffer is full and closes with
# the rest of the header unread; the kernel then resets the connection, and a
# reset that overtakes the answer discards it at the client. So "closed" (no
# status line) passes too, provided the server is still there afterwards.
check "one huge header: 431, 413 or closed ($c)" one_of "$c" 431 413 ""
check "  still serving after the huge header" alive
check "invalid UTF-8 in language: 400" [ "$(code -F file=@"$WAV" -F $'language=e\xff\xfe' "$URL$T")" = 400 ]
check "invalid_utf8" contains "$WORK/body" '"code":"invalid_utf8"'
check "overlong UTF-8 in prompt: 400" [ "$(code -F file=@"$WAV" -F $'prompt=\xc0\xaf' "$URL$T")" = 400 ]
check "invalid UTF-8 in model: 400" [ "$(code -F file=@"$WAV" -F $'model=\xed\xa0\x80' "$URL$T")" = 400 ]
check "field over 8 KiB: 400" [ "$(code -F file=@"$WAV" -F "prompt=$(head -c 9000 /dev/zero | tr '\0' p)" "$URL$T")" = 400 ]
check "two files: 400" [ "$(code -F file=@"$WAV" -F file=@"$WAV" "$URL$T")" = 400 ]
for p in '/../../etc/passwd' '/v1/../../../etc/passwd' '/%2e%2e/%2e%2e/etc/passwd' '/v1/audio/transcriptions/../../../etc/passwd' '/v1/models/../../etc/passwd' '/..%2f..%2fetc%2fpasswd'; do
    c=$(code --path-as-is "$URL$p")
    check "path traversal $p: 404 ($c)" [ "$c" = 404 ]
    check "  no file content" bash -c "! grep -q 'root:' '$WORK/body'"
done
c=$(raw "GET /health HTTP/1.1\r\nHost: x\r\nno colon in this header\r\n\r\n" 5)
check "malformed header line: 400 ($c)" [ "$c" = 400 ]
c=$(raw "POST $T HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n" 5)
check "negative Content-Length: 4xx ($c)" [ "${c:0:1}" = 4 ]
c=$(raw "DELETE /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" 5)
check "DELETE: 405 ($c)" [ "$c" = 405 ]
check "still serving after all of it" alive
check "a good request still works" [ "$(code -F file=@"$WAV" "$URL$T")" = 200 ]
srv_stop

# slow clients: a connection that stops sending is closed after
# --idle-timeout, while a run longer than that is still answered
srv_start -m "$SRC/tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf" --idle-timeout 1 -q
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ' >&3
t0=$(date +%s%N)
line=""
IFS= read -r -t 8 line <&3
rrc=$?
exec 3<&- 3>&-
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "headers that stop coming: closed by the server (${ms} ms)" [ "$rrc" -le 128 -a "$ms" -lt 6000 ]
check "a run longer than --idle-timeout is answered" [ "$(code -F file=@"$SRC/samples/jfk.wav" "$URL$T")" = 200 ]
check "still serving" alive
srv_stop

# slow clients: headers or bodies that trickle in hold a slot for a bounded
# time only (--header-timeout, --body-timeout), and a quarter of
# --max-connections stays for new clients (the connection that has waited
# longest for its client is closed to make room). 8 slow sockets on a server
# of 8 connections: /health still answers, and every slow socket is closed.
srv_start -m "$PK" --max-connections 8 --header-timeout 2 --body-timeout 2 -q
slow=()
for i in $(seq 1 8); do
    exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"
    if [ $((i % 2)) = 0 ]; then
        printf 'GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ' >&"$fd"
    else
        printf "POST $T HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=$B\r\nContent-Length: 100000\r\n\r\n--$B\r\n" >&"$fd"
    fi
    slow+=("$fd")
done
sleep 0.5 # the connections closed to make room are gone
ok=0
for _ in 1 2 3 4; do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health")" = 200 ] && ok=$((ok + 1))
done
check "8 slow sockets on 8 connections: $ok of 4 /health probes answered" [ "$ok" = 4 ]
t0=$(date +%s%N)
closed=0
for fd in "${slow[@]}"; do
    rc=0
    timeout 10 cat <&"$fd" >/dev/null 2>&1 || rc=$?
    [ "$rc" != 124 ] && closed=$((closed + 1))
    exec {fd}<&- {fd}>&-
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "every slow socket closed by the server ($closed of 8, last after ${ms} ms)" [ "$closed" = 8 ]
check "still serving after the slow clients" alive
srv_stop

# a wrong API key
srv_start -m "$PK" --api-key 'k3y' -q
check "wrong key: 401" [ "$(code -H 'Authorization: Bearer nope' -F file=@"$WAV" "$URL$T")" = 401 ]
check "empty bearer: 401" [ "$(code -H 'Authorization: Bearer ' "$URL/v1/models")" = 401 ]
check "basic auth: 401" [ "$(code -u user:k3y "$URL/v1/models")" = 401 ]
c=$(raw "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k3y\r\nConnection: close\r\n\r\n" 5)
check "the key itself over raw HTTP: 200 ($c)" [ "$c" = 200 ]
check "still serving" alive
srv_stop
finish
