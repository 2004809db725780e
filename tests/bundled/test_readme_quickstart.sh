#!/bin/sh
# The README's quickstart output is what the quickstart's last command
# prints: its subtitle lines (between the model line and the timings, which
# name this machine's path and speed) equal the CLI's standard output byte
# for byte, so the README cannot drift from the program.
# Usage: test_readme_quickstart.sh TRANSCRIBE SOURCE_DIR
set -eu
cli=$1 src=$2
cmd=$(sed -n 's|^build/bin/transcribe \(.*\)$|\1|p' "$src/scripts/quickstart")
[ -n "$cmd" ] || { echo "FAIL: no transcribe command in scripts/quickstart"; exit 1; }
want=$(awk '/^The first prints/ {f = 1; next}
            f && /^```/ {n++; if (n == 2) exit; next}
            f && n == 1 && !/^using bundled model/ && !/^\[info\]/ {print}' "$src/README.md")
cd "$src"
# shellcheck disable=SC2086
got=$(env -u TRANSCRIBE_MODEL "$cli" $cmd 2>/dev/null)
if [ "$got" != "$want" ]; then
    echo "FAIL: README quickstart output differs from the CLI's"
    echo "--- README"; echo "$want"; echo "--- CLI ($cmd)"; echo "$got"
    exit 1
fi
echo "README quickstart: $(echo "$got" | wc -l) lines as printed"
