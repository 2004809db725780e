#!/usr/bin/env python3
"""Torch greedy-CTC transcripts and WER of a checkpoint on the held-out set.

Features are recomputed from the held-out wavs with tools/ref/mel_ref.py,
one utterance at a time, so this mirrors exactly what the C CLI does.
--f16 rounds the weights the GGUF stores as F16 (export.dtype_for) before
running, so remaining C/torch differences are the C code's, not rounding's.

usage: torch_eval.py CKPT SPM_MODEL TEST_DIR [--out torch_hyps.tsv] [--f16]
"""
import argparse
import os
import sys

import numpy as np
import sentencepiece as spm
import torch

from export import dtype_for, tensor_map
from model import CTCModel, greedy_ctc
from wer import wer_counts

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
import gguf_writer as gw  # noqa: E402
import mel_ref  # noqa: E402


def load_model(ckpt, f16):
    ck = torch.load(ckpt, map_location="cpu")
    cfg, state = ck["cfg"], ck["state"]
    if f16:
        for gname, key in tensor_map(state, cfg["n_layers"]):
            if dtype_for(gname) == gw.GGML_F16:
                state[key] = state[key].half().float()
    m = CTCModel(cfg)
    m.load_state_dict(state)
    m.eval()
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("spm")
    ap.add_argument("test_dir")
    ap.add_argument("--out", default=None)
    ap.add_argument("--f16", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    m = load_model(a.ckpt, a.f16)
    sp = spm.SentencePieceProcessor(model_file=a.spm)
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(a.test_dir, "test.tsv"))]
    groups, out = {}, []
    te = tn = 0
    with torch.no_grad():
        for name, group, voice, ref in (r[:4] for r in rows):
            x, sr = mel_ref.read_wav(os.path.join(a.test_dir, "wav", name + ".wav"))
            mel = mel_ref.nemo_logmel(x, 80, "constant").T.astype(np.float32)
            logits, L = m(torch.from_numpy(mel)[None], torch.tensor([mel.shape[0]]))
            h = sp.decode(greedy_ctc(logits, L, m.cfg["vocab"])[0])
            e, n = wer_counts(ref, h)
            g = groups.setdefault(group, [0, 0])
            g[0] += e
            g[1] += n
            te += e
            tn += n
            out.append((name, h))
    for g in sorted(groups):
        print("%-16s WER %.2f %%" % (g, 100.0 * groups[g][0] / max(1, groups[g][1])))
    print("%-16s WER %.2f %%  (%d utterances, %d words)" % ("all", 100.0 * te / max(1, tn),
                                                            len(rows), tn))
    if a.out:
        with open(a.out, "w") as f:
            for name, h in out:
                f.write("%s\t%s\n" % (name, h))


if __name__ == "__main__":
    main()
