#!/usr/bin/env python3
"""Export a trained checkpoint to a Parakeet-CTC GGUF (docs/formats/parakeet.md §3-§5).

Tensor names and PyTorch shapes follow §4 exactly (the writer stores ggml ne
as the reversed shape); BatchNorm running statistics are written, not
folded. Dtypes follow the F16 column of §4.5: norms, biases, BN stats,
pos_bias and every non-pointwise conv stay F32; pointwise convs and linears
(incl. head.ctc.weight) are F16.

usage: export.py CKPT SPM_MODEL OUT.gguf [--variant ctc-synth-en]
"""
import argparse
import os
import sys

import numpy as np
import sentencepiece as spm
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
import gguf_writer as gw  # noqa: E402


def tensor_map(state, n_layers):
    """(gguf name, NeMo-style state key) pairs in file order."""
    out = []
    for i in (0, 2, 3, 5, 6):
        for s in ("weight", "bias"):
            out.append(("enc.pre_encode.conv.%d.%s" % (i, s), "encoder.pre_encode.conv.%d.%s" % (i, s)))
    out += [("enc.pre_encode.out.weight", "encoder.pre_encode.out.weight"),
            ("enc.pre_encode.out.bias", "encoder.pre_encode.out.bias")]
    pairs = [
        ("norm_ff1", "norm_feed_forward1"), ("ff1.linear1", "feed_forward1.linear1"),
        ("ff1.linear2", "feed_forward1.linear2"), ("norm_attn", "norm_self_att"),
        ("attn.linear_q", "self_attn.linear_q"), ("attn.linear_k", "self_attn.linear_k"),
        ("attn.linear_v", "self_attn.linear_v"), ("attn.linear_out", "self_attn.linear_out"),
        ("attn.linear_pos", "self_attn.linear_pos"), ("norm_conv", "norm_conv"),
        ("conv.pointwise1", "conv.pointwise_conv1"), ("conv.depthwise", "conv.depthwise_conv"),
        ("conv.pointwise2", "conv.pointwise_conv2"), ("conv.bn", "conv.batch_norm"),
        ("norm_ff2", "norm_feed_forward2"), ("ff2.linear1", "feed_forward2.linear1"),
        ("ff2.linear2", "feed_forward2.linear2"), ("norm_out", "norm_out"),
    ]
    for i in range(n_layers):
        g, n = "enc.blocks.%d." % i, "encoder.layers.%d." % i
        for gs, ns in pairs:
            sufs = ["weight", "bias"]
            if gs == "conv.bn":
                sufs += ["running_mean", "running_var"]
            for s in sufs:
                if n + ns + "." + s in state:
                    out.append((g + gs + "." + s, n + ns + "." + s))
        out.append((g + "attn.pos_bias_u", n + "self_attn.pos_bias_u"))
        out.append((g + "attn.pos_bias_v", n + "self_attn.pos_bias_v"))
    out += [("head.ctc.weight", "ctc.weight"), ("head.ctc.bias", "ctc.bias")]
    return out


def dtype_for(name):
    """docs/formats/parakeet.md §4.5 F16 column: Norm and Conv buckets F32, ConvPw and Linear F16."""
    if name.endswith(".bias") or ".bn." in name or "pos_bias" in name:
        return gw.GGML_F32
    if any(part.startswith("norm_") for part in name.split(".")):
        return gw.GGML_F32
    if ".conv.pointwise" in name:
        return gw.GGML_F16
    if ".conv." in name:
        return gw.GGML_F32  # the five pre-encode convs and the depthwise conv
    return gw.GGML_F16


def vocab_arrays(sp):
    pieces, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        pieces.append(sp.id_to_piece(i))
        scores.append(float(sp.get_score(i)))
        if sp.is_unknown(i):
            types.append(2)
        elif sp.is_control(i):
            types.append(3)
        elif sp.is_unused(i):
            types.append(5)
        elif sp.is_byte(i):
            types.append(6)
        else:
            types.append(1)
    return pieces + ["<blank>"], scores + [0.0], types + [3]


def export(ckpt_path, spm_path, out_path, variant, f32=False):
    ck = torch.load(ckpt_path, map_location="cpu")
    cfg, state = ck["cfg"], {k: v.float().numpy() for k, v in ck["state"].items()}
    sp = spm.SentencePieceProcessor(model_file=spm_path)
    V = sp.get_piece_size()
    assert V == cfg["vocab"]
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "parakeet")
    w.add_string("general.name", "Parakeet CTC synthetic English (%s)" % variant)
    w.add_string("general.basename", "parakeet-ctc")
    w.add_string("general.version", "1")
    w.add_string("general.size_label", "%.1fM" % (sum(v.size for v in state.values()) / 1e6))
    w.add_string("general.author", "transcribe tools/train")
    w.add_string("general.organization", "transcribe")
    w.add_string("general.license", "cc0-1.0")
    w.add_uint32("general.file_type", 0 if f32 else 1)
    w.add_string("stt.variant", variant)
    w.add_array("general.languages", ["en"])
    w.add_bool("stt.capability.lang_detect", False)
    w.add_bool("stt.capability.streaming", False)
    w.add_string("stt.parakeet.head_kind", "ctc")

    w.add_string("tokenizer.ggml.model", "bpe")
    pieces, scores, types = vocab_arrays(sp)
    w.add_array("tokenizer.ggml.tokens", pieces, gw.STRING)
    w.add_array("tokenizer.ggml.scores", scores, gw.FLOAT32)
    w.add_array("tokenizer.ggml.token_type", types, gw.INT32)
    if sp.unk_id() >= 0:
        w.add_uint32("tokenizer.ggml.unknown_token_id", sp.unk_id())
    w.add_uint32("tokenizer.ggml.blank_token_id", V)

    p = "stt.parakeet.encoder."
    w.add_uint32(p + "n_layers", cfg["n_layers"])
    w.add_uint32(p + "d_model", cfg["d_model"])
    w.add_uint32(p + "n_heads", cfg["n_heads"])
    w.add_uint32(p + "d_ff", cfg["d_ff"])
    w.add_uint32(p + "conv_kernel", cfg["conv_kernel"])
    w.add_uint32(p + "subsampling_factor", 8)
    w.add_uint32(p + "subsampling_channels", cfg["sub_channels"])
    w.add_uint32(p + "pos_emb_max_len", 5000)
    w.add_bool(p + "use_bias", cfg["use_bias"])
    w.add_bool(p + "xscaling", cfg["xscaling"])
    w.add_int32(p + "att_context_left", -1)
    w.add_int32(p + "att_context_right", -1)
    w.add_string(p + "att_context_style", "regular")
    pad = (cfg["conv_kernel"] - 1) // 2
    w.add_int32(p + "conv_context_left", pad)
    w.add_int32(p + "conv_context_right", pad)
    w.add_string(p + "conv_norm_type", "batch_norm")

    f = "stt.frontend."
    w.add_string(f + "type", "mel")
    w.add_uint32(f + "num_mels", cfg["n_mels"])
    w.add_uint32(f + "sample_rate", 16000)
    w.add_uint32(f + "n_fft", 512)
    w.add_uint32(f + "win_length", 400)
    w.add_uint32(f + "hop_length", 160)
    w.add_string(f + "window", "hann")
    w.add_string(f + "normalize", "per_feature")
    w.add_float32(f + "dither", 1e-5)
    w.add_float32(f + "pre_emphasis", 0.97)
    w.add_float32(f + "f_min", 0.0)
    w.add_float32(f + "f_max", 8000.0)

    names = tensor_map(state, cfg["n_layers"])
    used = set()
    for gname, key in names:
        arr = state[key]
        used.add(key)
        w.add_tensor(gname, arr, gw.GGML_F32 if f32 else dtype_for(gname))
    left = [k for k in state if k not in used and not k.endswith("num_batches_tracked")]
    if left:
        raise SystemExit("unexported state keys: %s" % left)
    w.write(out_path)
    return os.path.getsize(out_path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("spm")
    ap.add_argument("out")
    ap.add_argument("--variant", default="ctc-synth-en")
    ap.add_argument("--f32", action="store_true")
    a = ap.parse_args()
    n = export(a.ckpt, a.spm, a.out, a.variant, a.f32)
    print("%s: %.2f MB" % (a.out, n / 1e6))


if __name__ == "__main__":
    main()
