#!/usr/bin/env python3
"""Held-out WER through the C command-line tool, per voice group and overall.

Runs the `transcribe` binary in batch JSON-Lines mode (one model load) over
the held-out wavs, scores word-level Levenshtein on normalised text, and, if
a torch transcript file is given (torch_hyps.tsv from torch_eval.py),
reports every utterance where the C output differs from torch greedy CTC.

usage: eval_wer.py TRANSCRIBE_BIN MODEL.gguf TEST_DIR [--torch torch_hyps.tsv]
                   [--out c_hyps.tsv] [--threads 2]
TEST_DIR holds test.tsv (name, group, voice, text[, source]) and wav/<name>.wav.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from wer import wer_counts


def run_cli(binary, model, wavs, threads):
    with tempfile.NamedTemporaryFile("w", suffix=".list", delete=False) as f:
        f.write("\n".join(wavs) + "\n")
        lst = f.name
    try:
        cmd = [binary, "-q", "-m", model, "--threads", str(threads), "--batch", lst,
               "--batch-jsonl"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        os.unlink(lst)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit("transcribe failed with exit %d" % p.returncode)
    out = {}
    for line in p.stdout.splitlines():
        obj = json.loads(line)
        if "file" in obj:
            if "error" in obj:
                print("ERROR %s: %s" % (obj["file"], obj["error"]))
            out[obj["file"]] = obj.get("text", "")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("test_dir")
    ap.add_argument("--torch", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(a.test_dir, "test.tsv"))]
    wavs = [os.path.join(a.test_dir, "wav", r[0] + ".wav") for r in rows]
    hyp = run_cli(a.binary, a.model, wavs, a.threads)

    groups, sources = {}, {}
    tot_e = tot_n = 0
    lines = []
    for r, w in zip(rows, wavs):
        name, group, voice, ref = r[:4]
        h = hyp.get(w, "")
        e, n = wer_counts(ref, h)
        for table, key in ((groups, group), (sources, r[4] if len(r) > 4 else None)):
            if key is None:
                continue
            g = table.setdefault(key, [0, 0, 0])
            g[0] += e
            g[1] += n
            g[2] += 1
        tot_e += e
        tot_n += n
        lines.append((name, h))
    for title, table in (("voice group", groups), ("text source", sources)):
        if not table:
            continue
        print("| %s | utts | words | WER |" % title)
        print("|---|---|---|---|")
        for g in sorted(table):
            e, n, u = table[g]
            print("| %s | %d | %d | %.2f %% |" % (g, u, n, 100.0 * e / max(1, n)))
        print("| **all** | %d | %d | **%.2f %%** |" % (len(rows), tot_n,
                                                      100.0 * tot_e / max(1, tot_n)))
    if a.out:
        with open(a.out, "w") as f:
            for name, h in lines:
                f.write("%s\t%s\n" % (name, h))
    if a.torch:
        th = dict(line.rstrip("\n").split("\t", 1) for line in open(a.torch) if "\t" in line)
        # sp.decode keeps the double space a lone "▁" piece makes; the C result
        # collapses runs of spaces (docs/formats/parakeet.md §9.5), so compare words
        same = lambda x, y: " ".join(x.split()) == " ".join(y.split())  # noqa: E731
        diff = [(n, h, th.get(n)) for n, h in lines if not same(th.get(n, ""), h)]
        print("C vs torch greedy: %d / %d transcripts identical" % (len(lines) - len(diff), len(lines)))
        for n, h, t in diff[:20]:
            print("  %s\n    C:     %s\n    torch: %s" % (n, h, t))


if __name__ == "__main__":
    main()
