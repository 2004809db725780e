#!/usr/bin/env bash
# scripts/check-layers passes on this tree, passes on a small clean fixture
# tree, and fails on that fixture with each hole added alone, naming the rule:
# a family calling src/api, nn including text/, nn naming a core type through
# a macro, a public entry point called inside the library, one defined
# outside src/api, a tool including a family header, a tool comparing an
# architecture name.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
check="$repo/scripts/check-layers"
fail=0

if ! out=$("$check" "$repo" 2>&1); then
    echo "FAIL: the tree itself violates the layers:" >&2
    echo "$out" >&2
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A minimal tree with every layer the checker reads.
fixture() {
    local t=$1
    rm -rf "$t"
    mkdir -p "$t"/include/transcribe "$t"/src/{api,core,text,util,nn,models/fam} "$t"/tools/bench
    cat >"$t/include/transcribe.h" <<'H'
#ifndef TRANSCRIBE_API
#define TRANSCRIBE_API __attribute__((visibility("default")))
#endif
/* transcribe_in_comment() is not a declaration */
TRANSCRIBE_API int transcribe_thing(int x);
TRANSCRIBE_API const char *
transcribe_status_string(int status);
H
    cat >"$t/src/api/thing.c" <<'H'
#include "transcribe.h"
#include "util/thing.h"
TRANSCRIBE_API int transcribe_thing(int x) {
    return tr_thing(x);
}
TRANSCRIBE_API const char *transcribe_status_string(int status) {
    return status ? "error" : "ok";
}
H
    cat >"$t/src/api/api_internal.h" <<'H'
int tr_api_dispatch(int x);
H
    cat >"$t/src/core/family.h" <<'H'
typedef struct tr_session_cfg {
    int n;
} tr_session_cfg;
#define TR_FAMILY_SESSION(P) int P##_session;
H
    cat >"$t/src/text/tokenizer.h" <<'H'
typedef struct tr_tokenizer tr_tokenizer;
int tr_tokenizer_n_vocab(const tr_tokenizer *t);
H
    cat >"$t/src/util/thing.h" <<'H'
int tr_thing(int x);
H
    cat >"$t/src/util/thing.c" <<'H'
#include "util/thing.h"
/* the library logs "transcribe_thing(x)" in a string: not a call */
static const char *msg = "transcribe_thing(";
int tr_thing(int x) {
    return x + (msg[0] != 0);
}
H
    cat >"$t/src/nn/block.h" <<'H'
int tr_nn_block(int x);
#define TR_NN_TWICE(x) (2 * tr_nn_block(x))
H
    cat >"$t/src/nn/block.c" <<'H'
#include "nn/block.h"
#include "util/thing.h"
int tr_nn_block(int x) {
    return tr_thing(x);
}
H
    cat >"$t/src/models/fam/fam.c" <<'H'
#include "core/family.h"
#include "nn/block.h"
static int run(int x) {
    return TR_NN_TWICE(x);
}
const struct {
    const char *arch;
    int (*run)(int);
} tr_family_fam = {.arch = "fam", .run = run};
H
    cat >"$t/tools/bench/bench.c" <<'H'
#include <string.h>
#include "api/tool_hooks.h"
#include "transcribe.h"
int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "fam")) return 2; /* not an architecture comparison */
    return transcribe_thing(argc);
}
H
}

# expect_fail NAME EXPECTED-MESSAGE-PART: the checker fails on $tmp/t, saying so.
expect_fail() {
    local name=$1 want=$2 out
    if out=$("$check" "$tmp/t" 2>&1); then
        echo "FAIL: $name: the checker passed" >&2
        fail=1
    elif ! grep -qF -- "$want" <<<"$out"; then
        echo "FAIL: $name: no '$want' in:" >&2
        echo "$out" >&2
        fail=1
    else
        echo "ok: $name"
    fi
}

fixture "$tmp/t"
if ! out=$("$check" "$tmp/t" 2>&1); then
    echo "FAIL: the clean fixture does not pass:" >&2
    echo "$out" >&2
    exit 1
fi
echo "ok: clean fixture passes"

fixture "$tmp/t"
cat >>"$tmp/t/src/models/fam/fam.c" <<'H'
int tr_fam_extra(void) {
    return tr_api_dispatch(1);
}
H
expect_fail "family calls src/api" "a family must not call src/api (tr_api_dispatch)"

fixture "$tmp/t"
sed -i 's|#include "util/thing.h"|#include "util/thing.h"\n#include "text/tokenizer.h"|' "$tmp/t/src/nn/block.c"
expect_fail "nn includes text/" "src/nn must not include src/core or src/text"

fixture "$tmp/t"
cat >>"$tmp/t/src/nn/block.h" <<'H'
#define TR_NN_SESSION(P) static int P##_setup(const tr_session_cfg *c) { return c->n; }
H
expect_fail "nn macro names a core type" "src/nn names tr_session_cfg"

fixture "$tmp/t"
cat >>"$tmp/t/src/util/thing.c" <<'H'
int tr_thing_again(int x) {
    return transcribe_thing(x);
}
H
expect_fail "public entry point called inside the library" \
    "public entry point transcribe_thing called inside the library"

fixture "$tmp/t"
cat >>"$tmp/t/src/models/fam/fam.c" <<'H'
const char *tr_fam_why(int st) {
    return transcribe_status_string(st);
}
H
expect_fail "family calls a public entry point" \
    "public entry point transcribe_status_string called inside the library"

fixture "$tmp/t"
echo 'TRANSCRIBE_API void transcribe_log_set(void *cb);' >>"$tmp/t/include/transcribe.h"
cat >"$tmp/t/src/util/log.c" <<'H'
TRANSCRIBE_API void transcribe_log_set(void *cb) {
    (void)cb;
}
H
expect_fail "public entry point defined outside src/api" \
    "public entry point transcribe_log_set defined outside src/api"

fixture "$tmp/t"
sed -i 's|#include "transcribe.h"|#include "transcribe.h"\n#include "models/fam/fam.h"|' "$tmp/t/tools/bench/bench.c"
expect_fail "tool includes a family header" "a tool includes no family or dispatcher header"

fixture "$tmp/t"
sed -i 's|const char \*mode = argc > 1 ? argv\[1\] : "";|const char *arch = argc > 1 ? argv[1] : "";\n    if (strcmp(arch, "fam") == 0) return 3;\n    const char *mode = "";|' "$tmp/t/tools/bench/bench.c"
expect_fail "tool compares an architecture name" \
    'a tool branches on the architecture name "fam"'

exit $fail
