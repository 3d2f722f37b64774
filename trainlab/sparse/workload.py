"""Where sparse gradients come from: an embedding-bag classifier on Zipf-distributed ids.

Each sample is a bag of ids drawn from a Zipf law over a large vocabulary (a few ids are
everywhere, most are rare, as in recommendation and text); its label comes from a hidden
per-id score. `nn.EmbeddingBag(sparse=True)` gives a sparse gradient: only the rows of the
ids in this rank's batch. Data-parallel training then syncs the embedding gradient with a
chosen pattern and the small dense head with an ordinary all-reduce.

    torchrun --standalone --nproc-per-node 2 -m trainlab.sparse.workload OUT.json [--steps 60]

runs every sync mode in one launch (same seed, same data) and rank 0 writes losses, per-step
gradient density and sync times.
"""

import argparse
import json
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from trainlab.distributed.setup import init, shutdown
from trainlab.sparse import EXACT, densify
from trainlab.sparse.topk import TopK

EMBED_DIM = 16  # values per embedding row: the index of a sparse row is paid once per 16 values
MODES = ("dense", "sparse_allgather", "sparse_partitioned", "topk_ef", "topk_no_ef")


def zipf_bags(n, vocab, bag, classes, seed=0, exponent=1.1):
    """(ids (n, bag), labels (n,)): ids ~ Zipf over the vocabulary; label = argmax of the bag's
    summed hidden scores."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    p = ranks**-exponent
    ids = rng.choice(vocab, size=(n, bag), p=p / p.sum())
    scores = rng.standard_normal((vocab, classes)).astype(np.float32)
    labels = scores[ids].sum(1).argmax(1)
    return torch.from_numpy(ids), torch.from_numpy(labels)


class BagClassifier(nn.Module):
    def __init__(self, vocab, dim=EMBED_DIM, classes=10):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="sum", sparse=True)
        nn.init.normal_(self.embed.weight, std=0.01)  # near zero: what the model knows must be learned into the rows
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):
        return self.head(self.embed(ids))


def sync_gradients(model, mode, compressor, ctx):
    """The embedding's (sparse) gradient by the chosen pattern; the head's by all-reduce.
    Returns seconds spent syncing the embedding."""
    grad = model.embed.weight.grad
    start = time.perf_counter()
    if mode == "dense":
        model.embed.weight.grad = EXACT["dense"](grad, average=True)
    elif mode.startswith("sparse_"):
        model.embed.weight.grad = densify(EXACT[mode.removeprefix("sparse_")](grad, average=True))
    else:
        model.embed.weight.grad = compressor("embed", grad)
    seconds = time.perf_counter() - start
    for p in model.head.parameters():
        dist.all_reduce(p.grad)
        p.grad /= ctx.world_size
    return seconds


def train(mode, ctx, ids, labels, steps, batch, vocab, lr, fraction):
    torch.manual_seed(0)
    model = BagClassifier(vocab)
    optimizer = torch.optim.SGD(
        [
            {"params": model.embed.parameters(), "lr": lr},  # rows see few updates each
            {"params": model.head.parameters(), "lr": lr / 5},
        ]
    )
    compressor = TopK(fraction, error_feedback=mode == "topk_ef") if mode.startswith("topk") else None
    per_rank = batch // ctx.world_size
    losses, densities, sync_s = [], [], []
    for step in range(steps):
        start = (step * batch) % (len(labels) - batch)
        mine = slice(start + ctx.rank * per_rank, start + (ctx.rank + 1) * per_rank)
        loss = nn.functional.cross_entropy(model(ids[mine]), labels[mine])
        optimizer.zero_grad()
        loss.backward()
        rows = model.embed.weight.grad.coalesce().indices().shape[1]
        densities.append(rows / vocab)
        sync_s.append(sync_gradients(model, mode, compressor, ctx))
        optimizer.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(float(mean) / ctx.world_size)
    return {"losses": losses, "density": densities, "sync_s": sync_s}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--vocab", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=256, help="global batch")
    parser.add_argument("--lr", type=float, default=0.5, help="embedding LR (the head uses lr / 5)")
    parser.add_argument("--fraction", type=float, default=0.001, help="top-k: share of entries kept")
    args = parser.parse_args(argv)
    ctx = init("cpu", timeout_s=120)
    ids, labels = zipf_bags(args.batch * args.steps + args.batch, args.vocab, bag=20, classes=10)
    runs = {
        mode: train(mode, ctx, ids, labels, args.steps, args.batch, args.vocab, args.lr, args.fraction)
        for mode in MODES
    }
    if ctx.is_main:
        with open(args.out, "w") as f:
            json.dump({"world_size": ctx.world_size, "args": vars(args), "runs": runs}, f)
    shutdown(exit_process=True)


if __name__ == "__main__":
    main()
