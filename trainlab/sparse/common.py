"""Rows in, rows out: the representation every pattern shares."""

import torch
import torch.distributed as dist


def to_rows(x):
    """(indices, values, shape) of a gradient: indices (nnz,) along dim 0, values (nnz, *row).

    Sparse input is coalesced first (a rank sums its own duplicate indices before sending);
    dense input keeps its non-zero rows."""
    if x.is_sparse:
        if x.sparse_dim() != 1:
            raise ValueError(
                f"sparse gradients must be indexed along dim 0 only (sparse_dim 1), got sparse_dim "
                f"{x.sparse_dim()}; use t.to_sparse(sparse_dim=1)"
            )
        x = x.coalesce()
        return x.indices()[0], x.values(), tuple(x.shape)
    rows = x.reshape(len(x), -1).ne(0).any(1).nonzero().squeeze(1)
    return rows, x[rows], tuple(x.shape)


def from_rows(indices, values, shape):
    """A coalesced sparse COO tensor; duplicate indices are summed."""
    return torch.sparse_coo_tensor(indices[None], values, shape, check_invariants=False).coalesce()


# all_gather_single is the name from torch 2.14 on; GPU machines may run older torch
all_gather_tensor = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def densify(x):
    return x.to_dense() if x.is_sparse else x


def world(group):
    return dist.get_rank(group), dist.get_world_size(group)


def gather_sizes(n, group, device):
    """Every rank's count, as a list (one tiny all-gather)."""
    size = dist.get_world_size(group)
    out = torch.empty(size, dtype=torch.int64, device=device)
    all_gather_tensor(out, torch.tensor([n], dtype=torch.int64, device=device), group=group)
    return out.tolist()


def pad_rows(t, length):
    """t with zero rows appended up to length (all_gather needs equal sizes)."""
    if len(t) == length:
        return t
    return torch.cat([t, t.new_zeros((length - len(t), *t.shape[1:]))])


def all_gather_rows(indices, values, group):
    """Every rank's (indices, values), concatenated in rank order: a size exchange, padding to
    the largest count, two all-gathers, padding dropped."""
    size = dist.get_world_size(group)
    counts = gather_sizes(len(indices), group, indices.device)
    longest = max(counts)
    if longest == 0:
        return indices[:0], values[:0]
    all_idx = indices.new_empty(size * longest)
    all_val = values.new_empty((size * longest, *values.shape[1:]))
    all_gather_tensor(all_idx, pad_rows(indices, longest), group=group)
    all_gather_tensor(all_val, pad_rows(values, longest), group=group)
    keep = torch.cat([torch.arange(c, device=indices.device) + r * longest for r, c in enumerate(counts)])
    return all_idx[keep], all_val[keep]
