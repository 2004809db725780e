#!/usr/bin/env bash
# A codec that leaks must not grow the server: libvorbis (through
# libsndfile 1.2.0) leaks about 5.7 KB for each Ogg Vorbis file cut short,
# so the server decodes every upload that is not WAV in a short-lived child
# process (tools/server/decode.c). 600 such uploads must leave its resident
# memory where it was after the first 100 (well under the 3 MB they leak
# in-process), and a whole Ogg Vorbis file still transcribes.
# Usage: test_codec_leak.sh SERVER SOURCE_DIR
SERVER=$1 SRC=$2
. "$SRC/tests/server/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
PK="$SRC/models/parakeet-ctc-synth-en.gguf"
CUT="$SRC/tests/data/audio/cut-vorbis.ogg"
TONE="$SRC/tests/data/audio/tone-vorbis.ogg"
T=/v1/audio/transcriptions
srv_start -m "$PK" -q
c=$(code -F file=@"$TONE" "$URL$T")
if [ "$c" = 415 ] && contains "$WORK/body" unsupported_file; then
    echo "SKIP: this build decodes no Ogg Vorbis (libsndfile missing)"
    exit 77
fi
check "whole Ogg Vorbis: 200 ($c)" [ "$c" = 200 ]
check "cut Ogg Vorbis: 415" [ "$(code -F file=@"$CUT" "$URL$T")" = 415 ]

rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$SRV_PID/status"; }
burst() { # $1 uploads from 4 clients; prints the statuses that were not 415
    local per=$(( $1 / 4 )) k
    for k in 1 2 3 4; do
        ( for _ in $(seq 1 $per); do
              curl -s -o /dev/null -w '%{http_code}\n' --max-time 30 -F file=@"$CUT" "$URL$T"
          done ) &
    done | grep -v '^415$'
    wait
}
other=$(burst 100)
before=$(rss_kb)
other="$other$(burst 600)"
after=$(rss_kb)
echo "  rss after 100 cut Vorbis uploads: $before kB; after 600 more: $after kB"
check "every cut upload refused with 415 (others: ${other:-none})" [ -z "$other" ]
check "rss grew less than 1 MB ($((after - before)) kB)" [ $((after - before)) -lt 1024 ]
check "still serving" alive
srv_stop
finish
