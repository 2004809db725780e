#!/usr/bin/env bash
# verbose_json "language" says only what is known: the detected language,
# else the one asked for, else the model's only language where the run gave
# text; null otherwise (a multilingual model that does not detect, a
# diarization model's speaker turns). Loopback only, a few requests.
# Usage: test_language.sh SERVER SOURCE_DIR
SERVER=$1 SRC=$2
. "$SRC/tests/server/lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
PK="$SRC/models/parakeet-ctc-synth-en.gguf"
GN="$SRC/tests/data/granite_nar/granite-nar-tiny-ref-Q8_0.gguf"
SF="$SRC/tests/data/sortformer/sortformer-tiny-ref-Q8_0.gguf"
WH="$SRC/tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf"
JFK="$SRC/samples/jfk.wav"
T=/v1/audio/transcriptions

# lang MODEL [FIELDS...]: prints verbose_json's "language" value as JSON
lang() {
    local m=$1; shift
    [ "$(code -F file=@"$JFK" -F model="$m" -F response_format=verbose_json "$@" "$URL$T")" = 200 ] ||
        { echo "http-error"; return; }
    /usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["language"]))' \
        "$WORK/body"
}

srv_start -m "pk=$PK" -m "gn=$GN" -m "sf=$SF" -m "wh=$WH" -q
got=$(lang pk)
check "one-language model with text: its language ($got)" [ "$got" = '"en"' ]
got=$(lang gn)
check "multilingual model that does not detect: null ($got)" [ "$got" = null ]
got=$(lang gn -F language=fr)
check "... with language=fr: the one asked for ($got)" [ "$got" = '"fr"' ]
got=$(lang sf)
check "diarization model (speaker turns, no text): null ($got)" [ "$got" = null ]
got=$(lang wh)
check "whisper, nothing asked: the detected language ($got)" \
    bash -c "[[ '$got' =~ ^\\\"[a-z]{2,3}\\\"\$ ]]"
got=$(lang wh -F language=de)
check "whisper, language=de: the one asked for ($got)" [ "$got" = '"de"' ]
got=$(lang wh -F language=DE)
check "whisper, language=DE: the model's spelling of it ($got)" [ "$got" = '"de"' ]
srv_stop
finish
