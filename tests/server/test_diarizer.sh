#!/usr/bin/env bash
# transcribe-server --diarizer FILE: a diarization model (the tiny Sortformer
# test model) loaded once; diarize=true on a model that cannot tell speakers
# (the bundled Parakeet) labels every word and segment as the CLI's --diarizer
# does (verbose_json "speaker"; text/srt/vtt are the CLI's bytes), a request
# without it gets none, and one that asks for speakers where there is nothing
# to give them is refused. Loopback only, a few requests.
# Usage: test_diarizer.sh SERVER CLI SOURCE_DIR
SERVER=$1 CLI=$2 SRC=$3
. "$SRC/tests/server/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
PK="$SRC/models/parakeet-ctc-synth-en.gguf"
SF="$SRC/tests/data/sortformer/sortformer-tiny-ref-Q8_0.gguf"
JFK="$SRC/samples/jfk.wav"
T=/v1/audio/transcriptions

# the CLI's answer: each word's speaker, in order, and the SRT
"$CLI" -q -m "$PK" --diarizer "$SF" -f json --timestamps word "$JFK" >"$WORK/cli.json" 2>/dev/null
"$CLI" -q -m "$PK" --diarizer "$SF" -f srt "$JFK" >"$WORK/cli.srt" 2>/dev/null
"$CLI" -q -m "$PK" -f srt "$JFK" >"$WORK/plain.srt" 2>/dev/null
/usr/bin/python3 - "$WORK/cli.json" >"$WORK/cli.spk" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s:S%d" % (w["text"].strip(), w["speaker_id"]) for w in d["words"] if w["text"].strip()))
PY
check "CLI labels the words" grep -q ':S[1-4]' "$WORK/cli.spk"

# a file that is no diarization model: the server does not start
"$SERVER" -m "$PK" --diarizer "$PK" --port 0 -q >/dev/null 2>"$WORK/bad.log" && rc=0 || rc=$?
check "--diarizer on a transcription model: exit 1 ($rc)" [ "$rc" -eq 1 ]
check "it says why" contains "$WORK/bad.log" 'is not a diarization model'

# no diarizer: diarize=true on a model that cannot tell speakers is refused
srv_start -m "$PK" -q
check "no diarizer: diarize=true 400" [ "$(code -F file=@"$JFK" -F diarize=true "$URL$T")" = 400 ]
check "the refusal names the field" contains "$WORK/body" '"param":"diarize"'
check "the refusal names the option" contains "$WORK/body" '--diarizer FILE'
check "no diarizer: /v1/models 200" [ "$(code "$URL/v1/models")" = 200 ]
check "no diarizer: /v1/models says diarize false" contains "$WORK/body" '"diarize":false'
srv_stop

srv_start -m "$PK" --diarizer "$SF" -q
check "/v1/models 200" [ "$(code "$URL/v1/models")" = 200 ]
check "/v1/models: the model diarizes now" contains "$WORK/body" '"diarize":true'
check "verbose_json diarize=true 200" [ "$(code -F file=@"$JFK" -F diarize=true \
    -F response_format=verbose_json -F 'timestamp_granularities[]=word' "$URL$T")" = 200 ]
cp "$WORK/body" "$WORK/v.json"
/usr/bin/python3 - "$WORK/v.json" >"$WORK/srv.spk" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["segments"] and all(g["speaker"].startswith("S") for g in d["segments"]), d["segments"]
print(" ".join("%s:%s" % (w["word"], w["speaker"]) for w in d["words"]))
PY
check "every segment names its speaker" [ -s "$WORK/srv.spk" ]
check "each word's speaker = the CLI's" cmp -s "$WORK/srv.spk" "$WORK/cli.spk"
check "srt diarize=true 200" [ "$(code -F file=@"$JFK" -F diarize=true \
    -F response_format=srt "$URL$T")" = 200 ]
check "srt diarize=true = CLI --diarizer srt" cmp -s "$WORK/body" "$WORK/cli.srt"
check "srt names the speaker" grep -q '^\[S[1-4]\] ' "$WORK/body"
check "without diarize: verbose_json 200" [ "$(code -F file=@"$JFK" \
    -F response_format=verbose_json -F 'timestamp_granularities[]=word' "$URL$T")" = 200 ]
check "without diarize: no speaker" bash -c "! grep -q '\"speaker\"' '$WORK/body'"
check "diarize=false: srt 200" [ "$(code -F file=@"$JFK" -F diarize=false \
    -F response_format=srt "$URL$T")" = 200 ]
check "diarize=false: the plain srt" cmp -s "$WORK/body" "$WORK/plain.srt"
# two at once: the diarizer is one model, runs take turns on it
curl -s -o "$WORK/p1" -F file=@"$JFK" -F diarize=true -F response_format=srt "$URL$T" &
p1=$!
curl -s -o "$WORK/p2" -F file=@"$JFK" -F diarize=true -F response_format=srt "$URL$T" &
p2=$!
wait $p1 $p2
check "two diarized requests at once: the first the CLI's" cmp -s "$WORK/p1" "$WORK/cli.srt"
check "two diarized requests at once: the second the CLI's" cmp -s "$WORK/p2" "$WORK/cli.srt"
srv_stop

# a diarization model served itself: its own speaker turns, not relabelled
srv_start -m "sf=$SF" --diarizer "$SF" -q
check "Sortformer with diarize=true 200" [ "$(code -F file=@"$JFK" -F model=sf -F diarize=true \
    -F response_format=verbose_json "$URL$T")" = 200 ]
/usr/bin/python3 - "$WORK/body" >"$WORK/sf.chk" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
bad = [g for g in d["segments"] if g["text"].strip() != "speaker_" + g["speaker"][1:]]
print("ok" if d["segments"] and not bad else "bad %r" % bad[:2])
PY
check "each turn keeps its own speaker ($(cat "$WORK/sf.chk"))" [ "$(cat "$WORK/sf.chk")" = ok ]
srv_stop
finish
