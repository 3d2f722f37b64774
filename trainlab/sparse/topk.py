"""Top-k sparsification with error feedback: a lossy sparse sync on top of an exact pattern.

Each step every rank keeps only the k largest-magnitude entries of (gradient + the error it
carried over), sends those through an exact sparse all-reduce, and carries the entries it
dropped to the next step. Without the carried error, small but consistent gradient
components are dropped forever; with it, they accumulate until they are large enough to be
sent (Stich et al. 2018; Lin et al. 2018, "Deep Gradient Compression").
"""

import torch

from trainlab.sparse import allgather
from trainlab.sparse.common import densify


class TopK:
    def __init__(self, fraction, error_feedback=True, exact=allgather.allreduce):
        if not 0 < fraction <= 1:
            raise ValueError(f"fraction={fraction}: keep a share of entries in (0, 1]")
        self.fraction, self.error_feedback, self.exact = fraction, error_feedback, exact
        self.errors = {}  # parameter name -> carried error (dense, flat)

    def __call__(self, name, grad, group=None):
        """The mean over ranks of every rank's top-k of (grad + error), as a dense tensor."""
        flat = densify(grad).reshape(-1)
        acc = flat + self.errors[name] if name in self.errors else flat.clone()
        k = max(1, int(self.fraction * acc.numel()))
        keep = acc.abs().topk(k).indices
        if self.error_feedback:
            error = acc.clone()
            error[keep] = 0
            self.errors[name] = error
        sent = torch.sparse_coo_tensor(keep[None], acc[keep], acc.shape, check_invariants=False)
        return densify(self.exact(sent, group=group, average=True)).reshape(grad.shape)
