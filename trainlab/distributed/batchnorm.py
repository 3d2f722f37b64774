"""BatchNorm across ranks for any backend: what `nn.SyncBatchNorm` does, which runs on GPUs only.

    model = convert(model)     # every BatchNorm2d normalises with the statistics of the global batch

Data parallelism splits a batch over ranks; a plain BatchNorm then normalises each rank's share
with that share's own mean and variance, so N ranks train a different model than one process on
the same global batch (and small per-rank batches give noisy statistics). Here each BatchNorm:
- forward: all-reduces [sum(x), sum(x^2), count] per channel (2C + 1 numbers) and normalises
  with the global mean and (biased) variance; running statistics take the global values;
- backward: all-reduces [sum(dy), sum(dy * x_hat)] (2C numbers), the two sums the input gradient
  needs, so dx is the single-process gradient (times N, the ratio DDP's averaging undoes).
Parameter gradients stay local sums: DDP averages them like every other gradient.

Used by module 02's scaling section (`trainlab.fsdp.experiments`) and tests/fsdp.
"""

import torch
import torch.distributed as dist
from torch import nn

DIMS = (0, 2, 3)  # every axis but the channel's


def _per_channel(v):
    return v[None, :, None, None]


class _CrossRankNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps, group):
        c = x.shape[1]
        count = torch.full((1,), x.numel() // c, dtype=x.dtype, device=x.device)
        stats = torch.cat([x.sum(DIMS), (x * x).sum(DIMS), count])
        dist.all_reduce(stats, group=group)
        n = stats[-1]
        mean = stats[:c] / n
        var = (stats[c : 2 * c] / n - mean * mean).clamp_min(0)
        invstd = torch.rsqrt(var + eps)
        x_hat = (x - _per_channel(mean)) * _per_channel(invstd)
        ctx.save_for_backward(x_hat, weight, invstd, n)
        ctx.group = group
        return x_hat * _per_channel(weight) + _per_channel(bias), mean, var, n

    @staticmethod
    def backward(ctx, dy, *_):
        x_hat, weight, invstd, n = ctx.saved_tensors
        c = dy.shape[1]
        local = torch.cat([dy.sum(DIMS), (dy * x_hat).sum(DIMS)])
        sums = local.clone()
        dist.all_reduce(sums, group=ctx.group)
        d_bias, d_weight = sums[:c], sums[c:]
        dx = _per_channel(weight * invstd / n) * (n * dy - _per_channel(d_bias) - x_hat * _per_channel(d_weight))
        return dx, local[c:], local[:c], None, None


class CrossRankBatchNorm2d(nn.BatchNorm2d):
    """nn.BatchNorm2d whose training-mode statistics are those of the global batch (see above)."""

    def __init__(self, *args, group=None, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.affine:
            raise ValueError("CrossRankBatchNorm2d needs affine=True (a weight and a bias to normalise with)")
        self.group = group

    def forward(self, x):
        if not self.training or not dist.is_initialized():
            return super().forward(x)
        y, mean, var, n = _CrossRankNorm.apply(x, self.weight, self.bias, self.eps, self.group)
        if self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked += 1
                weight = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
                unbiased = var * n / (n - 1).clamp_min(1)
                self.running_mean.lerp_(mean, weight)
                self.running_var.lerp_(unbiased, weight)
        return y


def convert(module, group=None):
    """Replace every nn.BatchNorm2d in module by a CrossRankBatchNorm2d holding the same parameters
    and statistics (in place where possible, like nn.SyncBatchNorm.convert_sync_batchnorm)."""
    if isinstance(module, nn.BatchNorm2d) and not isinstance(module, CrossRankBatchNorm2d):
        new = CrossRankBatchNorm2d(
            module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats, group=group
        )
        new.load_state_dict(module.state_dict())
        return new.to(module.weight.device)
    for name, child in module.named_children():
        module.add_module(name, convert(child, group))
    return module
