#| symptom: wrong-results-or-crash
#| report: its two-rank demo is right; on real gradients some ranks fail inside all_gather and
#|     the sums that do come back are too small
#| cause uneven-counts (distributed): all_gather needs the same size from every rank, but ranks
#|     hold different numbers of non-zeros: exchange the counts, pad to the largest, gather,
#|     then trim each rank's part.
#| cause repeats-overwritten (distributed): out[idx] = val keeps one value per repeated index
#|     (the last write) instead of their sum; index_add_ sums repeats.
"""Sum sparse gradients over ranks: gather every rank's (index, value) pairs and add them up.

Notebook 03 hands it to you; its check runs your version on 3 ranks against the dense
all-reduce, on gradients shaped like an embedding table's.

    torchrun --standalone --nproc-per-node 2 labs/sparse/allreduce.py
"""

import torch
import torch.distributed as dist


def sparse_allreduce(grad, group=None):
    """Sum a 1-D sparse COO gradient over all ranks; return the dense sum."""
    grad = grad.coalesce()
    idx, val = grad.indices()[0], grad.values()
    size = dist.get_world_size(group)
    #+[uneven-counts] counts = [torch.zeros(1, dtype=torch.int64) for _ in range(size)]
    #+[uneven-counts] dist.all_gather(counts, torch.tensor([len(idx)]), group=group)  # ranks hold different numbers of pairs
    #+[uneven-counts] longest = int(max(counts))
    #+[uneven-counts] idx = torch.cat([idx, idx.new_zeros(longest - len(idx))])  # all_gather needs equal sizes: pad
    #+[uneven-counts] val = torch.cat([val, val.new_zeros(longest - len(val))])
    all_idx = [torch.empty_like(idx) for _ in range(size)]
    all_val = [torch.empty_like(val) for _ in range(size)]
    dist.all_gather(all_idx, idx, group=group)
    dist.all_gather(all_val, val, group=group)
    #+[uneven-counts] all_idx = [i[:int(n)] for i, n in zip(all_idx, counts)]  # drop the padding again
    #+[uneven-counts] all_val = [v[:int(n)] for v, n in zip(all_val, counts)]
    out = torch.zeros(grad.shape, dtype=val.dtype)
    out[torch.cat(all_idx)] = torch.cat(all_val)  # BUG[repeats-overwritten]: an index held by two ranks keeps one value, not the sum
    #+[repeats-overwritten] out.index_add_(0, torch.cat(all_idx), torch.cat(all_val))  # indices on several ranks are summed
    return out


if __name__ == "__main__":
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    g = torch.sparse_coo_tensor(torch.tensor([[rank, world + rank]]), torch.ones(2), (16,))
    print(f"rank {rank}:", sparse_allreduce(g).tolist())
    dist.destroy_process_group()
