#!/usr/bin/python3
"""Independent float64 PyTorch reference of the Streaming Sortformer diarizer
(docs/formats/sortformer.md), written from the format document and the
shared FastConformer reference (fastconformer.py, docs/formats/parakeet.md
sec. 7), not from the C sources.

  * GGUF writer in the published schema (sec. 2 keys in converter order,
    sec. 3 tensors in file order), F32 / F16 / Q8_0 with the quantizer's
    buckets (docs/formats/gguf.md sec. 9.5);
  * front end sec. 4 (no normalisation, ceil framing, zeroed tail frame);
  * graph A (raw pre-encode) and graph B (xscaling, rel-pos Conformer,
    encoder_proj, post-LN Transformer sec. 5.3, ReLU/fc1/ReLU/sigmoid head);
  * the streaming driver sec. 6.1-6.4 (chunk loop, FIFO, speaker cache,
    silence profile, compression with PyTorch-CPU tie order, float32), and
    the segments of sec. 6.5.

usage:
  tools/ref/sortformer.py --config tiny --out tests/data/sortformer
  tools/ref/sortformer.py --config real --out build-ref/sortformer [--dtypes F32,F16,Q8_0]
"""
import argparse
import math
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_writer as gw  # noqa: E402
import mel_ref  # noqa: E402
from fastconformer import FCConfig, FastConformerEncoder  # noqa: E402

SR, HOP, SUB = 16000, 160, 8
F32 = np.float32

CONFIGS = {
    # tiny: committed fixture. Stream point chosen so the 12 s clip runs 8
    # chunks with FIFO pops of varying size and a compression on every chunk
    # from the 2nd on.
    "tiny": dict(n_mels=128, enc_layers=2, d=32, heads=4, d_ff=64, kernel=9, sub_ch=8,
                 tf_layers=2, D=64, tf_heads=4, Fd=128, S=4,
                 chunk=20, fifo=10, cache=24, update=12, seed=3, band=(1.0, 3.0), size_label="110K"),
    # real: published dimensions (docs/formats/sortformer.md sec. 1), random weights
    "real": dict(n_mels=128, enc_layers=17, d=512, heads=8, d_ff=2048, kernel=9, sub_ch=256,
                 tf_layers=18, D=192, tf_heads=8, Fd=768, S=4,
                 chunk=188, fifo=0, cache=188, update=188, seed=5, size_label="117M"),
}

# sec. 6.1 presets: chunk, rc, fifo, update, cache
PRESETS = {
    "DEFAULT": None,
    "VERY_HIGH_LATENCY": (340, 40, 40, 300, 188),
    "HIGH_LATENCY": (124, 1, 124, 124, 188),
    "LOW_LATENCY": (6, 7, 188, 144, 188),
}


# ----------------------------------------------------------------------------
# Front end (sec. 4)
# ----------------------------------------------------------------------------

def sortformer_mel(x, n_mels):
    """[n_mels, T_mel] float64 log-mel, T_mel = ceil(n/160), frames
    t >= floor(n/160) zeroed, no normalisation."""
    n = x.size
    t_mel = -(-n // HOP)
    if t_mel < 2:
        raise ValueError("fewer than 161 samples")
    y = x.astype(np.float64).copy()
    y[1:] = x[1:] - 0.97 * x[:-1]
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 399)  # symmetric Hann
    P = mel_ref.stft_power(y, 512, win, HOP, "constant", t_mel)
    E = mel_ref.slaney_filterbank(SR, 512, n_mels, 0.0, 8000.0) @ P.T
    L = np.log(E + 2.0 ** -24)
    L[:, n // HOP:] = 0.0
    return L


# ----------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------

TF_NAMES = ["norm_1.weight", "norm_1.bias", "attn.q.weight", "attn.q.bias", "attn.k.weight", "attn.k.bias",
            "attn.v.weight", "attn.v.bias", "attn.out.weight", "attn.out.bias", "norm_2.weight", "norm_2.bias",
            "ff.in.weight", "ff.in.bias", "ff.out.weight", "ff.out.bias"]
HEAD_NAMES = ["diar.encoder_proj.weight", "diar.encoder_proj.bias", "diar.fc1.weight", "diar.fc1.bias",
              "diar.spk_head.weight", "diar.spk_head.bias", "diar.single_spk_head.weight",
              "diar.single_spk_head.bias"]


class Sortformer:
    def __init__(self, cfg, dtype=torch.float64):
        self.cfg = cfg
        self.dtype = dtype
        self.fc = FCConfig(cfg["enc_layers"], cfg["d"], cfg["heads"], cfg["d_ff"], cfg["kernel"],
                           cfg["sub_ch"], cfg["n_mels"], use_bias=True, xscaling=True)
        self.enc = FastConformerEncoder(self.fc).to(dtype)
        self.W = {}  # Sortformer-specific tensors (torch, PyTorch shapes)

    # --- weights ---------------------------------------------------------
    def shapes(self):
        c = self.cfg
        d, D, Fd, S = c["d"], c["D"], c["Fd"], c["S"]
        out = []
        for i in range(c["tf_layers"]):
            p = "tf.blocks.%d." % i
            for n in TF_NAMES:
                if n in ("attn.q.weight", "attn.k.weight", "attn.v.weight", "attn.out.weight"):
                    shp = (D, D)
                elif n == "ff.in.weight":
                    shp = (Fd, D)
                elif n == "ff.in.bias":
                    shp = (Fd,)
                elif n == "ff.out.weight":
                    shp = (D, Fd)
                else:
                    shp = (D,)
                out.append((p + n, shp))
        out += [("diar.encoder_proj.weight", (D, d)), ("diar.encoder_proj.bias", (D,)),
                ("diar.fc1.weight", (D, D)), ("diar.fc1.bias", (D,)),
                ("diar.spk_head.weight", (S, 2 * D)), ("diar.spk_head.bias", (S,)),
                ("diar.single_spk_head.weight", (S, D)), ("diar.single_spk_head.bias", (S,))]
        return out

    def tensors(self):
        """OrderedDict-like list of (GGUF name, numpy float64) in file order."""
        out = list(self.enc.gguf_tensors().items())
        out = [(n, np.asarray(a, dtype=np.float64)) for n, a in out]
        out += [(n, self.W[n].detach().cpu().numpy().astype(np.float64)) for n, _ in self.shapes()]
        return out

    def load(self, tens):
        tens = dict(tens)
        self.enc.load_gguf_tensors({n: tens[n] for n in self.enc.gguf_tensors()})
        for n, shp in self.shapes():
            a = np.asarray(tens[n])
            assert a.shape == shp, (n, a.shape, shp)
            self.W[n] = torch.as_tensor(a, dtype=torch.float64).to(self.dtype)

    def randomize(self, gen, attn_out_scale=0.5):
        c = self.cfg
        self.enc.randomize_(gen)

        def rn(shape, std):
            return torch.randn(*shape, generator=gen, dtype=torch.float64) * std

        for n, shp in self.shapes():
            if ".norm_" in n:
                v = (1.0 + rn(shp, 0.1)) if n.endswith("weight") else rn(shp, 0.1)
            elif n.endswith(".bias"):
                v = rn(shp, 0.1)
            else:
                std = 1.0 / math.sqrt(shp[1])
                if n.endswith("attn.q.weight") or n.endswith("attn.k.weight"):
                    std *= 2.0  # sharper attention
                if n.endswith("attn.out.weight"):
                    std *= attn_out_scale
                v = rn(shp, std)
            self.W[n] = v.to(self.dtype)
        del c

    # --- graphs (sec. 5) -------------------------------------------------
    @torch.no_grad()
    def graph_a(self, mel):
        """Raw pre-encode output of a mel window [n_mels, M] -> [ceil(M/8), d]."""
        mel = torch.as_tensor(mel).to(self.dtype)
        return self.enc.pre_encode(mel)

    @torch.no_grad()
    def tf_block(self, G, i):
        W = self.W
        p = "tf.blocks.%d." % i
        D, H = self.cfg["D"], self.cfg["tf_heads"]
        dh = D // H
        T = G.shape[0]
        q = G @ W[p + "attn.q.weight"].T + W[p + "attn.q.bias"]
        k = G @ W[p + "attn.k.weight"].T + W[p + "attn.k.bias"]
        v = G @ W[p + "attn.v.weight"].T + W[p + "attn.v.bias"]
        s = dh ** 0.25
        q = (q / s).reshape(T, H, dh).transpose(0, 1)
        k = (k / s).reshape(T, H, dh).transpose(0, 1)
        v = v.reshape(T, H, dh).transpose(0, 1)
        a = torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v
        A = a.transpose(0, 1).reshape(T, D) @ W[p + "attn.out.weight"].T + W[p + "attn.out.bias"]
        G = F.layer_norm(A + G, (D,), W[p + "norm_1.weight"], W[p + "norm_1.bias"], 1e-5)
        Fh = F.relu(G @ W[p + "ff.in.weight"].T + W[p + "ff.in.bias"]) @ W[p + "ff.out.weight"].T \
            + W[p + "ff.out.bias"]
        return F.layer_norm(Fh + G, (D,), W[p + "norm_2.weight"], W[p + "norm_2.bias"], 1e-5)

    @torch.no_grad()
    def graph_b(self, X):
        """X: [T_cat, d] raw embeddings (cache ++ fifo ++ chunk). Returns a dict
        of the intermediate tensors and the probabilities [T_cat, S]."""
        W = self.W
        X = torch.as_tensor(X).to(self.dtype)
        x = X * math.sqrt(self.cfg["d"])
        pe = self.enc.pos_table(x.shape[0])
        for blk in self.enc.blocks:
            x = blk(x, pe)
        r = {"conformer": x}
        G = x @ W["diar.encoder_proj.weight"].T + W["diar.encoder_proj.bias"]
        r["proj"] = G
        for i in range(self.cfg["tf_layers"]):
            G = self.tf_block(G, i)
        r["transformer"] = G
        Hh = F.relu(G)
        Hh = F.relu(Hh @ W["diar.fc1.weight"].T + W["diar.fc1.bias"])
        r["hidden"] = Hh
        r["logits"] = Hh @ W["diar.single_spk_head.weight"].T + W["diar.single_spk_head.bias"]
        r["probs"] = torch.sigmoid(r["logits"])
        return r


# ----------------------------------------------------------------------------
# Streaming (sec. 6)
# ----------------------------------------------------------------------------

class StreamParams:
    def __init__(self, cfg, preset="DEFAULT"):
        self.chunk, self.fifo, self.cache, self.update = cfg["chunk"], cfg["fifo"], cfg["cache"], cfg["update"]
        self.lc, self.rc = 1, 1
        if PRESETS[preset] is not None:
            self.chunk, self.rc, self.fifo, self.update, self.cache = PRESETS[preset]
        self.sil_per_spk = 3
        self.sil_threshold = F32(0.2)
        self.pred_thr = F32(0.25)
        self.boost_latest = F32(0.05)
        self.strong_rate, self.weak_rate, self.min_pos_rate = 0.75, 1.5, 0.5
        self.max_index = 99999


def log_pred_scores(p, thr):
    """sec. 6.4 scores in float32, left-to-right like the formula."""
    p = p.astype(F32)
    n, ns = p.shape
    l1 = np.log(np.maximum(F32(1) - p, thr)).astype(F32)
    l1sum = np.zeros(n, dtype=F32)
    for s in range(ns):
        l1sum = (l1sum + l1[:, s]).astype(F32)
    lp = np.log(np.maximum(p, thr)).astype(F32)
    return (((lp - l1) + l1sum[:, None]) - np.log(F32(0.5))).astype(F32)


def topk_order(vals, k):
    """Indices of the k largest values: value desc, index asc (PyTorch CPU)."""
    idx = np.arange(vals.size)
    order = sorted(idx, key=lambda i: (-float(vals[i]) if vals[i] != -np.inf else np.inf, i))
    return order[:k]


def boundary_gap(vals, k):
    """Gap between the k-th and (k+1)-th largest of vals when both are finite
    (a near tie there is what a float32 implementation could order differently);
    inf when the boundary is not between two finite values."""
    if k <= 0 or k >= vals.size:
        return math.inf
    v = np.sort(vals.astype(np.float64))[::-1]
    a, b = v[k - 1], v[k]
    if not (np.isfinite(a) and np.isfinite(b)):
        return math.inf
    return float(a - b)


def compress(st, sp, ns, log):
    sc, sc_p = st["sc"], st["sc_p"]
    N, L = sc.shape[0], sp.cache
    sil = sp.sil_per_spk
    per = L // ns - sil
    strong = int(math.floor(per * sp.strong_rate))
    weak = int(math.floor(per * sp.weak_rate))
    min_pos = int(math.floor(per * sp.min_pos_rate))
    p = sc_p.astype(F32)
    score = log_pred_scores(p, sp.pred_thr)
    # float32 ties among the cache predictions (saturated sigmoids) make the
    # picks depend on float32 digits; the fixture is designed to have none
    live = (p != 0).any(axis=1)  # disabled slots hold zeros and score -inf
    st["sat"] += int(((p == F32(1)) | (F32(1) - p == F32(1)))[live].sum())
    fin = score[p > F32(0.5)]
    if fin.size:
        st["gaps"].append(("zero", float(np.abs(fin).min())))
    score[~(p > F32(0.5))] = -np.inf
    for s in range(ns):
        if int((score[:, s] > 0).sum()) >= min_pos:
            score[(p[:, s] > F32(0.5)) & ~(score[:, s] > 0), s] = -np.inf
    score[L:] = (score[L:] + sp.boost_latest).astype(F32)
    for k, a in ((strong, 2.0), (weak, 1.0)):
        delta = F32(F32(a) * np.log(F32(0.5)))
        for s in range(ns):
            st["gaps"].append(("topk", boundary_gap(score[:, s], min(k, N))))
            for i in topk_order(score[:, s], min(k, N)):
                score[i, s] = F32(score[i, s] - delta)
    n_f = N + sil
    ext = np.concatenate([score, np.full((sil, ns), np.inf, dtype=F32)])
    flat = ext.T.reshape(-1)  # f = s*n_f + i
    kk = min(L, flat.size)
    st["gaps"].append(("pick", boundary_gap(flat, kk)))
    picks = [sp.max_index if flat[f] == -np.inf else f for f in topk_order(flat, kk)]
    picks += [sp.max_index] * (L - kk)
    picks.sort()
    new_sc = np.zeros((L, sc.shape[1]), dtype=sc.dtype)
    new_p = np.zeros((L, ns), dtype=np.float64)
    frames = []
    for j, f in enumerate(picks):
        fr = f % n_f
        dis = f == sp.max_index or fr >= N
        if dis:
            new_sc[j] = st["msil"]
            frames.append(-1)
        else:
            new_sc[j] = sc[fr]
            new_p[j] = sc_p[fr]
            frames.append(fr)
    log.append("compress N=%d L=%d per=%d strong=%d weak=%d min_pos=%d frames=%s" % (
        N, L, per, strong, weak, min_pos, " ".join(str(f) for f in frames)))
    st["sc"], st["sc_p"] = new_sc, new_p
    st["n_compress"] += 1


def silence_profile(st, pe, pp, thr):
    ssum = np.zeros(pp.shape[0], dtype=F32)
    for s in range(pp.shape[1]):
        ssum = (ssum + pp[:, s].astype(F32)).astype(F32)
    sil = ssum < thr
    st["sil_sums"].extend(float(v) for v in ssum)
    m = int(sil.sum())
    if m == 0:
        return
    old = st["n_sil"]
    new = old + m
    tot = np.zeros(pe.shape[1], dtype=F32)
    for i in np.nonzero(sil)[0]:
        tot = (tot + pe[i].astype(F32)).astype(F32)
    st["msil"] = ((st["msil"].astype(F32) * F32(old) + tot) / F32(max(new, 1))).astype(F32)
    st["n_sil"] = new


def run_streaming(model, mel, sp, log=None, chunk_dump=None, noise=None):
    """sec. 6.2-6.3. mel: [n_mels, T_mel] float64. Returns probs [n_out, S]
    (float64) and the state (for diagnostics)."""
    if log is None:
        log = []
    d, ns = model.cfg["d"], model.cfg["S"]
    L_feat = mel.shape[1]
    np_dt = np.float64 if model.dtype == torch.float64 else np.float32
    st = dict(sc=np.zeros((0, d), np_dt), sc_p=None, ff=np.zeros((0, d), np_dt), ff_p=np.zeros((0, ns)),
              msil=np.zeros(d, F32), n_sil=0, n_compress=0, sil_sums=[], all_pr=[], gaps=[], sat=0)
    out = []
    stt = end = 0
    chunk_i = 0
    while end < L_feat:
        lo_off = min(sp.lc * SUB, stt)
        end = min(stt + sp.chunk * SUB, L_feat)
        ro_off = min(sp.rc * SUB, L_feat - end)
        lo, hi = stt - lo_off, end + ro_off
        lcf = (lo_off + SUB // 2) // SUB
        rcf = (ro_off + SUB - 1) // SUB
        E = model.graph_a(mel[:, lo:hi]).cpu().numpy()
        T = E.shape[0]
        S, Fn = st["sc"].shape[0], st["ff"].shape[0]
        X = np.concatenate([st["sc"], st["ff"], E]).astype(np_dt)
        r = model.graph_b(X)
        pr = r["probs"].cpu().numpy().astype(np.float64)
        if noise is not None:  # robustness probe: perturb the logits the state update sees
            amp, gen = noise
            lg = r["logits"].cpu().numpy().astype(np.float64)
            pr = 1.0 / (1.0 + np.exp(-(lg + amp * (2 * gen.random(pr.shape) - 1))))
        st["all_pr"].append(pr)
        if chunk_dump is not None:
            chunk_dump.append(dict(E=E, X=X, r={k: v.cpu().numpy() for k, v in r.items()}))
        C = T - lcf - rcf
        at = len(log)  # the chunk line goes before its compression line
        # sec. 6.3
        ff_p = pr[S:S + Fn]
        c_p = pr[S + Fn + lcf:S + Fn + lcf + C]
        ff = np.concatenate([st["ff"], E[lcf:lcf + C]])
        ff_p = np.concatenate([ff_p, c_p])
        pop = 0
        if Fn + C > sp.fifo:
            pop = min(max(sp.update, C - sp.fifo + Fn), Fn + C)
            pe, pp = ff[:pop], ff_p[:pop]
            silence_profile(st, pe, pp, sp.sil_threshold)
            ff, ff_p = ff[pop:], ff_p[pop:]
            st["sc"] = np.concatenate([st["sc"], pe])
            if st["sc_p"] is not None:
                st["sc_p"] = np.concatenate([st["sc_p"], pp])
            if st["sc"].shape[0] > sp.cache:
                if st["sc_p"] is None:
                    st["sc_p"] = np.concatenate([pr[0:S], pp])
                compress(st, sp, ns, log)
        st["ff"], st["ff_p"] = ff, ff_p
        out.append(c_p)
        log.insert(at, "chunk %d mel [%d,%d) T_diar=%d lcf=%d rcf=%d C=%d S_in=%d F_in=%d pop=%d S_out=%d F_out=%d "
                   "n_sil=%d" % (chunk_i, lo, hi, T, lcf, rcf, C, S, Fn, pop, st["sc"].shape[0],
                                 st["ff"].shape[0], st["n_sil"]))
        chunk_i += 1
        stt = end
    probs = np.concatenate(out)
    n_out = -(-L_feat // SUB)
    return probs[:n_out], st


def segments(probs, frame_hop=1280, sr=SR):
    """sec. 6.5: speaker-major runs of p > 0.5 -> (t0_ms, t1_ms, speaker_id)."""
    ms = 1000.0 * frame_hop / sr

    def llround(x):
        return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))

    rows = []
    for s in range(probs.shape[1]):
        act = probs[:, s] > 0.5
        t = 0
        while t < len(act):
            if act[t]:
                a = t
                while t < len(act) and act[t]:
                    t += 1
                rows.append((llround(a * ms), llround(t * ms), s + 1))
            else:
                t += 1
    return rows


# ----------------------------------------------------------------------------
# GGUF (sec. 2, 3)
# ----------------------------------------------------------------------------

def bucket(name):
    """docs/formats/gguf.md sec. 9.5 bucket of a sortformer tensor."""
    if (name.endswith(".bias") or ".bn." in name or name.endswith("running_mean") or name.endswith("running_var")
            or ("norm_" in name and name.endswith(".weight")) or name.endswith(".pos_bias_u")
            or name.endswith(".pos_bias_v")):
        return "norm"
    if "enc.blocks." in name and (name.endswith(".conv.pointwise1.weight") or name.endswith(".conv.pointwise2.weight")):
        return "convpw"
    if ".conv." in name and name.endswith(".weight"):
        return "conv"
    return "linear"


def ggml_type(name, dtype):
    b = bucket(name)
    if dtype == "F32" or b in ("norm", "conv"):
        return gw.GGML_F32
    if b == "convpw" or dtype == "F16":
        return gw.GGML_F16
    return gw.GGML_Q8_0


def stored_values(name, a, dtype):
    """What a loader reads back from the file, as float64."""
    t = ggml_type(name, dtype)
    a32 = np.asarray(a, dtype=np.float32)
    if t == gw.GGML_F32:
        return a32.astype(np.float64)
    if t == gw.GGML_F16:
        return a32.astype(np.float16).astype(np.float64)
    return gw.dequantize_q8_0(gw.quantize_q8_0(a32), a32.size).reshape(a32.shape).astype(np.float64)


def round_f16(tens):
    """Every tensor F16-bucketed in the F16 file rounded to binary16, the
    others to binary32, so the F32 and F16 files hold the same numbers."""
    out = []
    for n, a in tens:
        a = np.asarray(a, dtype=np.float32)
        if bucket(n) in ("linear", "convpw"):
            a = a.astype(np.float16).astype(np.float32)
        out.append((n, a.astype(np.float64)))
    return out


def add_metadata(w, cfg, file_type):
    w.add_string("general.architecture", "sortformer")
    w.add_string("general.name", "Streaming Sortformer Diarizer 4spk v2.1 (random-weight reference)")
    w.add_string("general.basename", "sortformer")
    w.add_string("general.version", "v2.1")
    w.add_string("general.size_label", cfg["size_label"])
    w.add_string("general.author", "transcribe tools/ref/sortformer.py")
    w.add_string("general.organization", "transcribe")
    w.add_string("general.license", "cc0-1.0")
    w.add_string("general.license.name", "CC0 1.0")
    w.add_string("general.license.link", "https://creativecommons.org/publicdomain/zero/1.0/")
    w.add_string("general.repo_url", "https://example.invalid/transcribe/tools/ref/sortformer.py")
    w.add_string("general.description", "Random-weight streaming Sortformer with the published schema.")
    w.add_uint32("general.file_type", file_type)
    w.add_array("general.languages", ["en"])
    w.add_string("stt.variant", "diar_streaming_sortformer_4spk-v2.1")
    f = "stt.frontend."
    w.add_uint32(f + "sample_rate", SR)
    w.add_uint32(f + "num_mels", cfg["n_mels"])
    w.add_uint32(f + "n_fft", 512)
    w.add_uint32(f + "hop_length", HOP)
    w.add_uint32(f + "win_length", 400)
    w.add_string(f + "window", "hann")
    w.add_string(f + "normalize", "none")
    w.add_float32(f + "pre_emphasis", 0.97)
    w.add_float32(f + "dither", 1e-5)
    c = "stt.capability."
    w.add_bool(c + "streaming", True)
    w.add_bool(c + "speaker_diarization", True)
    w.add_bool(c + "lang_detect", False)
    w.add_bool(c + "translate", False)
    w.add_bool(c + "timestamps", False)
    a = "stt.sortformer."
    w.add_uint32(a + "max_speakers", cfg["S"])
    w.add_uint32(a + "frame_hop", HOP * SUB)
    w.add_uint32(a + "encoder.n_layers", cfg["enc_layers"])
    w.add_uint32(a + "encoder.d_model", cfg["d"])
    w.add_uint32(a + "encoder.n_heads", cfg["heads"])
    w.add_uint32(a + "encoder.d_ff", cfg["d_ff"])
    w.add_uint32(a + "encoder.conv_kernel", cfg["kernel"])
    w.add_uint32(a + "encoder.subsampling_factor", SUB)
    w.add_uint32(a + "encoder.subsampling_channels", cfg["sub_ch"])
    w.add_uint32(a + "encoder.feat_in", cfg["n_mels"])
    w.add_uint32(a + "encoder.pos_emb_max_len", 5000)
    w.add_string(a + "encoder.conv_norm_type", "batch_norm")
    w.add_uint32(a + "transformer.n_layers", cfg["tf_layers"])
    w.add_uint32(a + "transformer.d_model", cfg["D"])
    w.add_uint32(a + "transformer.n_heads", cfg["tf_heads"])
    w.add_uint32(a + "transformer.d_ff", cfg["Fd"])
    w.add_string(a + "transformer.activation", "relu")
    w.add_bool(a + "transformer.pre_ln", False)
    w.add_uint32(a + "stream.chunk_len", cfg["chunk"])
    w.add_uint32(a + "stream.spkcache_len", cfg["cache"])
    w.add_uint32(a + "stream.fifo_len", cfg["fifo"])
    w.add_uint32(a + "stream.spkcache_update_period", cfg["update"])


def write_gguf(path, cfg, tens, dtype):
    w = gw.GGUFWriter()
    add_metadata(w, cfg, {"F32": 0, "F16": 1, "Q8_0": 7}[dtype])
    for n, a in tens:
        w.add_tensor(n, np.asarray(a, dtype=np.float32), ggml_type(n, dtype))
    w.write(path)
    # read back: count, types, shapes, values
    kv, ts = gw.read_gguf(path)
    assert kv["general.architecture"] == (gw.STRING, "sortformer")
    want = 12 + 39 * cfg["enc_layers"] + 16 * cfg["tf_layers"] + 8
    assert len(ts) == len(tens) == want, (len(ts), want)
    assert list(ts) == [n for n, _ in tens]
    for n, a in tens:
        t, ne, b = ts[n]
        assert t == ggml_type(n, dtype), n
        assert ne == list(reversed(a.shape)), (n, ne, a.shape)
        assert np.array_equal(np.asarray(b, np.float64).reshape(a.shape), stored_values(n, a, dtype)), n
    return os.path.getsize(path)


# ----------------------------------------------------------------------------
# Weight design
# ----------------------------------------------------------------------------

def target_pattern(n_frames):
    """Designed activity (seconds) per speaker column: spk1 = the mix's
    speaker A, spk2 = speaker B, spk3 a stretch overlapping both, spk4 short."""
    spans = [[(0.0, 3.0), (7.0, 10.5)], [(3.5, 6.5), (9.0, 12.0)], [(5.0, 7.6)], [(10.8, 11.6)]]
    y = -np.ones((n_frames, 4))
    for s, sp in enumerate(spans):
        for a, b in sp:
            y[int(round(a / 0.08)):int(round(b / 0.08)), s] = 1.0
    return y


def fit_head(model, Hs, y, gain, ridge=1e-3):
    """Least-squares single_spk_head so that logits ~ gain*y on the features."""
    Hm = np.concatenate([Hs, np.ones((Hs.shape[0], 1))], axis=1)
    A = Hm.T @ Hm + ridge * np.eye(Hm.shape[1])
    sol = np.linalg.solve(A, Hm.T @ (gain * y))
    model.W["diar.single_spk_head.weight"] = torch.as_tensor(sol[:-1].T.copy()).to(model.dtype)
    model.W["diar.single_spk_head.bias"] = torch.as_tensor(sol[-1].copy()).to(model.dtype)


def fit_head_band(model, Hs, y, lo, hi, ridge=1e-3, rounds=30):
    """single_spk_head so that the logits fall in [lo, hi] where y = +1 and in
    [-hi, -lo] where y = -1 (least squares of the distance to the band, by
    alternating projection): the probabilities keep clear of 0.5 without
    saturating, so float32 keeps the frames' compression scores apart."""
    Hm = np.concatenate([Hs, np.ones((Hs.shape[0], 1))], axis=1)
    A = Hm.T @ Hm + ridge * np.eye(Hm.shape[1])
    # frames with no speaker: deeper below 0.5, so that their probability sums
    # stay clear under the 0.2 silence threshold (sec. 6.3) and the silence
    # profile is exercised
    quiet = (y < 0).all(axis=1, keepdims=True)
    lo = np.where(quiet, hi + 0.5, lo) * np.ones_like(y)
    hi = np.where(quiet, hi + 2.0, hi) * np.ones_like(y)
    t = 0.5 * (lo + hi) * y
    for _ in range(rounds):
        sol = np.linalg.solve(A, Hm.T @ t)
        z = Hm @ sol
        t = np.where(y > 0, np.clip(z, lo, hi), np.clip(z, -hi, -lo))
    model.W["diar.single_spk_head.weight"] = torch.as_tensor(sol[:-1].T.copy()).to(model.dtype)
    model.W["diar.single_spk_head.bias"] = torch.as_tensor(sol[-1].copy()).to(model.dtype)


def stream_hidden(model, mel, sp):
    """Per output frame, the hidden features [n_out, D] the head saw in the
    streaming run (chunk rows only)."""
    dump = []
    run_streaming(model, mel, sp, chunk_dump=dump)
    rows = []
    L_feat = mel.shape[1]
    stt = end = 0
    i = 0
    while end < L_feat:
        lo_off = min(sp.lc * SUB, stt)
        end = min(stt + sp.chunk * SUB, L_feat)
        ro_off = min(sp.rc * SUB, L_feat - end)
        lcf = (lo_off + SUB // 2) // SUB
        rcf = (ro_off + SUB - 1) // SUB
        dd = dump[i]
        T = dd["E"].shape[0]
        start = dd["X"].shape[0] - T
        rows.append(dd["r"]["hidden"][start + lcf:start + T - rcf])
        stt = end
        i += 1
    return np.concatenate(rows)[:-(-L_feat // SUB)]


def run_margin(p, st):
    """A run's distance from a decision flip, in logit units: 4 |p - 0.5|
    (the sigmoid's slope at 0.5 is 1/4) and the smallest compression score gap
    (the score moves by at most about one unit per unit of logit); -1 when a
    float32 sigmoid saturates (exact ties)."""
    if st["sat"]:
        return -1.0
    g = min([v for _, v in st["gaps"]] + [math.inf])
    return min(4.0 * margins(p), g)


def all_margins(m, cfg, mels):
    """Smallest run_margin over every golden run (each preset on clip A,
    DEFAULT and VERY_HIGH_LATENCY on clip B, Q8_0 weights at DEFAULT)."""
    worst = math.inf
    for mel in mels:
        for preset in PRESETS:
            p, st = run_streaming(m, mel, StreamParams(cfg, preset))
            worst = min(worst, run_margin(p, st))
    mq = Sortformer(cfg)
    mq.load([(n, stored_values(n, a, "Q8_0")) for n, a in m.tensors()])
    p, st = run_streaming(mq, mels[0], StreamParams(cfg))
    return min(worst, run_margin(p, st))


def design(cfg, mel_a, seed, mels=None, iters=3, gain=None, search=True):
    """Random weights (F16-representable), then single_spk_head fitted (ridge)
    to the designed activity on the features of the streaming run (to the
    logit band cfg["band"] when given, else to +-gain), then a small
    coordinate search over the head biases for the largest smallest
    run_margin over all golden runs."""
    gain = cfg.get("gain", 5.0) if gain is None else gain
    g = torch.Generator().manual_seed(seed)
    m = Sortformer(cfg)
    m.randomize(g)
    m.enc.calibrate_(torch.as_tensor(mel_a))
    # round to file-representable values now, then fit the head on top
    m.load(round_f16(m.tensors()))
    n_out = -(-mel_a.shape[1] // SUB)
    y = target_pattern(n_out)
    # first fit on the offline features, then refit on streaming features
    Hs = m.graph_b(m.graph_a(mel_a))["hidden"].cpu().numpy()
    band = cfg.get("band")

    def fit(Hs):
        if band:
            fit_head_band(m, Hs, y, band[0], band[1])
        else:
            fit_head(m, Hs, y, gain)
    fit(Hs)
    sp = StreamParams(cfg)
    for _ in range(iters):
        Hs = stream_hidden(m, mel_a, sp)
        fit(Hs)
    m.load(round_f16(m.tensors()))
    if not search:
        return m
    mels = mels or [mel_a]
    best = all_margins(m, cfg, mels)
    step = (band[1] if band else gain) / 40.0
    for _ in range(2):
        for s in range(cfg["S"]):
            b0 = m.W["diar.single_spk_head.bias"].clone()
            for k in range(-5, 6):
                if k == 0:
                    continue
                b = b0.clone()
                b[s] += k * step
                old = m.W["diar.single_spk_head.bias"]
                m.W["diar.single_spk_head.bias"] = b
                v = all_margins(m, cfg, mels)
                if v > best:
                    best = v
                else:
                    m.W["diar.single_spk_head.bias"] = old
    return m


# ----------------------------------------------------------------------------
# Goldens
# ----------------------------------------------------------------------------

def save_npy(path, a):
    np.save(path, np.ascontiguousarray(np.asarray(a, dtype=np.float32)))


def margins(probs):
    return float(np.abs(probs - 0.5).min())


def gap_report(probs, st):
    gaps = {}
    for kind, v in st["gaps"]:
        gaps[kind] = min(gaps.get(kind, math.inf), v)
    lg = np.log(probs / (1 - probs))
    return ("max |logit| %.2f, float32-saturated cache probabilities %d, smallest compression score gap: "
            "top-k %.4g, final pick %.4g, |score| %.4g" % (
                float(np.abs(lg).max()), st["sat"], gaps.get("topk", math.inf), gaps.get("pick", math.inf),
                gaps.get("zero", math.inf)))


def fmt_segments(rows):
    return "".join("%d %d %d\n" % r for r in rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtypes", default="F32,F16,Q8_0")
    ap.add_argument("--samples", default=os.environ.get("TR_SHARED_DIR", os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared")) + "/samples")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = dict(CONFIGS[args.config])
    if args.seed is not None:
        cfg["seed"] = args.seed
    os.makedirs(args.out, exist_ok=True)
    wav = os.path.join(args.out, "mix.wav")
    if not os.path.exists(wav):
        shutil.copyfile(os.path.join(args.samples, "sortformer-2spk-mix.wav"), wav)
    x_a, sr = mel_ref.read_wav(wav)
    assert sr == SR
    N_B = 40077  # clip B = first 40 077 samples (n % 160 != 0: last mel frame zeroed)
    x_b = x_a[:N_B]
    mel_a = sortformer_mel(x_a, cfg["n_mels"])
    mel_b = sortformer_mel(x_b, cfg["n_mels"])
    dtypes = args.dtypes.split(",")

    model = design(cfg, mel_a, cfg["seed"], mels=[mel_a, mel_b], search=args.config != "real")
    tens = model.tensors()
    stem = "sortformer-%s-ref" % args.config
    for dt in dtypes:
        size = write_gguf(os.path.join(args.out, "%s-%s.gguf" % (stem, dt)), cfg, tens, dt)
        print("wrote %s-%s.gguf (%d bytes)" % (stem, dt, size))

    report = []

    def golden_runs(m, tag, full):
        res = {}
        for preset in PRESETS:
            if not full and preset != "DEFAULT":
                continue
            sp = StreamParams(cfg, preset)
            log = []
            probs, st = run_streaming(m, mel_a, sp, log)
            res[preset] = (probs, st, log)
        return res

    if args.config == "real":
        sp = StreamParams(cfg)
        probs, st = run_streaming(model, mel_a, sp)
        print("real: %d frames, min |p-0.5| %.3g, segments %s" % (probs.shape[0], margins(probs), segments(probs)))
        return

    out = args.out
    # --- front end + single-window intermediates (clip B) -----------------
    save_npy(os.path.join(out, "mix.mel.npy"), mel_a.T)  # [T_mel, n_mels]
    save_npy(os.path.join(out, "b.mel.npy"), mel_b.T)
    E_b = model.graph_a(mel_b)
    r_b = model.graph_b(E_b)
    save_npy(os.path.join(out, "b.pre.npy"), E_b)
    save_npy(os.path.join(out, "b.conformer.npy"), r_b["conformer"])
    save_npy(os.path.join(out, "b.proj.npy"), r_b["proj"])
    save_npy(os.path.join(out, "b.transformer.npy"), r_b["transformer"])
    save_npy(os.path.join(out, "b.probs.npy"), r_b["probs"])
    # clip B at VERY_HIGH_LATENCY is one window [0, T_mel): identical probs
    pb, _ = run_streaming(model, mel_b, StreamParams(cfg, "VERY_HIGH_LATENCY"))
    assert np.allclose(pb, r_b["probs"].numpy(), atol=1e-12)
    with open(os.path.join(out, "b.segments.vhl.txt"), "w") as f:
        f.write(fmt_segments(segments(pb)))
    report.append("clip B (%d samples): T_mel %d, T_diar %d, min |p-0.5| %.4f" % (
        N_B, mel_b.shape[1], E_b.shape[0], margins(pb)))
    pbd, _ = run_streaming(model, mel_b, StreamParams(cfg))
    save_npy(os.path.join(out, "b.probs.default.npy"), pbd)
    with open(os.path.join(out, "b.segments.default.txt"), "w") as f:
        f.write(fmt_segments(segments(pbd)))

    # --- streaming goldens on clip A --------------------------------------
    runs = golden_runs(model, "f64", True)
    dump = []
    run_streaming(model, mel_a, StreamParams(cfg), chunk_dump=dump)
    save_npy(os.path.join(out, "mix.chunk0.pre.npy"), dump[0]["E"])
    save_npy(os.path.join(out, "mix.chunk1.probs_all.npy"), dump[1]["r"]["probs"])
    save_npy(os.path.join(out, "mix.chunk2.cat.npy"), dump[2]["X"])  # cache ++ fifo ++ E of chunk 2
    for preset, (probs, st, log) in runs.items():
        tag = preset.lower()
        save_npy(os.path.join(out, "mix.probs.%s.npy" % tag), probs)
        with open(os.path.join(out, "mix.segments.%s.txt" % tag), "w") as f:
            f.write(fmt_segments(segments(probs)))
        with open(os.path.join(out, "mix.trace.%s.txt" % tag), "w") as f:
            f.write("".join(line + "\n" for line in log))
        sil = np.array(st["sil_sums"]) if st["sil_sums"] else np.array([1.0])
        report.append("%s: %d frames, %d chunks, %d compressions, min |p-0.5| %.4f, min |silsum-0.2| %.4f, "
                      "%d segments, %s" % (
                          preset, probs.shape[0], sum(1 for ln in log if ln.startswith("chunk")),
                          st["n_compress"], margins(probs), float(np.abs(sil - 0.2).min()),
                          len(segments(probs)), gap_report(probs, st)))

    # --- float32 re-run and Q8_0 goldens ----------------------------------
    m32 = Sortformer(cfg, torch.float32)
    m32.load(tens)
    E32 = m32.graph_a(mel_b.astype(np.float32))
    r32 = m32.graph_b(E32)
    errs = ["pre %.2e" % (E32.double() - E_b).abs().max()]
    for k in ("conformer", "proj", "transformer", "probs"):
        errs.append("%s %.2e" % (k, (r32[k].double() - r_b[k]).abs().max()))
    report.append("float32 torch vs float64, clip B single window, max abs: " + ", ".join(errs))
    for preset, (probs, st, log) in runs.items():
        log32 = []
        p32, _ = run_streaming(m32, mel_a.astype(np.float32).astype(np.float64), StreamParams(cfg, preset), log32)
        same = log32 == log and segments(p32) == segments(probs)
        report.append("float32 rerun %s: max |dp| %.2e, trace+segments identical: %s" % (
            preset, np.abs(p32 - probs).max(), same))
        assert same, preset
    for amp in (1e-4, 1e-3):
        ok = 0
        for trial in range(5):
            for preset, (probs, st, log) in runs.items():
                log2 = []
                p2, _ = run_streaming(model, mel_a, StreamParams(cfg, preset), log2,
                                      noise=(amp, np.random.default_rng(100 + trial)))
                ok += int(log2 == log and segments(p2) == segments(probs))
        report.append("logit noise +-%g before the state update: %d/%d runs keep trace+segments" % (
            amp, ok, 5 * len(runs)))
    if "Q8_0" in dtypes:
        mq = Sortformer(cfg)
        mq.load([(n, stored_values(n, a, "Q8_0")) for n, a in tens])
        log = []
        pq, _ = run_streaming(mq, mel_a, StreamParams(cfg), log)
        save_npy(os.path.join(out, "mix.probs.default.q8_0.npy"), pq)
        with open(os.path.join(out, "mix.segments.default.q8_0.txt"), "w") as f:
            f.write(fmt_segments(segments(pq)))
        with open(os.path.join(out, "mix.trace.default.q8_0.txt"), "w") as f:
            f.write("".join(line + "\n" for line in log))
        pq, stq = run_streaming(mq, mel_a, StreamParams(cfg))
        report.append("Q8_0 DEFAULT: max |dp| vs F32 %.3g, min |p-0.5| %.4f, %d segments, %s" % (
            np.abs(pq - runs["DEFAULT"][0]).max(), margins(pq), len(segments(pq)), gap_report(pq, stq)))
    with open(os.path.join(out, "margins.txt"), "w") as f:
        f.write("".join(line + "\n" for line in report))
    print("\n".join(report))


if __name__ == "__main__":
    main()
