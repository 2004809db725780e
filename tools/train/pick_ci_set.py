#!/usr/bin/env python3
"""Copy the first N held-out test utterances (no choosing: t000, t001, ... in
the order synth.py wrote them, which alternates the text sources and cycles
the held-out voice groups) into the repository for the CI WER test
(tests/bundled/test_bundled_wer.c).

usage: pick_ci_set.py TEST_DIR OUT_DIR [--n 30] [--note "measured ..."]
writes OUT_DIR/<name>.wav and OUT_DIR/heldout.tsv (file, source, reference)
"""
import argparse
import os
import shutil


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("test_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(a.test_dir, "test.tsv"))]
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "heldout.tsv"), "w") as f:
        f.write("# first %d utterances of the held-out test set (tools/train/pick_ci_set.py)\n" % a.n)
        if a.note:
            f.write("# %s\n" % a.note)
        f.write("# file\tsource\treference (voice group in the file name)\n")
        for name, group, voice, text, src in rows[:a.n]:
            fn = "%s-%s.wav" % (name, group)
            shutil.copyfile(os.path.join(a.test_dir, "wav", name + ".wav"),
                            os.path.join(a.out_dir, fn))
            f.write("%s\t%s\t%s\n" % (fn, src, text))


if __name__ == "__main__":
    main()
