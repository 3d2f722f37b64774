"""The workbook's CIFAR models: an MLP, a small CNN that trains fast on a CPU, a
ResNet-style net for GPUs and a small vision transformer (module 02's FSDP model, module 04's
profiled step). All take (B, 3, 32, 32) float images and return (B, 10) logits. The conv nets
work in channels_last and offer BatchNorm or GroupNorm: GroupNorm has no per-rank batch
statistics, so the distributed modules can demand exact parity with one process; the ViT
uses LayerNorm.

    model = build_model(ModelConfig(name="vit", width=64, depth=6))

Used by notebook 00 (the baseline run), the labs and every module after it.
"""

from dataclasses import dataclass

import torch
from torch import nn

MODELS = ("mlp", "cnn", "resnet", "vit")
NORMS = ("batch", "group", "none")


@dataclass(frozen=True)
class ModelConfig:
    name: str = "cnn"  # "mlp", "cnn", "resnet" or "vit"
    width: int = 32  # channels of the first stage (hidden units / 8 for the MLP; the ViT's token width)
    norm: str = "batch"  # "batch", "group" (distributed parity) or "none"; the ViT always uses LayerNorm
    depth: int = 6  # the ViT's transformer blocks
    num_classes: int = 10


def norm_layer(kind, channels):
    if kind == "batch":
        return nn.BatchNorm2d(channels)
    if kind == "group":
        return nn.GroupNorm(min(8, channels), channels)
    return nn.Identity()


def conv_block(c_in, c_out, norm):
    """3x3 conv -> norm -> ReLU: the unit every CNN here is made of."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=norm == "none"),
        norm_layer(norm, c_out),
        nn.ReLU(inplace=True),
    )


class MLP(nn.Module):
    """Flatten -> two hidden layers -> logits. Fast on any CPU; weak on images."""

    def __init__(self, width=32, num_classes=10):
        super().__init__()
        hidden = 8 * width
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(3 * 32 * 32, hidden),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, hidden),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x):  # (B, 3, 32, 32) -> (B, classes)
        return self.net(x)


class SmallCNN(nn.Module):
    """Three conv stages with pooling, then a linear head: ~1.5k img/s training on 2 CPU cores."""

    def __init__(self, width=32, norm="batch", num_classes=10):
        super().__init__()
        w = width
        self.features = nn.Sequential(
            conv_block(3, w, norm),
            nn.MaxPool2d(2),  # (B, w, 16, 16)
            conv_block(w, 2 * w, norm),
            nn.MaxPool2d(2),  # (B, 2w, 8, 8)
            conv_block(2 * w, 4 * w, norm),
            nn.AdaptiveMaxPool2d(1),  # (B, 4w, 1, 1)
        )
        self.head = zero_init_head(nn.Linear(4 * w, num_classes))

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class Residual(nn.Module):
    """x + f(x), with f two conv blocks."""

    def __init__(self, channels, norm):
        super().__init__()
        self.body = nn.Sequential(conv_block(channels, channels, norm), conv_block(channels, channels, norm))

    def forward(self, x):
        return x + self.body(x)


class ResNet(nn.Module):
    """A ResNet-9-style CIFAR net (the DAWNBench design): prep, three stages, two residuals."""

    def __init__(self, width=64, norm="batch", num_classes=10):
        super().__init__()
        w = width
        self.blocks = nn.Sequential(
            conv_block(3, w, norm),  # (B, w, 32, 32)
            conv_block(w, 2 * w, norm),
            nn.MaxPool2d(2),
            Residual(2 * w, norm),  # (B, 2w, 16, 16)
            conv_block(2 * w, 4 * w, norm),
            nn.MaxPool2d(2),  # (B, 4w, 8, 8)
            conv_block(4 * w, 8 * w, norm),
            nn.MaxPool2d(2),
            Residual(8 * w, norm),  # (B, 8w, 4, 4)
            nn.AdaptiveMaxPool2d(1),
            nn.Flatten(),
        )
        self.head = zero_init_head(nn.Linear(8 * w, num_classes))

    def forward(self, x):
        return self.head(self.blocks(x))


class ViTBlock(nn.Module):
    """Pre-norm transformer block: x + attention(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, dim, heads, mlp_ratio=4):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    """A small vision transformer for 32x32 images: 4x4 patches (64 tokens), `depth` blocks.

    Module 02's model: transformer blocks are the natural FSDP unit, and every layer is
    smooth (LayerNorm, GELU, softmax, mean pooling: no max-pool or ReLU kinks), so runs that
    differ only in rounding (1 vs N ranks) stay within rounding of each other.
    """

    def __init__(self, dim=64, depth=6, heads=4, num_classes=10, patch=4):
        super().__init__()
        self.embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.randn((32 // patch) ** 2, dim) * 0.02)  # (tokens, dim): shards evenly
        self.blocks = nn.ModuleList(ViTBlock(dim, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = zero_init_head(nn.Linear(dim, num_classes))

    @torch.no_grad()
    def init_weights(self):
        """Initialise every parameter in place, as the constructor does (same distributions): what
        module 02's meta-device initialisation calls once the parameters are sharded."""
        for module in self.modules():
            if isinstance(module, nn.MultiheadAttention):
                module._reset_parameters()
            elif isinstance(module, (nn.Linear, nn.Conv2d, nn.LayerNorm)):
                module.reset_parameters()
        nn.init.normal_(self.pos, std=0.02)
        zero_init_head(self.head)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos  # (B, tokens, dim)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(1))


def zero_init_head(head):
    """Zero the classifier so every class starts equally likely: loss at init = ln(classes)."""
    nn.init.zeros_(head.weight)
    nn.init.zeros_(head.bias)
    return head


def build_model(cfg=ModelConfig()):
    if cfg.name not in MODELS:
        raise ValueError(f"model {cfg.name!r} is not known; use one of {MODELS}")
    if cfg.norm not in NORMS:
        raise ValueError(f"norm {cfg.norm!r} is not known; use one of {NORMS}")
    if cfg.name == "mlp":
        return MLP(cfg.width, cfg.num_classes)
    if cfg.name == "cnn":
        return SmallCNN(cfg.width, cfg.norm, cfg.num_classes)
    if cfg.name == "vit":
        return ViT(dim=cfg.width, depth=cfg.depth, num_classes=cfg.num_classes)
    return ResNet(cfg.width, cfg.norm, cfg.num_classes)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())
