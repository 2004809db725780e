#!/bin/sh
# transcribe-quantize refuses an output that is its own input, by the same
# path or through a link, and leaves the model's bytes as they were.
set -eu
q=$1 ref=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
cp "$ref" "$dir/m.gguf"
ln -s m.gguf "$dir/alias.gguf"
before=$(cksum <"$dir/m.gguf")
for out in "$dir/m.gguf" "$dir/alias.gguf" "$dir/./m.gguf"; do
    if "$q" "$dir/m.gguf" "$out" --quant q8_0 >"$dir/log" 2>&1; then
        echo "FAIL: quantize into $out succeeded"
        exit 1
    fi
    grep -q "same file" "$dir/log" || { echo "FAIL: no reason given for $out"; cat "$dir/log"; exit 1; }
done
[ "$(cksum <"$dir/m.gguf")" = "$before" ] || { echo "FAIL: the input changed"; exit 1; }
echo "quantize own input: refused 3 ways, input intact"
