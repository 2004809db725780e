#!/usr/bin/env bash
# Soak: CLIENTS loops send a mix of valid and hostile requests to one
# transcribe-server for SECONDS, while the server's resident memory is
# sampled; at the end the server must still answer, exit 0 on SIGTERM, and
# its memory must be flat: the growth over the second half of the run at
# most SLACK_KB (allocator noise), since every request frees what it took.
# Usage: soak.sh SERVER SOURCE_DIR [SECONDS] [CLIENTS] [SLACK_KB]
# ctest runs it for a few seconds (it keeps working); the closing figures
# come from a long run, e.g. soak.sh build/bin/transcribe-server . 3600 16
SERVER=$1 SRC=$2 SECONDS_=${3:-20} CLIENTS=${4:-4} SLACK_KB=${5:-4096}
. "$SRC/tests/server/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
PK="$SRC/models/parakeet-ctc-synth-en.gguf"
WAV="$SRC/samples/synth-heldout-klatt3.wav"
T=/v1/audio/transcriptions
srv_start -m "$PK" --max-upload-mb 2 --max-audio-s 30 --timeout 20 --parallel 2 --queue 64 -q

# the hostile inputs, made once
head -c 3000 "$WAV" >"$WORK/cut.wav"
printf 'OggS\0\2garbage-that-is-not-vorbis' >"$WORK/bad.ogg"
head -c 1000 /dev/urandom >"$WORK/noise.bin"
B=SoAkB

# one request of kind $1 (0..7); prints the HTTP status
one() {
    case $1 in
    0 | 1 | 2) curl -s -o /dev/null -w '%{http_code}' --max-time 60 -F file=@"$WAV" \
                   -F response_format=verbose_json "$URL$T" ;;
    3) curl -s -o /dev/null -w '%{http_code}' --max-time 60 -F file=@"$WORK/cut.wav" "$URL$T" ;;
    4) curl -s -o /dev/null -w '%{http_code}' --max-time 60 -F file=@"$WORK/bad.ogg" "$URL$T" ;;
    5) curl -s -o /dev/null -w '%{http_code}' --max-time 60 -F file=@"$WORK/noise.bin" "$URL$T" ;;
    6) curl -s -o /dev/null -w '%{http_code}' --max-time 60 \
           -H "Content-Type: multipart/form-data; boundary=$B" \
           --data-binary $'--SoAkB\r\nContent-Disposition: form-data; name="file"\r\n\r\nRIFF' "$URL$T" ;;
    7) curl -s -o /dev/null -w '%{http_code}' --max-time 60 "$URL/health" ;;
    esac
}

client() { # $1: client number; appends one status per line to $WORK/codes.$1
    local k=$1 end=$((SECONDS + SECONDS_)) i=$1
    while [ $SECONDS -lt $end ]; do
        one $((i % 8)) >>"$WORK/codes.$k"
        echo >>"$WORK/codes.$k"
        i=$((i + 1))
    done
}

rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$SRV_PID/status"; }

pids=()
for c in $(seq 1 "$CLIENTS"); do client "$c" & pids+=($!); done
step=$(( SECONDS_ / 20 )); [ $step -ge 1 ] || step=1
: >"$WORK/rss"
end=$((SECONDS + SECONDS_))
while [ $SECONDS -lt $end ]; do
    echo "$SECONDS $(rss_kb)" >>"$WORK/rss"
    sleep $step
done
wait "${pids[@]}"
echo "$SECONDS $(rss_kb)" >>"$WORK/rss"

cat "$WORK"/codes.* | sed '/^$/d' | sort | uniq -c | sed 's/^/  requests: /'
n=$(cat "$WORK"/codes.* | sed '/^$/d' | wc -l)
bad=$(cat "$WORK"/codes.* | sed '/^$/d' | grep -vc -E '^(200|400|413|415|503)$')
awk '{print "  rss: t=" $1 " s " $2 " kB"}' "$WORK/rss"
# growth over the second half: last sample minus the highest of the first half
half=$(( $(wc -l <"$WORK/rss") / 2 ))
first_max=$(head -n "$half" "$WORK/rss" | awk 'BEGIN{m=0} $2>m{m=$2} END{print m}')
last=$(tail -n 1 "$WORK/rss" | awk '{print $2}')
growth=$(( last - first_max ))
echo "  $n requests by $CLIENTS clients in $SECONDS_ s; rss growth over the second half: $growth kB"
check "every request answered with an expected status ($bad others)" [ "$bad" -eq 0 ]
check "requests were made" [ "$n" -gt 0 ]
check "rss flat over the second half ($growth kB <= $SLACK_KB kB)" [ "$growth" -le "$SLACK_KB" ]
check "still serving" alive
srv_stop
finish
