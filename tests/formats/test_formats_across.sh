#!/usr/bin/env bash
# txt / json / srt / vtt through the CLI, transcribe-server and the Python
# package (python -m transcribe), byte for byte, on three inputs: a short
# file, a diarized conversation (MOSS, speakers in every format) and a long
# file split at pauses. The server speaks OpenAI's API: its text, srt and
# vtt are the library's formats, its json / verbose_json OpenAI's envelopes
# (not compared here). Cue shaping flags (--max-line-chars, --max-cue-ms)
# exist in the CLI and Python only.
# Usage: test_formats_across.sh CLI SERVER|- LIBRARY SOURCE_DIR
CLI=$1 SERVER=$2 LIB=$3 SRC=$4
. "$SRC/tests/server/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
PK="$SRC/models/parakeet-ctc-synth-en.gguf"
TDT="$SRC/tests/data/parakeet/tiny-tdt/parakeet-tiny-tdt-F32.gguf"
MOSS="$SRC/tests/data/moss/tiny/moss-tiny-ref-F16.gguf"
QW="$SRC/tests/data/qwen3_asr/tiny/qwen3-asr-tiny-ref-F16.gguf"
JFK="$SRC/samples/jfk.wav"
MIX="$SRC/tests/data/moss/mix.wav"
LONG="$SRC/tests/data/corpus/samples/whole-earth.wav" # 84 s: Qwen3-ASR splits it
T=/v1/audio/transcriptions

have_py=1
if ! TRANSCRIBE_LIBRARY="$LIB" PYTHONPATH="$SRC/bindings/python" "$PY" -c "import transcribe" 2>/dev/null; then
    echo "SKIP (python): the package does not import with $PY"
    have_py=0
fi
have_srv=1
if [ "$SERVER" = - ] || ! command -v curl >/dev/null; then
    echo "SKIP (server): transcribe-server is not built or curl is missing"
    have_srv=0
fi
[ $have_py = 1 ] || [ $have_srv = 1 ] || exit 77

if [ $have_srv = 1 ]; then
    srv_start -m "pk=$PK" -m "moss=$MOSS" -m "qwen=$QW" -q
fi

# compare NAME MODEL_PATH SERVER_MODEL WAV "CLI/PY ARGS" "SERVER FIELDS"
compare() {
    local name=$1 model=$2 smodel=$3 wav=$4 args=$5 fields=$6
    for f in txt json srt vtt; do
        # shellcheck disable=SC2086
        "$CLI" -q -m "$model" -f $f $args "$wav" >"$WORK/cli.$f" 2>"$WORK/cli.err"
        check "$name: CLI -f $f (rc 0)" [ $? -eq 0 ]
        check "$name: CLI -f $f is not empty" [ -s "$WORK/cli.$f" ]
        if [ $have_py = 1 ]; then
            # shellcheck disable=SC2086
            TRANSCRIBE_LIBRARY="$LIB" PYTHONPATH="$SRC/bindings/python" PYTHONDONTWRITEBYTECODE=1 \
                "$PY" -m transcribe -q -m "$model" -f $f $args "$wav" >"$WORK/py.$f" 2>"$WORK/py.err"
            check "$name: python -f $f = CLI" cmp "$WORK/py.$f" "$WORK/cli.$f"
        fi
        if [ $have_srv = 1 ] && [ $f != json ]; then
            local rf=$f
            [ $f = txt ] && rf=text
            local extra=()
            for kv in $fields; do extra+=(-F "$kv"); done
            check "$name: server $rf 200" [ "$(code -F file=@"$wav" -F model="$smodel" \
                -F response_format=$rf "${extra[@]}" "$URL$T")" = 200 ]
            check "$name: server $rf = CLI -f $f" cmp "$WORK/body" "$WORK/cli.$f"
        fi
    done
}

compare "short" "$PK" pk "$JFK" "" ""
compare "diarized" "$MOSS" moss "$MIX" "--diarize" "diarize=true"
check "diarized: srt names the speakers" grep -q '^\[S2\] ' "$WORK/cli.srt"
check "diarized: vtt has voice spans" grep -q '^<v S1>' "$WORK/cli.vtt"
if [ $have_srv = 1 ]; then
    check "server: diarize=maybe is refused" [ "$(code -F file=@"$MIX" -F model=moss \
        -F diarize=maybe "$URL$T")" = 400 ]
    check "server: the refusal names the field" contains "$WORK/body" '"param":"diarize"'
    check "server: verbose_json diarized 200" [ "$(code -F file=@"$MIX" -F model=moss \
        -F diarize=true -F response_format=verbose_json "$URL$T")" = 200 ]
    check "server: verbose_json segments name the speakers" contains "$WORK/body" '"speaker":"S2"'
    code "$URL/v1/models" >/dev/null
    check "server: /v1/models says which models diarize" \
        grep -q '"id":"moss"[^}]*"diarize":true' "$WORK/body"
fi
# long audio, split at pauses by the library
compare "long and split" "$QW" qwen "$LONG" "" ""
check "long and split: json lists the pieces" grep -q '"chunks":\[{' "$WORK/cli.json"
# cue shaping and token rows (CLI and Python: the server has no such fields)
if [ $have_py = 1 ]; then
    have_srv_saved=$have_srv
    have_srv=0
    compare "shaped cues" "$TDT" - "$JFK" "--max-line-chars 20 --max-cue-ms 2000 --tokens" ""
    check "shaped cues: several cues" [ "$(grep -c ' --> ' "$WORK/cli.srt")" -gt 3 ]
    have_srv=$have_srv_saved
fi
if [ $have_srv = 1 ]; then srv_stop; fi
finish
