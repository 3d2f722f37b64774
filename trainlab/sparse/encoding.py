"""What a sparse gradient's indices and values cost on the wire, encoded four ways and three ways.

    index_bytes(ids, rows)     # {"int64": ..., "int32": ..., "delta varint": ..., "bitmap": ...}
    value_bytes(k, row)        # {"fp32": ..., "bf16": ..., "int8 + row scale": ...}
    value_error(values)        # relative error of bf16 and per-row int8 on these values

Indices sorted before encoding: a delta between neighbours is small where rows crowd, and a
LEB128 varint spends one byte per 7 bits of it. A bitmap costs rows / 8 bytes whatever the count,
so it wins once more than 1 row in 64 (int64) or 32 (int32) is present.
"""

import numpy as np
import torch


def _varint_bytes(values):
    """LEB128 length of each non-negative integer: 1 byte per 7 bits, at least 1."""
    bits = np.maximum(1, np.floor(np.log2(np.maximum(values, 1))).astype(np.int64) + 1)
    return (bits + 6) // 7


def index_bytes(ids, rows):
    """Bytes to send the distinct indices in ids, a table of `rows` rows."""
    distinct = np.unique(np.asarray(ids).ravel())
    deltas = np.diff(distinct, prepend=0)
    return {
        "int64": 8 * len(distinct),
        "int32": 4 * len(distinct),
        "delta varint": int(_varint_bytes(deltas).sum()),
        "bitmap": (rows + 7) // 8,
    }


def value_bytes(k, row):
    """Bytes to send k rows of `row` values: fp32, bf16, or int8 with one fp32 scale per row."""
    return {"fp32": 4 * k * row, "bf16": 2 * k * row, "int8 + row scale": k * (row + 4)}


def value_error(values):
    """Relative error (norm of the error / norm of the values) of bf16 and of per-row absmax int8."""
    values = values.float()
    norm = values.norm()
    scale = values.abs().amax(dim=-1, keepdim=True).clamp_min(1e-30) / 127
    int8 = (values / scale).round().clamp(-127, 127) * scale
    return {
        "bf16": float((values.bfloat16().float() - values).norm() / norm),
        "int8 + row scale": float((int8 - values).norm() / norm),
    }


def gradient_rows(k, row, seed=0):
    """k rows of a Gaussian stand-in for an embedding gradient (what value_error measures on)."""
    return torch.randn(k, row, generator=torch.Generator().manual_seed(seed))
