"""The backend's own sparse all-reduce: gloo reduces sparse COO tensors (by exchanging every
rank's indices and values); nccl has no sparse collectives, so there this raises."""

import torch.distributed as dist

from trainlab.sparse.common import from_rows, to_rows


def allreduce(x, group=None, average=False):
    if dist.get_backend(group) != "gloo":
        raise NotImplementedError(
            f"the {dist.get_backend(group)} backend has no sparse all-reduce; use "
            "allgather, partitioned or recursive_doubling (built on dense collectives)"
        )
    out = from_rows(*to_rows(x))
    dist.all_reduce(out, group=group)
    out = out.coalesce()
    return out / dist.get_world_size(group) if average else out
