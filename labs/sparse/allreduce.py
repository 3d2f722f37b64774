"""Naive sparse all-reduce: gather every rank's (index, value) pairs and add them up.

symptom: wrong-results-or-crash
category: distributed
cause: sparse-allreduce-mistakes

A first attempt at summing sparse gradients over ranks, the way it is often written. It
works in the demo below only by luck: every rank happens to hold the same number of
non-zeros, and no index appears on two ranks. Notebook 03 hands it to you; its check runs
your version on 3 ranks against the dense all-reduce, with uneven non-zeros per rank, an
empty rank and indices that several ranks share.

    torchrun --standalone --nproc-per-node 2 labs/sparse/allreduce.py
"""

import torch
import torch.distributed as dist


def sparse_allreduce(grad, group=None):
    """Sum a 1-D sparse COO gradient over all ranks; return the dense sum."""
    grad = grad.coalesce()
    idx, val = grad.indices()[0], grad.values()
    size = dist.get_world_size(group)
    #+ counts = [torch.zeros(1, dtype=torch.int64) for _ in range(size)]
    #+ dist.all_gather(counts, torch.tensor([len(idx)]), group=group)  # ranks hold different numbers of pairs
    #+ longest = int(max(counts))
    #+ idx = torch.cat([idx, idx.new_zeros(longest - len(idx))])  # all_gather needs equal sizes: pad
    #+ val = torch.cat([val, val.new_zeros(longest - len(val))])
    all_idx = [torch.empty_like(idx) for _ in range(size)]
    all_val = [torch.empty_like(val) for _ in range(size)]
    dist.all_gather(all_idx, idx, group=group)
    dist.all_gather(all_val, val, group=group)
    #+ all_idx = [i[:int(n)] for i, n in zip(all_idx, counts)]  # drop the padding again
    #+ all_val = [v[:int(n)] for v, n in zip(all_val, counts)]
    out = torch.zeros(grad.shape, dtype=val.dtype)
    out[torch.cat(all_idx)] = torch.cat(all_val)  # BUG: an index held by two ranks keeps one value, not the sum
    #+ out.index_add_(0, torch.cat(all_idx), torch.cat(all_val))  # indices on several ranks are summed
    return out


if __name__ == "__main__":
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    g = torch.sparse_coo_tensor(torch.tensor([[rank, world + rank]]), torch.ones(2), (16,))
    print(f"rank {rank}:", sparse_allreduce(g).tolist())
    dist.destroy_process_group()
