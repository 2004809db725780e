#!/usr/bin/env python3
"""Check an exported GGUF against the project's independent reference.

Reads the GGUF back with tools/ref/gguf_writer.read_gguf, loads its tensors
into tools/ref/fastconformer.FastConformerEncoder (float64, written from the
spec by another engineer), runs a held-out wav through mel_ref + that
encoder + the CTC head of docs/formats/parakeet.md §8.5, and compares with the trainer's own torch
model run on the F16-rounded checkpoint. Agreement means the export (names,
shapes, layouts, dtypes) and the training math both match the spec.

usage: crosscheck.py MODEL.gguf CKPT WAV [WAV...]
"""
import os
import sys

import numpy as np
import torch

from model import greedy_ctc
from torch_eval import load_model

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
import gguf_writer as gw  # noqa: E402
import mel_ref  # noqa: E402
from fastconformer import FastConformerEncoder, FCConfig  # noqa: E402


def kv_value(kv, key):
    v = kv[key][1]
    return v[1] if isinstance(v, tuple) else v


def main():
    path, ckpt, wavs = sys.argv[1], sys.argv[2], sys.argv[3:]
    kv, tens = gw.read_gguf(path)
    p = "stt.parakeet.encoder."
    cfg = FCConfig(n_layers=kv_value(kv, p + "n_layers"), d_model=kv_value(kv, p + "d_model"),
                   n_heads=kv_value(kv, p + "n_heads"), d_ff=kv_value(kv, p + "d_ff"),
                   conv_kernel=kv_value(kv, p + "conv_kernel"),
                   sub_channels=kv_value(kv, p + "subsampling_channels"),
                   n_mels=kv_value(kv, "stt.frontend.num_mels"),
                   use_bias=kv_value(kv, p + "use_bias"), xscaling=kv_value(kv, p + "xscaling"))
    ref = FastConformerEncoder(cfg).double()
    ref.load_gguf_tensors({n: t[2] for n, t in tens.items()})
    W = torch.from_numpy(tens["head.ctc.weight"][2].astype(np.float64))[:, :, 0]
    b = torch.from_numpy(tens["head.ctc.bias"][2].astype(np.float64))
    blank = W.shape[0] - 1
    pieces = kv_value(kv, "tokenizer.ggml.tokens")
    mine = load_model(ckpt, f16=True)
    worst = 0.0
    for wav in wavs:
        x, _ = mel_ref.read_wav(wav)
        mel = mel_ref.nemo_logmel(x, cfg.n_mels, "constant")  # [M, T]
        _, enc = ref(torch.from_numpy(mel))
        lr = enc @ W.t() + b
        with torch.no_grad():
            lm, L = mine(torch.from_numpy(mel.T.astype(np.float32))[None], torch.tensor([mel.shape[1]]))
        diff = (lm[0].double() - lr).abs().max().item()
        worst = max(worst, diff)
        ids_r = greedy_ctc(lr[None], torch.tensor([lr.shape[0]]), blank)[0]
        ids_m = greedy_ctc(lm, L, blank)[0]
        text = "".join(pieces[i] for i in ids_r).replace("\u2581", " ").strip()
        print("%s: max|logit diff| %.2e, tokens %s | %s" % (
            os.path.basename(wav), diff, "same" if ids_r == ids_m else "DIFFER", text))
    print("worst logit difference %.3e" % worst)


if __name__ == "__main__":
    main()
