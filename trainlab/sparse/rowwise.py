"""Row-wise sharded embeddings: the model-parallel alternative to syncing sparse gradients.

Recommendation systems at scale do not replicate a huge table and all-reduce its sparse
gradient: each of N ranks owns D/N rows, and a lookup becomes communication of the rows
themselves. Per step, for the u distinct ids in a rank's batch:

    forward   all-to-all of the ids to their owners, all-to-all of the d-wide rows back
    backward  all-to-all of the rows' gradients to their owners, who update only their rows

so a rank sends about u x (8 + 2 x 4d) x (N-1)/N bytes whatever N is, and holds D/N rows,
where data-parallel sync of the sparse gradient sends (N-1) x u x (8 + 4d) with the all-gather
pattern and holds all D rows. `run()` trains module 03's embedding-bag workload this way on
N ranks, against the same training in one process (the same global batches), and counts the
bytes.

    torchrun --standalone --nproc-per-node 2 -m trainlab.sparse.rowwise OUT.json [--steps 40]
"""

import argparse
import json

import torch
import torch.distributed as dist
import torch.nn.functional as F

from trainlab import atomic
from trainlab.distributed import accounting
from trainlab.distributed.setup import init, shutdown
from trainlab.sparse import workload

VOCAB, BAG, CLASSES, BATCH, LR = 50_000, 16, 10, 256, 0.5


def owners(ids, rows_per_rank):
    return torch.div(ids, rows_per_rank, rounding_mode="floor")


class _Exchange(torch.autograd.Function):
    """Rows for `wanted` (sorted distinct ids) from their owners' shards; backward sends each
    row's gradient back to its owner, which adds it to its shard's gradient."""

    @staticmethod
    def forward(ctx, shard, wanted, rows_per_rank, rank, world_size):
        send_counts = torch.bincount(owners(wanted, rows_per_rank), minlength=world_size)
        recv_counts = torch.empty_like(send_counts)
        dist.all_to_all_single(recv_counts, send_counts)
        send, recv = send_counts.tolist(), recv_counts.tolist()
        asked = wanted.new_empty(sum(recv))
        dist.all_to_all_single(asked, wanted, output_split_sizes=recv, input_split_sizes=send)
        local = asked - rank * rows_per_rank
        rows = shard.new_empty(len(wanted), shard.shape[1])
        dist.all_to_all_single(rows, shard[local].contiguous(), output_split_sizes=send, input_split_sizes=recv)
        ctx.save_for_backward(local)
        ctx.splits, ctx.shard_shape = (send, recv), shard.shape
        return rows

    @staticmethod
    def backward(ctx, grad_rows):
        (local,), (send, recv) = ctx.saved_tensors, ctx.splits
        grad_asked = grad_rows.new_empty(len(local), grad_rows.shape[1])
        dist.all_to_all_single(grad_asked, grad_rows.contiguous(), output_split_sizes=recv, input_split_sizes=send)
        grad_shard = grad_rows.new_zeros(ctx.shard_shape).index_add_(0, local, grad_asked)
        return grad_shard, None, None, None, None


class RowwiseBagClassifier(torch.nn.Module):
    """workload.BagClassifier with its table split by rows over the ranks (this rank's shard
    only); the small head is replicated and all-reduced as usual."""

    def __init__(self, full, rank, world_size):
        super().__init__()
        table = full.embed.weight.detach()
        self.rows_per_rank = -(-table.shape[0] // world_size)
        self.rank, self.world_size = rank, world_size
        self.shard = torch.nn.Parameter(table[rank * self.rows_per_rank : (rank + 1) * self.rows_per_rank].clone())
        self.head = torch.nn.Linear(table.shape[1], full.head.out_features)
        self.head.load_state_dict(full.head.state_dict())

    def forward(self, ids):
        wanted, inverse = torch.unique(ids, return_inverse=True)  # sorted: each owner's ids are contiguous
        rows = _Exchange.apply(self.shard, wanted, self.rows_per_rank, self.rank, self.world_size)
        return self.head(rows[inverse].sum(1))


def batches(steps, seed=0):
    ids, labels = workload.zipf_bags(steps * BATCH, VOCAB, BAG, CLASSES, seed=seed)
    return [(ids[i * BATCH : (i + 1) * BATCH], labels[i * BATCH : (i + 1) * BATCH]) for i in range(steps)]


def train_one_process(steps, seed=0):
    torch.manual_seed(seed)
    model = workload.BagClassifier(VOCAB)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for ids, labels in batches(steps):
        loss = F.cross_entropy(model(ids), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model.embed.weight.detach()


def train_rowwise(ctx, steps, seed=0):
    """The same global batches, each rank a 1/N slice; returns losses (mean over ranks), this
    rank's shard after training, counted bytes per step, distinct ids per rank per step and the rows this rank
    looked up per step for every rank, itself included (an owner's load: popular ids crowd the rank owning them)."""
    torch.manual_seed(seed)
    model = RowwiseBagClassifier(workload.BagClassifier(VOCAB), ctx.rank, ctx.world_size)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    share = BATCH // ctx.world_size
    losses, sent, distinct, served = [], [], [], []
    for ids, labels in batches(steps):
        ids, labels = ids[ctx.rank * share : (ctx.rank + 1) * share], labels[ctx.rank * share : (ctx.rank + 1) * share]
        counter = accounting.CollectiveCounter()
        with counter:
            loss = F.cross_entropy(model(ids), labels)
            optimizer.zero_grad()
            loss.backward()
        for p in model.head.parameters():  # the replicated head: an ordinary mean all-reduce
            dist.all_reduce(p.grad)
            p.grad /= ctx.world_size
        model.shard.grad /= ctx.world_size  # gradients of the mean loss over ranks
        optimizer.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        losses.append(mean_loss.item() / ctx.world_size)
        sent.append(counter.summary(ctx.world_size)["send_bytes"])
        wanted = torch.unique(ids)
        distinct.append(len(wanted))
        asks = torch.bincount(owners(wanted, model.rows_per_rank), minlength=ctx.world_size)
        dist.all_reduce(asks)  # outside the counter: the rows each owner looked up for all ranks this step
        served.append(int(asks[ctx.rank]))
    return losses, model.shard.detach(), sent, distinct, served


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args(argv)
    ctx = init("cpu", timeout_s=300)
    losses, shard, sent, distinct, served = train_rowwise(ctx, args.steps)
    shards = [torch.empty_like(shard) for _ in range(ctx.world_size)]
    dist.all_gather(shards, shard)
    sent_all = [None] * ctx.world_size
    dist.all_gather_object(sent_all, {"sent": sent, "distinct": distinct, "served": served})
    if ctx.is_main:
        reference_losses, reference_table = train_one_process(args.steps)
        table = torch.cat(shards)[:VOCAB]
        atomic.write_text(
            args.out,
            json.dumps(
                {
                    "world_size": ctx.world_size,
                    "steps": args.steps,
                    "losses": losses,
                    "reference_losses": reference_losses,
                    "max_table_diff": float((table - reference_table).abs().max()),
                    "dim": workload.EMBED_DIM,
                    "vocab": VOCAB,
                    "per_rank": sent_all,
                    "shard_rows": shard.shape[0],
                }
            ),
        )
    shutdown(exit_process=True)


if __name__ == "__main__":
    main()
