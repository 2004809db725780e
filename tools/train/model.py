"""FastConformer + CTC head in torch, exactly the math of docs/formats/parakeet.md §7.

Parameter names follow NeMo's state_dict (encoder.pre_encode.conv.0.weight,
encoder.layers.{i}.feed_forward1.linear1.weight, ...) so export.py maps them
to the GGUF names of §4 one to one. Batches are padded; the three masks of
§10.3 (pre-encode rows after each ReLU, attention key padding, GLU output
before the depthwise conv) keep padding from leaking into valid frames, so a
batched forward equals single-utterance inference. BatchNorm statistics are
taken over valid frames only for the same reason.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def stage_len(n):
    """One stride-2, pad-1, kernel-3 stage: L -> ceil(L/2)."""
    return (n + 1) // 2


def time_mask(lens, t):
    return torch.arange(t, device=lens.device)[None, :] < lens[:, None]  # [B, T] bool


class PreEncode(nn.Module):
    """dw_striding, factor 8 (docs/formats/parakeet.md §7.1)."""

    def __init__(self, n_mels, C, d):
        super().__init__()
        self.conv = nn.ModuleDict({
            "0": nn.Conv2d(1, C, 3, 2, 1),
            "2": nn.Conv2d(C, C, 3, 2, 1, groups=C),
            "3": nn.Conv2d(C, C, 1),
            "5": nn.Conv2d(C, C, 3, 2, 1, groups=C),
            "6": nn.Conv2d(C, C, 1),
        })
        # He init, zero bias: with torch's default init the ReLU stack shrinks
        # the time-varying part of the signal ~50x by conv6 while the biases
        # pass through, so every frame started out identical
        for conv in self.conv.values():
            nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")
            nn.init.zeros_(conv.bias)
        f = n_mels
        for _ in range(3):
            f = stage_len(f)
        self.out = nn.Linear(C * f, d)

    def forward(self, x, lens):
        # x [B, T, M] -> image [B, 1, T, M]: height = time, width = frequency
        x = x.unsqueeze(1)
        L1 = stage_len(lens)
        x = F.relu(self.conv["0"](x))
        x = x * time_mask(L1, x.shape[2])[:, None, :, None]
        L2 = stage_len(L1)
        x = F.relu(pointwise2d(self.conv["3"], self.conv["2"](x)))
        x = x * time_mask(L2, x.shape[2])[:, None, :, None]
        L3 = stage_len(L2)
        x = F.relu(pointwise2d(self.conv["6"], self.conv["5"](x)))
        x = x * time_mask(L3, x.shape[2])[:, None, :, None]
        B, C, T, Fp = x.shape
        x = x.permute(0, 2, 1, 3).reshape(B, T, C * Fp)  # feature index c*F' + f
        return self.out(x), L3


def pointwise2d(conv, x):
    """1x1 Conv2d as a matmul over channels (torch's CPU 1x1 conv path is slow)."""
    w = conv.weight[:, :, 0, 0]
    return (x.permute(0, 2, 3, 1) @ w.t() + conv.bias).permute(0, 3, 1, 2)


def rel_pos_table(T, d, device):
    """docs/formats/parakeet.md §7.4: 2T-1 rows, positions T-1 down to -(T-1)."""
    pos = torch.arange(T - 1, -T, -1, device=device, dtype=torch.float32)[:, None]
    div = torch.exp(-torch.arange(0, d, 2, device=device, dtype=torch.float32) * math.log(10000.0) / d)
    pe = torch.zeros(2 * T - 1, d, device=device)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class RelMHSA(nn.Module):
    def __init__(self, d, H, bias):
        super().__init__()
        self.H, self.dh = H, d // H
        self.linear_q = nn.Linear(d, d, bias=bias)
        self.linear_k = nn.Linear(d, d, bias=bias)
        self.linear_v = nn.Linear(d, d, bias=bias)
        self.linear_out = nn.Linear(d, d, bias=bias)
        self.linear_pos = nn.Linear(d, d, bias=False)
        self.pos_bias_u = nn.Parameter(torch.zeros(H, self.dh))
        self.pos_bias_v = nn.Parameter(torch.zeros(H, self.dh))
        nn.init.xavier_uniform_(self.pos_bias_u)
        nn.init.xavier_uniform_(self.pos_bias_v)

    def forward(self, y, pe, key_ok, drop):
        B, T, d = y.shape
        H, dh = self.H, self.dh
        q = self.linear_q(y).view(B, T, H, dh)
        k = self.linear_k(y).view(B, T, H, dh).transpose(1, 2)  # [B,H,T,dh]
        v = self.linear_v(y).view(B, T, H, dh).transpose(1, 2)
        p = self.linear_pos(pe).view(-1, H, dh).transpose(0, 1)  # [H,P,dh]
        qu = (q + self.pos_bias_u).transpose(1, 2)
        qv = (q + self.pos_bias_v).transpose(1, 2)
        ac = qu @ k.transpose(-1, -2)  # [B,H,T,T]
        bdr = qv @ p.transpose(-1, -2).unsqueeze(0)  # [B,H,T,2T-1]
        # rel_shift closed form: BD[a][b] = BDr[a][b - a + T - 1]
        a = torch.arange(T, device=y.device)
        idx = (a[None, :] - a[:, None] + T - 1).expand(B, H, T, T)
        bd = torch.gather(bdr, 3, idx)
        s = (ac + bd) / math.sqrt(dh)
        s = s.masked_fill(~key_ok[:, None, None, :], -1e30)
        att = F.dropout(torch.softmax(s, dim=-1), drop, self.training)
        o = (att @ v).transpose(1, 2).reshape(B, T, d)
        return self.linear_out(o)


class MaskedBatchNorm1d(nn.BatchNorm1d):
    """BatchNorm whose training statistics see only valid frames."""

    def forward(self, x, ok):  # x [B, C, T], ok [B, T]
        if not self.training:
            return super().forward(x)
        m = ok[:, None, :].to(x.dtype)
        n = m.sum().clamp(min=2.0)
        mean = (x * m).sum(dim=(0, 2)) / n
        var = (((x - mean[None, :, None]) ** 2) * m).sum(dim=(0, 2)) / n
        with torch.no_grad():
            mo = self.momentum
            self.running_mean.mul_(1 - mo).add_(mo * mean)
            self.running_var.mul_(1 - mo).add_(mo * var * n / (n - 1))
            self.num_batches_tracked += 1
        xh = (x - mean[None, :, None]) / torch.sqrt(var[None, :, None] + self.eps)
        return xh * self.weight[None, :, None] + self.bias[None, :, None]


class ConvModule(nn.Module):
    def __init__(self, d, k, bias):
        super().__init__()
        self.pointwise_conv1 = nn.Conv1d(d, 2 * d, 1, bias=bias)
        self.depthwise_conv = nn.Conv1d(d, d, k, padding=(k - 1) // 2, groups=d, bias=bias)
        self.batch_norm = MaskedBatchNorm1d(d, eps=1e-5)
        self.pointwise_conv2 = nn.Conv1d(d, d, 1, bias=bias)

    def forward(self, y, ok):
        # kernel-1 convs computed as linears: same weights, faster on CPU
        pw1, pw2 = self.pointwise_conv1, self.pointwise_conv2
        z = F.linear(y, pw1.weight[:, :, 0], pw1.bias)  # [B, T, 2d]
        d = z.shape[2] // 2
        g = z[..., :d] * torch.sigmoid(z[..., d:])
        g = (g * ok[..., None].to(g.dtype)).transpose(1, 2)  # [B, d, T]
        u = self.batch_norm(self.depthwise_conv(g), ok)
        return F.linear(F.silu(u).transpose(1, 2), pw2.weight[:, :, 0], pw2.bias)


class FeedForward(nn.Module):
    def __init__(self, d, d_ff, bias):
        super().__init__()
        self.linear1 = nn.Linear(d, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d, bias=bias)

    def forward(self, y, drop):
        return self.linear2(F.dropout(F.silu(self.linear1(y)), drop, self.training))


class ConformerLayer(nn.Module):
    def __init__(self, d, H, d_ff, k, bias):
        super().__init__()
        self.norm_feed_forward1 = nn.LayerNorm(d, eps=1e-5)
        self.feed_forward1 = FeedForward(d, d_ff, bias)
        self.norm_self_att = nn.LayerNorm(d, eps=1e-5)
        self.self_attn = RelMHSA(d, H, bias)
        self.norm_conv = nn.LayerNorm(d, eps=1e-5)
        self.conv = ConvModule(d, k, bias)
        self.norm_feed_forward2 = nn.LayerNorm(d, eps=1e-5)
        self.feed_forward2 = FeedForward(d, d_ff, bias)
        self.norm_out = nn.LayerNorm(d, eps=1e-5)

    def forward(self, x, pe, ok, drop):
        dr = lambda t: F.dropout(t, drop, self.training)  # noqa: E731
        x = x + 0.5 * dr(self.feed_forward1(self.norm_feed_forward1(x), drop))
        x = x + dr(self.self_attn(self.norm_self_att(x), pe, ok, drop))
        x = x + dr(self.conv(self.norm_conv(x), ok))
        x = x + 0.5 * dr(self.feed_forward2(self.norm_feed_forward2(x), drop))
        return self.norm_out(x)


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg["d_model"]
        self.pre_encode = PreEncode(cfg["n_mels"], cfg["sub_channels"], d)
        self.layers = nn.ModuleList(
            ConformerLayer(d, cfg["n_heads"], cfg["d_ff"], cfg["conv_kernel"], cfg["use_bias"])
            for _ in range(cfg["n_layers"]))

    def forward(self, mel, lens, drop=0.0):
        x, L = self.pre_encode(mel, lens)
        if self.cfg["xscaling"]:
            x = x * math.sqrt(self.cfg["d_model"])
        T = x.shape[1]
        pe = rel_pos_table(T, self.cfg["d_model"], x.device)
        ok = time_mask(L, T)
        for layer in self.layers:
            x = layer(x, pe, ok, drop)
        return x, L


class CTCModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        # NeMo: decoder.decoder_layers.0 is a Conv1d(d, V+1, 1); blank is last
        self.ctc = nn.Conv1d(cfg["d_model"], cfg["vocab"] + 1, 1)

    def forward(self, mel, lens, drop=0.0):
        x, L = self.encoder(mel, lens, drop)
        logits = F.linear(x, self.ctc.weight[:, :, 0], self.ctc.bias)  # [B, T, V+1]
        return logits, L


def greedy_ctc(logits, L, blank):
    """docs/formats/parakeet.md §8.5 over a batch: collapse repeats, drop blank."""
    out = []
    am = logits.argmax(-1).cpu()
    for b in range(am.shape[0]):
        prev, ids = -1, []
        for a in am[b, :int(L[b])].tolist():
            if a != prev and a != blank:
                ids.append(a)
            prev = a
        out.append(ids)
    return out
