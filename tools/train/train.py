#!/usr/bin/env python3
"""Train the FastConformer-CTC model on the precomputed synthetic features.

Wall-clock budgeted: after a linear warm-up the learning rate follows a cosine
over the *elapsed fraction of the time budget*, so the run ends annealed at
whatever step the budget allows on the machine at hand. Evaluates held-out
greedy WER in torch every --eval-min minutes and keeps the best checkpoint.

usage: train.py DATA_DIR OUT_DIR [--minutes 56] [--d 144] [--layers 6] ...
"""
import os

# OpenMP threads must sleep, not spin, at barriers: on a shared 2-core machine
# spinning made a 2-thread step ~7x slower than a 1-thread step.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import glob
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import sentencepiece as spm  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from model import CTCModel, greedy_ctc  # noqa: E402
from wer import wer_counts  # noqa: E402


def train_spm(data_dir, out_dir, vocab):
    prefix = os.path.join(out_dir, "spm")
    if not os.path.exists(prefix + ".model"):
        txt = os.path.join(out_dir, "spm_text.txt")
        with open(txt, "w") as f:
            for line in open(os.path.join(data_dir, "text_train.tsv")):
                f.write(line.rstrip("\n").split("\t", 1)[1] + "\n")
        spm.SentencePieceTrainer.train(
            input=txt, model_prefix=prefix, vocab_size=vocab, model_type="bpe",
            character_coverage=1.0, bos_id=-1, eos_id=-1, unk_id=0, pad_id=-1,
            num_threads=2, minloglevel=2)
    return spm.SentencePieceProcessor(model_file=prefix + ".model")


class Data:
    """All shards in memory as float16; utterances are (shard, start, len, ids, source)."""

    def __init__(self, sp, sources):
        self.sp, self.shards, self.utts, self.seen = sp, [], [], set()
        self.sources = sources  # text -> source name (text_train.tsv)

    def scan(self, pattern):
        added = 0
        for path in sorted(glob.glob(pattern)):
            if path in self.seen or path.endswith(".tmp.npz"):
                continue
            self.seen.add(path)
            z = np.load(path)
            feats, lens, texts = z["feats"], z["lens"], z["texts"]
            si = len(self.shards)
            self.shards.append(feats)
            off = 0
            for n, t in zip(lens.tolist(), texts.tolist()):
                ids = self.sp.encode(t)
                t_enc = (((n + 1) // 2 + 1) // 2 + 1) // 2
                reps = sum(1 for a, b in zip(ids, ids[1:]) if a == b)
                if 0 < len(ids) and len(ids) + reps <= t_enc:
                    self.utts.append((si, off, n, ids, self.sources.get(t, "")))
                    added += 1
                off += n
        return added

    def batches(self, rng, frame_budget, max_b, ascending=False, weights=None):
        """Length-bucketed batches in random order, or shortest first
        (SortaGrad: CTC learns its first alignments on short utterances).
        weights: source -> fraction of its utterances drawn this epoch."""
        weights = weights or {}
        keep = [i for i in range(len(self.utts))
                if rng.random() < weights.get(self.utts[i][4], 1.0)]
        order = sorted(keep, key=lambda i: self.utts[i][2] * rng.uniform(0.9, 1.1))
        out, cur, tmax = [], [], 0
        for i in order:
            n = self.utts[i][2]
            if cur and (max(tmax, n) * (len(cur) + 1) > frame_budget or len(cur) >= max_b):
                out.append(cur)
                cur, tmax = [], 0
            cur.append(i)
            tmax = max(tmax, n)
        if cur:
            out.append(cur)
        if not ascending:
            rng.shuffle(out)
        return out

    def collate(self, idx):
        us = [self.utts[i] for i in idx]
        T = max(u[2] for u in us)
        x = np.zeros((len(us), T, 80), np.float32)
        for b, (si, off, n, _, _) in enumerate(us):
            x[b, :n] = self.shards[si][off:off + n]
        lens = torch.tensor([u[2] for u in us])
        tgt = torch.tensor([t for u in us for t in u[3]])
        tl = torch.tensor([len(u[3]) for u in us])
        return torch.from_numpy(x), lens, tgt, tl


def spec_augment(x, lens, rng):
    """2 frequency masks (<=15 bins) and time masks (<=5 % of length each)."""
    for b in range(x.shape[0]):
        n = int(lens[b])
        for _ in range(2):
            w = rng.randint(0, 15)
            f0 = rng.randint(0, 80 - w)
            x[b, :n, f0:f0 + w] = 0.0
        for _ in range(max(1, n // 250) + 1):
            w = rng.randint(0, max(1, int(0.05 * n)))
            t0 = rng.randint(0, max(0, n - w))
            x[b, t0:t0 + w, :] = 0.0
    return x


@torch.no_grad()
def calibrate_pre_encode(model, data, rng, frame_budget, max_b, n_batches=8):
    """Data-dependent init of enc.pre_encode.out: zero mean per channel and
    unit RMS over valid frames. The ReLU stack's output is mostly a constant
    per channel; left in, every frame looks alike after the first LayerNorm
    and CTC sat on the blank/unigram plateau for 1000+ steps."""
    out = model.encoder.pre_encode.out
    bs = data.batches(rng, frame_budget, max_b)[:n_batches]
    ys = []
    for b in bs:
        x, lens, _, _ = data.collate(b)
        y, L = model.encoder.pre_encode(x, lens)
        ok = torch.arange(y.shape[1])[None, :] < L[:, None]
        ys.append(y[ok])
    y = torch.cat(ys)
    mean = y.mean(0)
    rms = (y - mean).pow(2).mean().sqrt()
    out.bias.sub_(mean).div_(rms)
    out.weight.div_(rms)
    return float(rms)


def load_test(data_dir, name):
    """[(feats, text, source)] of a held-out folder (source from its test.tsv)."""
    path = os.path.join(data_dir, name, "test_feats.npz")
    if not os.path.exists(path):
        return None
    src = {}
    for line in open(os.path.join(data_dir, name, "test.tsv")):
        f = line.rstrip("\n").split("\t")
        src[f[3]] = f[4] if len(f) > 4 else ""
    z = np.load(path)
    utts, off = [], 0
    for n, t in zip(z["lens"].tolist(), z["texts"].tolist()):
        utts.append((z["feats"][off:off + n].astype(np.float32), t, src.get(t, "")))
        off += n
    return utts


@torch.no_grad()
def evaluate(model, sp, test, batch=16):
    """Greedy WER per text source and their plain mean (the checkpoint score:
    a dev set that is mostly number readings must not hide the sentences)."""
    model.eval()
    hyps, per = [], {}
    order = sorted(range(len(test)), key=lambda i: test[i][0].shape[0])
    res = {}
    for s in range(0, len(order), batch):
        idx = order[s:s + batch]
        T = max(test[i][0].shape[0] for i in idx)
        x = torch.zeros(len(idx), T, 80)
        for b, i in enumerate(idx):
            x[b, :test[i][0].shape[0]] = torch.from_numpy(test[i][0])
        lens = torch.tensor([test[i][0].shape[0] for i in idx])
        logits, L = model(x, lens)
        for i, ids in zip(idx, greedy_ctc(logits, L, model.cfg["vocab"])):
            res[i] = sp.decode(ids)
    for i in range(len(test)):
        e, n = wer_counts(test[i][1], res[i])
        c = per.setdefault(test[i][2], [0, 0])
        c[0], c[1] = c[0] + e, c[1] + n
        hyps.append(res[i])
    model.train()
    by_src = {s: round(c[0] / max(1, c[1]), 4) for s, c in sorted(per.items())}
    return sum(by_src.values()) / max(1, len(by_src)), by_src, hyps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--minutes", type=float, default=56.0)
    ap.add_argument("--d", type=int, default=144)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--sub", type=int, default=64)
    ap.add_argument("--kernel", type=int, default=9)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--frames", type=int, default=4000, help="mel frames per batch (padded)")
    ap.add_argument("--max-b", type=int, default=32)
    ap.add_argument("--drop", type=float, default=0.05)
    ap.add_argument("--eval-min", type=float, default=10.0)
    ap.add_argument("--eval-every", type=int, default=1, help="periodic evals use every k-th test utterance")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--calib", type=int, default=1, help="data-dependent pre-encode init")
    ap.add_argument("--sortagrad", type=int, default=1, help="first N epochs shortest first")
    ap.add_argument("--specaug-from", type=int, default=1000, help="SpecAugment from this step on")
    ap.add_argument("--init", default="", help="continue from this checkpoint (its spm.model must "
                    "already be in out_dir); skips the pre-encode calibration")
    ap.add_argument("--source-weight", default="", help="per-epoch sampling fraction by text "
                    "source, e.g. number=0.34 (default 1 for every source)")
    ap.add_argument("--dev", default="dev", help="held-out folder (in DATA_DIR) for the periodic "
                    "evaluations and the best-checkpoint choice")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    # separate streams for the batch plan, SpecAugment and the calibration
    # batches, so a change in one does not reshuffle the others
    rng = random.Random(a.seed)
    aug_rng = random.Random(a.seed * 1000)
    os.makedirs(a.out_dir, exist_ok=True)
    log = open(os.path.join(a.out_dir, "train.log"), "a")

    def say(**kv):
        kv["time"] = time.strftime("%H:%M:%S", time.gmtime())
        line = json.dumps(kv)
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    sp = train_spm(a.data_dir, a.out_dir, a.vocab)
    cfg = dict(n_mels=80, d_model=a.d, n_heads=a.heads, d_ff=4 * a.d, conv_kernel=a.kernel,
               n_layers=a.layers, sub_channels=a.sub, use_bias=True, xscaling=False,
               vocab=sp.get_piece_size())
    model = CTCModel(cfg)
    nparam = sum(p.numel() for p in model.parameters())
    sources = {}
    for line in open(os.path.join(a.data_dir, "text_train.tsv")):
        src, t = line.rstrip("\n").split("\t", 1)
        sources[t] = src
    weights = {}
    for kv in filter(None, a.source_weight.split(",")):
        k, v = kv.split("=")
        weights[k] = float(v)
    data = Data(sp, sources)
    n = data.scan(os.path.join(a.data_dir, "feats", "train_*.npz"))
    test = load_test(a.data_dir, a.dev)
    per_src = {}
    for u in data.utts:
        per_src[u[4]] = per_src.get(u[4], 0) + 1
    say(event="start", params=nparam, cfg=cfg, utts=n, hours=sum(u[2] for u in data.utts) / 360000,
        by_source=per_src, weights=weights, test=len(test) if test else 0)

    if a.init:
        ck = torch.load(a.init, map_location="cpu")
        if ck["cfg"] != cfg:
            raise SystemExit("--init: checkpoint config %s != %s" % (ck["cfg"], cfg))
        model.load_state_dict(ck["state"])
        say(event="init", checkpoint=a.init, step=ck.get("step"), wer=ck.get("wer"))
    elif a.calib:
        say(event="calibrated", pre_encode_rms=calibrate_pre_encode(
            model, data, random.Random(a.seed + 1), a.frames, a.max_b))
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "pos_bias" in name else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 1e-3},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.98), eps=1e-9)
    budget = a.minutes * 60.0
    t0 = time.time()
    last_eval = t0
    step, audio_s, best = 0, 0.0, 1e9
    blank = cfg["vocab"]
    epoch = 0
    done = False
    while not done:
        epoch += 1
        if epoch > 1:
            got = data.scan(os.path.join(a.data_dir, "feats", "train_*.npz"))
            if got:
                say(event="more_data", added=got, utts=len(data.utts))
        for bidx in data.batches(rng, a.frames, a.max_b, ascending=epoch <= a.sortagrad,
                                 weights=weights):
            el = time.time() - t0
            if el >= budget or (a.max_steps and step >= a.max_steps):
                done = True
                break
            if step < a.warmup:
                lr = a.lr * (step + 1) / a.warmup
            else:
                lr = a.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, el / budget))))
            for g in opt.param_groups:
                g["lr"] = lr
            x, lens, tgt, tl = data.collate(bidx)
            if step >= a.specaug_from:
                x = spec_augment(x, lens, aug_rng)
            logits, L = model(x, lens, a.drop)
            lp = F.log_softmax(logits, -1).transpose(0, 1)
            loss = F.ctc_loss(lp, tgt, L, tl, blank=blank, reduction="mean", zero_infinity=True)
            opt.zero_grad()
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            audio_s += float(lens.sum()) / 100.0
            if step % 20 == 0 or step <= 3:
                el = time.time() - t0
                say(step=step, epoch=epoch, loss=round(loss.item(), 4), lr=round(lr, 6),
                    gnorm=round(float(gn), 2), B=len(bidx), elapsed_min=round(el / 60, 2),
                    audio_h=round(audio_s / 3600, 3), x_realtime=round(audio_s / el, 1))
            if test and time.time() - last_eval >= a.eval_min * 60:
                last_eval = time.time()
                w, by_src, hyps = evaluate(model, sp, test[::a.eval_every])
                torch.save({"cfg": cfg, "state": model.state_dict(), "step": step, "wer": w},
                           os.path.join(a.out_dir, "last.pt"))
                if w < best:
                    best = w
                    torch.save({"cfg": cfg, "state": model.state_dict(), "step": step, "wer": w},
                               os.path.join(a.out_dir, "best.pt"))
                say(event="eval", step=step, wer=round(w, 4), by_source=by_src, best=round(best, 4),
                    sample=hyps[:2], eval_s=round(time.time() - last_eval, 1))
    if test:
        w, by_src, hyps = evaluate(model, sp, test)
        torch.save({"cfg": cfg, "state": model.state_dict(), "step": step, "wer": w},
                   os.path.join(a.out_dir, "last.pt"))
        if w < best:
            best = w
            torch.save({"cfg": cfg, "state": model.state_dict(), "step": step, "wer": w},
                       os.path.join(a.out_dir, "best.pt"))
        say(event="final", step=step, wer=round(w, 4), by_source=by_src, best=round(best, 4),
            minutes=round((time.time() - t0) / 60, 1), audio_h=round(audio_s / 3600, 2))
    else:
        torch.save({"cfg": cfg, "state": model.state_dict(), "step": step, "wer": None},
                   os.path.join(a.out_dir, "last.pt"))


if __name__ == "__main__":
    main()
