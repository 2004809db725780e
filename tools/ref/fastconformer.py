#!/usr/bin/python3
"""Independent PyTorch reference of the NeMo FastConformer encoder, written
from docs/formats/parakeet.md section 7 (and the tensor catalog of sections
4.1/4.2), not from the C sources. Shared by the Parakeet and Canary
references.

Interface
---------
    cfg = FCConfig(n_layers=2, d_model=64, n_heads=4, d_ff=256, conv_kernel=9,
                   sub_channels=16, n_mels=128, use_bias=False, xscaling=False,
                   att_left=-1, att_right=-1, conv_pad_left=-1, conv_pad_right=-1,
                   conv_layer_norm=False)
    enc = FastConformerEncoder(cfg).double()      # or .float()
    enc.randomize_(torch.Generator().manual_seed(1))
    pre, out = enc(mel)          # mel: tensor [n_mels, T_mel] (any float dtype)
    #   pre: [T_enc, d] pre-encode output after the optional x-scaling (sec. 7.3)
    #   out: [T_enc, d] encoder output (last block's norm_out, sec. 7.7)
    layers = []; enc(mel, layers_out=layers)   # also collects each block's output
    tens = enc.gguf_tensors()    # OrderedDict GGUF name -> numpy array
    enc.load_gguf_tensors(tens)  # inverse (e.g. to load F16-rounded weights)

Config semantics:
  * use_bias: the 11 per-block biases of sec. 4.2 exist (else they are absent
    and act as zero).
  * xscaling: multiply the pre-encode output by sqrt(d_model) (sec. 7.3).
  * att_left/att_right: both >= 0 selects local attention (sec. 7.6, style
    "regular") with the short W_L+W_R+1 positional table; otherwise full
    attention with the 2T-1 table (sec. 7.4).
  * conv_pad_left/right: depthwise padding; used verbatim when both >= 0, else
    (k-1)/2 on each side (sec. 7.5).
  * conv_layer_norm: conv-module norm is a LayerNorm over channels using
    conv.bn.weight/bias (no running stats) instead of BatchNorm.

gguf_tensors() returns arrays in PyTorch shape (the GGUF writer reverses the
shape into ggml ne) in the module's float dtype, named per sec. 4.1/4.2:
"enc.pre_encode.*" then "enc.blocks.{i}.*"; biases only with use_bias; BN
running stats only with BatchNorm. The BatchNorm here is evaluated unfolded,
(u - mean) / sqrt(var + 1e-5) * gamma + beta, so a C implementation that
folds it at load is checked against the plain definition.

Only the offline (non-causal) pre-encode is implemented (the causal variant
of sec. 7.1 belongs to the chunked_limited streaming models).
"""

import math
from collections import OrderedDict
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

LN_EPS = 1e-5
BN_EPS = 1e-5


@dataclass
class FCConfig:
    n_layers: int
    d_model: int
    n_heads: int
    d_ff: int
    conv_kernel: int
    sub_channels: int
    n_mels: int
    use_bias: bool = False
    xscaling: bool = False
    att_left: int = -1
    att_right: int = -1
    conv_pad_left: int = -1
    conv_pad_right: int = -1
    conv_layer_norm: bool = False
    # dw_striding subsampling factor: a power of two, log2(factor) stride-2
    # stages (sec. 7.1 describes factor 8, the published models; NeMo's
    # ConvSubsampling builds 2, 4, 8 and 16 the same way: conv0, then a
    # depthwise + pointwise pair per further stage)
    sub_factor: int = 8
    # buffered streaming (chunked_limited_with_rc, docs/formats/parakeet.md sec. 3.3
    # menus): (left, chunk, right) encoder frames; () = no mask (offline)
    chunk_rc: tuple = ()

    @property
    def local_attention(self):
        return self.att_left >= 0 and self.att_right >= 0

    @property
    def conv_pads(self):
        if self.conv_pad_left >= 0 and self.conv_pad_right >= 0:
            return self.conv_pad_left, self.conv_pad_right
        p = (self.conv_kernel - 1) // 2
        return p, p

    @property
    def sub_stages(self):
        s = int(round(math.log2(self.sub_factor)))
        assert 1 <= s <= 4 and (1 << s) == self.sub_factor, self.sub_factor
        return s

    @property
    def f_sub(self):
        """F' = n_mels after sub_stages ceil-halvings (sec. 7.1: three)."""
        f = self.n_mels
        for _ in range(self.sub_stages):
            f = (f - 1) // 2 + 1
        return f


def t_enc_of(t_mel, sub_factor=8):
    """Encoder frames for T_mel mel frames (one ceil-halving per stride-2
    stage, sec. 7.1)."""
    t = t_mel
    for _ in range(int(round(math.log2(sub_factor)))):
        t = (t - 1) // 2 + 1
    return t


def pre_encode_indices(sub_stages):
    """NeMo Sequential indices of the convs: 0 (full conv, stage 1), then per
    further stage s the depthwise 3s-4 and the pointwise 3s-3 (the ReLUs sit
    at the indices between and hold no tensors): 0, 2, 3, 5, 6 at factor 8."""
    idx = [0]
    for s in range(2, sub_stages + 1):
        idx += [3 * s - 4, 3 * s - 3]
    return idx


def rel_pos_table(positions, d, dtype):
    """Sinusoidal rows for the given relative positions (sec. 7.4):
    pe[i][2j] = sin(pos_i * div_j), pe[i][2j+1] = cos(pos_i * div_j),
    div_j = exp(-(2j) ln(10000) / d). Computed in float64, then cast."""
    pos = torch.as_tensor(positions, dtype=torch.float64)[:, None]
    j = torch.arange(d // 2, dtype=torch.float64)
    div = torch.exp(-(2.0 * j) * math.log(10000.0) / d)[None, :]
    pe = torch.zeros(pos.shape[0], d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.to(dtype)


def rel_shift(bd):
    """The pad/reshape "rel_shift" of sec. 7.5 on [..., T, 2T-1]: prepend a zero
    column, view as [2T, T], drop the first row, view as [T, 2T-1], keep the
    first T columns. Result[a][b] = bd[a][b - a + T - 1]."""
    *lead, t, p = bd.shape
    z = torch.zeros(*lead, t, 1, dtype=bd.dtype)
    x = torch.cat([z, bd], dim=-1).reshape(*lead, p + 1, t)
    x = x[..., 1:, :].reshape(*lead, t, p)
    return x[..., :t]


class PreEncode(nn.Module):
    """dw_striding subsampling, factor 2^sub_stages (sec. 7.1: 8)."""

    def __init__(self, cfg):
        super().__init__()
        c = cfg.sub_channels
        # indices follow NeMo's Sequential: 1, 4, 7, ... are ReLUs (no tensors)
        self.indices = pre_encode_indices(cfg.sub_stages)
        self.conv0 = nn.Conv2d(1, c, 3, stride=2, padding=1)
        for s in range(2, cfg.sub_stages + 1):
            setattr(self, "conv%d" % (3 * s - 4), nn.Conv2d(c, c, 3, stride=2, padding=1, groups=c))
            setattr(self, "conv%d" % (3 * s - 3), nn.Conv2d(c, c, 1))
        self.stages = cfg.sub_stages
        self.out = nn.Linear(c * cfg.f_sub, cfg.d_model)

    def forward(self, mel):
        x = mel.t()[None, None]  # [1, 1, T (height), F (width)]
        x = F.relu(self.conv0(x))
        for s in range(2, self.stages + 1):
            dw = getattr(self, "conv%d" % (3 * s - 4))
            pw = getattr(self, "conv%d" % (3 * s - 3))
            x = F.relu(pw(dw(x)))
        _, c, t, f = x.shape
        # feature index c*F' + f: channel-major, frequency fastest
        flat = x[0].permute(1, 0, 2).reshape(t, c * f)
        return self.out(flat)


class FeedForward(nn.Module):
    def __init__(self, d, d_ff, bias):
        super().__init__()
        self.linear1 = nn.Linear(d, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d, bias=bias)

    def forward(self, y):
        return self.linear2(F.silu(self.linear1(y)))


class RelPosMHSA(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, h = cfg.d_model, cfg.n_heads
        assert d % h == 0
        self.cfg = cfg
        self.h, self.dh = h, d // h
        b = cfg.use_bias
        self.linear_q = nn.Linear(d, d, bias=b)
        self.linear_k = nn.Linear(d, d, bias=b)
        self.linear_v = nn.Linear(d, d, bias=b)
        self.linear_out = nn.Linear(d, d, bias=b)
        self.linear_pos = nn.Linear(d, d, bias=False)
        self.pos_bias_u = nn.Parameter(torch.zeros(h, self.dh))
        self.pos_bias_v = nn.Parameter(torch.zeros(h, self.dh))

    def forward(self, y, pe):
        t = y.shape[0]
        h, dh = self.h, self.dh
        q = self.linear_q(y).reshape(t, h, dh).transpose(0, 1)  # [H, T, dh]
        k = self.linear_k(y).reshape(t, h, dh).transpose(0, 1)
        v = self.linear_v(y).reshape(t, h, dh).transpose(0, 1)
        p = self.linear_pos(pe).reshape(-1, h, dh).transpose(0, 1)  # [H, P, dh]
        qu = q + self.pos_bias_u[:, None, :]
        qv = q + self.pos_bias_v[:, None, :]
        ac = qu @ k.transpose(1, 2)  # [H, T, T]
        bdr = qv @ p.transpose(1, 2)  # [H, T, P]
        if self.cfg.local_attention:
            wl, wr = self.cfg.att_left, self.cfg.att_right
            # sec. 7.6: widen the [T, W_L+W_R+1] matrix to the [T, 2T-1] layout
            # with -inf columns (crop when the counts are negative)
            front, back = t - 1 - wl, t - 1 - wr
            if front < 0:
                bdr = bdr[..., -front:]
            if back < 0:
                bdr = bdr[..., : bdr.shape[-1] + back]
            ninf = float("-inf")
            bdr = torch.cat([torch.full((h, t, max(front, 0)), ninf, dtype=bdr.dtype), bdr,
                             torch.full((h, t, max(back, 0)), ninf, dtype=bdr.dtype)], dim=-1)
            assert bdr.shape[-1] == 2 * t - 1
        bd = rel_shift(bdr)
        s = (ac + bd) / math.sqrt(dh)
        if self.cfg.local_attention:
            a = torch.arange(t)[:, None]
            b = torch.arange(t)[None, :]
            visible = (b >= a - self.cfg.att_left) & (b <= a + self.cfg.att_right)
            s = s.masked_fill(~visible, float("-inf"))
        if self.cfg.chunk_rc:
            # frame a in chunk c = a // C sees [c*C - L, c*C + C - 1 + R]
            lft, ch, rgt = self.cfg.chunk_rc
            a = torch.arange(t)[:, None]
            b = torch.arange(t)[None, :]
            c0 = (a // ch) * ch
            visible = (b >= c0 - lft) & (b <= c0 + ch - 1 + rgt)
            s = s.masked_fill(~visible, float("-inf"))
        att = torch.softmax(s, dim=-1)
        o = (att @ v).transpose(0, 1).reshape(t, h * dh)
        return self.linear_out(o)


class ConvModule(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, k, b = cfg.d_model, cfg.conv_kernel, cfg.use_bias
        self.cfg = cfg
        self.pointwise1 = nn.Conv1d(d, 2 * d, 1, bias=b)
        self.depthwise = nn.Conv1d(d, d, k, groups=d, bias=b)
        self.bn_weight = nn.Parameter(torch.ones(d))
        self.bn_bias = nn.Parameter(torch.zeros(d))
        if not cfg.conv_layer_norm:
            self.register_buffer("bn_mean", torch.zeros(d))
            self.register_buffer("bn_var", torch.ones(d))
        self.pointwise2 = nn.Conv1d(d, d, 1, bias=b)

    def forward(self, y):
        d = self.cfg.d_model
        z = self.pointwise1(y.t()[None])[0]  # [2d, T]
        g = z[:d] * torch.sigmoid(z[d:])  # GLU: first half gated by the second
        pl, pr = self.cfg.conv_pads
        u = self.depthwise(F.pad(g, (pl, pr))[None])[0]  # [d, T], zeros outside
        if self.cfg.conv_layer_norm:
            u = F.layer_norm(u.t(), (d,), self.bn_weight, self.bn_bias, LN_EPS).t()
        else:
            u = (u - self.bn_mean[:, None]) / torch.sqrt(self.bn_var[:, None] + BN_EPS)
            u = u * self.bn_weight[:, None] + self.bn_bias[:, None]
        u = F.silu(u)
        return self.pointwise2(u[None])[0].t()  # [T, d]


class ConformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg.d_model
        self.norm_ff1 = nn.LayerNorm(d, eps=LN_EPS)
        self.ff1 = FeedForward(d, cfg.d_ff, cfg.use_bias)
        self.norm_attn = nn.LayerNorm(d, eps=LN_EPS)
        self.attn = RelPosMHSA(cfg)
        self.norm_conv = nn.LayerNorm(d, eps=LN_EPS)
        self.conv = ConvModule(cfg)
        self.norm_ff2 = nn.LayerNorm(d, eps=LN_EPS)
        self.ff2 = FeedForward(d, cfg.d_ff, cfg.use_bias)
        self.norm_out = nn.LayerNorm(d, eps=LN_EPS)

    def forward(self, x, pe):
        x = x + 0.5 * self.ff1(self.norm_ff1(x))
        x = x + self.attn(self.norm_attn(x), pe)
        x = x + self.conv(self.norm_conv(x))
        x = x + 0.5 * self.ff2(self.norm_ff2(x))
        return self.norm_out(x)


# PyTorch attribute path -> GGUF suffix where they differ (sec. 4.2)
_BLOCK_RENAMES = {
    "conv.bn_weight": "conv.bn.weight",
    "conv.bn_bias": "conv.bn.bias",
    "conv.bn_mean": "conv.bn.running_mean",
    "conv.bn_var": "conv.bn.running_var",
}


class FastConformerEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.pre_encode = PreEncode(cfg)
        self.blocks = nn.ModuleList(ConformerBlock(cfg) for _ in range(cfg.n_layers))

    @property
    def dtype(self):
        return self.pre_encode.out.weight.dtype

    def pos_table(self, t):
        c = self.cfg
        if c.local_attention:
            positions = [c.att_left - i for i in range(c.att_left + c.att_right + 1)]
        else:
            positions = [(t - 1) - i for i in range(2 * t - 1)]
        return rel_pos_table(positions, c.d_model, self.dtype)

    @torch.no_grad()
    def forward(self, mel, layers_out=None):
        mel = torch.as_tensor(mel).to(self.dtype)
        assert mel.dim() == 2 and mel.shape[0] == self.cfg.n_mels
        x = self.pre_encode(mel)
        if self.cfg.xscaling:
            x = x * math.sqrt(self.cfg.d_model)
        pre = x
        pe = self.pos_table(x.shape[0])
        for blk in self.blocks:
            x = blk(x, pe)
            if layers_out is not None:
                layers_out.append(x)
        return pre, x

    # --- weights -----------------------------------------------------------
    def _named(self):
        """(GGUF name, tensor) in file order (sec. 4.1 then 4.2)."""
        out = []
        pe = self.pre_encode
        for idx in pe.indices:
            conv = getattr(pe, "conv%d" % idx)
            out.append(("enc.pre_encode.conv.%d.weight" % idx, conv.weight))
            out.append(("enc.pre_encode.conv.%d.bias" % idx, conv.bias))
        out.append(("enc.pre_encode.out.weight", pe.out.weight))
        out.append(("enc.pre_encode.out.bias", pe.out.bias))
        for i, blk in enumerate(self.blocks):
            tensors = list(blk.named_parameters()) + list(blk.named_buffers())
            order = [
                "norm_ff1.weight", "norm_ff1.bias", "ff1.linear1.weight", "ff1.linear1.bias",
                "ff1.linear2.weight", "ff1.linear2.bias", "norm_attn.weight", "norm_attn.bias",
                "attn.linear_q.weight", "attn.linear_q.bias", "attn.linear_k.weight", "attn.linear_k.bias",
                "attn.linear_v.weight", "attn.linear_v.bias", "attn.linear_out.weight", "attn.linear_out.bias",
                "attn.linear_pos.weight", "attn.pos_bias_u", "attn.pos_bias_v", "norm_conv.weight",
                "norm_conv.bias", "conv.pointwise1.weight", "conv.pointwise1.bias", "conv.depthwise.weight",
                "conv.depthwise.bias", "conv.pointwise2.weight", "conv.pointwise2.bias", "conv.bn_weight",
                "conv.bn_bias", "conv.bn_mean", "conv.bn_var", "norm_ff2.weight", "norm_ff2.bias",
                "ff2.linear1.weight", "ff2.linear1.bias", "ff2.linear2.weight", "ff2.linear2.bias",
                "norm_out.weight", "norm_out.bias",
            ]
            by_name = dict(tensors)
            assert set(by_name) <= set(order), set(by_name) - set(order)
            for n in order:
                if n in by_name:
                    out.append(("enc.blocks.%d.%s" % (i, _BLOCK_RENAMES.get(n, n)), by_name[n]))
        return out

    def gguf_tensors(self):
        return OrderedDict((n, t.detach().cpu().numpy().copy()) for n, t in self._named())

    @torch.no_grad()
    def load_gguf_tensors(self, tens):
        for n, t in self._named():
            src = torch.as_tensor(tens[n])
            assert tuple(src.shape) == tuple(t.shape), (n, src.shape, t.shape)
            t.copy_(src.to(t.dtype))

    @torch.no_grad()
    def calibrate_(self, mel):
        """Data-dependent init (after randomize_): shift and scale
        enc.pre_encode.out so that, on this mel, the pre-encode output (after
        x-scaling) has zero mean per channel and unit RMS. A random ReLU stack
        otherwise yields a large frame-independent component, and every frame's
        encoder output would look alike."""
        out = self.pre_encode.out
        pre, _ = self.forward(mel)
        k = math.sqrt(self.cfg.d_model) if self.cfg.xscaling else 1.0
        mean = pre.mean(dim=0)
        rms = (pre - mean).pow(2).mean().sqrt()
        out.bias.sub_(mean / k)
        out.weight.div_(rms)
        out.bias.div_(rms)
        return self

    @torch.no_grad()
    def randomize_(self, generator):
        """Random weights with sane scales, drawn in float64 in file order (so
        the values do not depend on the module dtype): weights ~ N(0, 1/fan_in),
        LayerNorm gamma 1 + N(0, 0.1) and beta N(0, 0.1), biases N(0, 0.1),
        BN running mean N(0, 0.3) and var exp(N(0, 0.4)) (non-trivial fold),
        pos_bias_u/v N(0, 0.5). q/k are 1.5x wider so attention is not flat."""
        c = self.cfg

        def rn(shape, std):
            return torch.randn(*shape, generator=generator, dtype=torch.float64) * std

        for name, t in self._named():
            shape = tuple(t.shape)
            if name.endswith("running_mean"):
                v = rn(shape, 0.3)
            elif name.endswith("running_var"):
                v = torch.exp(rn(shape, 0.4))
            elif name.endswith("pos_bias_u") or name.endswith("pos_bias_v"):
                v = rn(shape, 0.5)
            elif ".norm_" in name or name.endswith("bn.weight") or name.endswith("bn.bias"):
                v = (1.0 + rn(shape, 0.1)) if name.endswith("weight") else rn(shape, 0.1)
            elif name.endswith(".bias"):
                v = rn(shape, 0.1)
            else:
                fan_in = int(torch.tensor(shape[1:]).prod().item()) if len(shape) > 1 else 1
                std = 1.0 / math.sqrt(fan_in)
                if name.endswith("linear_q.weight") or name.endswith("linear_k.weight"):
                    std *= 1.5
                if name == "enc.pre_encode.out.weight" and c.xscaling:
                    std /= math.sqrt(c.d_model)  # keep x * sqrt(d) at unit scale
                v = rn(shape, std)
            t.copy_(v.to(t.dtype))
        return self


def _self_test():
    """rel_shift vs closed form; local attention with a huge window equals full
    attention; float32 vs float64 agree."""
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    bd = torch.randn(3, 5, 9, generator=g, dtype=torch.float64)
    r = rel_shift(bd)
    for a in range(5):
        for b in range(5):
            assert torch.equal(r[:, a, b], bd[:, a, b - a + 4])
    # MHSA against the closed form BD[a][b] = qv[a] . p[row(a - b)] (sec. 7.5/7.6)
    for wl, wr, t in ((-1, -1, 7), (3, 2, 9), (8, 8, 5), (0, 4, 6)):
        c = FCConfig(1, 16, 2, 32, 3, 4, 80, use_bias=True, att_left=wl, att_right=wr)
        m = FastConformerEncoder(c).double().randomize_(torch.Generator().manual_seed(2))
        att = m.blocks[0].attn
        y = torch.randn(t, 16, generator=g, dtype=torch.float64)
        pe = m.pos_table(t)
        got = att(y, pe)
        q, k, v = att.linear_q(y), att.linear_k(y), att.linear_v(y)
        p = att.linear_pos(pe)
        o = torch.zeros(t, 16, dtype=torch.float64)
        for h in range(2):
            sl = slice(8 * h, 8 * h + 8)
            for a in range(t):
                s = torch.full((t,), float("-inf"), dtype=torch.float64)
                for b in range(t):
                    if c.local_attention:
                        if not (a - wl <= b <= a + wr):
                            continue
                        row = wl - (a - b)
                    else:
                        row = (t - 1) - (a - b)
                    s[b] = ((q[a, sl] + att.pos_bias_u[h]) @ k[b, sl]
                            + (q[a, sl] + att.pos_bias_v[h]) @ p[row, sl]) / math.sqrt(8)
                o[a, sl] = torch.softmax(s, 0) @ v[:, sl]
        want = att.linear_out(o)
        assert torch.allclose(got, want, atol=1e-12), (wl, wr, t, (got - want).abs().max())
    cfg = FCConfig(2, 32, 4, 64, 5, 8, 80, use_bias=True, xscaling=True)
    enc = FastConformerEncoder(cfg).double().randomize_(torch.Generator().manual_seed(1))
    mel = torch.randn(80, 77, generator=g, dtype=torch.float64)
    pre, out = enc(mel)
    assert pre.shape == (10, 32) and out.shape == (10, 32)
    cfg_l = FCConfig(2, 32, 4, 64, 5, 8, 80, use_bias=True, xscaling=True, att_left=20, att_right=20)
    enc_l = FastConformerEncoder(cfg_l).double()
    enc_l.load_gguf_tensors(enc.gguf_tensors())
    _, out_l = enc_l(mel)
    assert torch.allclose(out, out_l, atol=1e-12), (out - out_l).abs().max()
    cfg_s = FCConfig(2, 32, 4, 64, 5, 8, 80, use_bias=True, xscaling=True, att_left=2, att_right=1)
    enc_s = FastConformerEncoder(cfg_s).double()
    enc_s.load_gguf_tensors(enc.gguf_tensors())
    _, out_s = enc_s(mel)
    assert (out_s - out).abs().max() > 1e-3
    # other subsampling factors: stage count, NeMo tensor indices, shapes
    for fac, idx in ((2, [0]), (4, [0, 2, 3]), (8, [0, 2, 3, 5, 6]), (16, [0, 2, 3, 5, 6, 8, 9])):
        cf = FCConfig(1, 16, 2, 32, 3, 4, 80, use_bias=True, sub_factor=fac)
        ef = FastConformerEncoder(cf).double().randomize_(torch.Generator().manual_seed(3))
        names = [n for n in ef.gguf_tensors() if n.startswith("enc.pre_encode.conv.")]
        assert names == [f"enc.pre_encode.conv.{i}.{w}" for i in idx for w in ("weight", "bias")], names
        pf, of = ef(mel)
        assert pf.shape == (t_enc_of(77, fac), 16) and of.shape == pf.shape, (fac, pf.shape)
        assert ef.pre_encode.out.weight.shape == (16, 4 * cf.f_sub)
    assert t_enc_of(77, 2) == 39 and t_enc_of(77, 4) == 20 and t_enc_of(77, 16) == 5
    enc32 = FastConformerEncoder(cfg).float()
    enc32.load_gguf_tensors(enc.gguf_tensors())
    _, out32 = enc32(mel.float())
    err = (out32.double() - out).abs().max().item()
    assert err < 1e-4, err
    print("fastconformer self-test OK (f32 vs f64 max err %.2e)" % err)


if __name__ == "__main__":
    _self_test()
