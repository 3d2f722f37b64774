"""The machine at hand, queried and measured: what it is, how fast it multiplies and moves bytes,
and where the training step's operators sit against those two roofs.

    hardware.probe("cuda")                  # name, memory, capability, bf16/TF32/fp8, SMs, MIG, peers
    hardware.matmul_rows("cpu")             # FLOP/s by dtype and shape: aligned vs odd sizes
    hardware.roofline_ops("cpu")            # the ViT step's main operators: FLOPs/byte and FLOP/s
    hardware.mfu("cpu")                     # model FLOPs per step / step time / peak

Everything here is measured in the call, on the device given; published figures for hardware
that is not here live in data/published.toml and are set beside these in notebook 05.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from trainlab.processes import runner
from trainlab.workbook import published
from trainlab.workbook.display import while_working
from trainlab.measurement import timing

CPU_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def probe(device="cpu"):
    """What this device is, as far as it can be queried. GPU: name, memory, compute capability,
    SM count, L2, formats its tensor cores support, MIG mode (nvidia-smi) and peer access
    between visible GPUs. CPU: model, cores, caches, and the vector and matrix instructions
    low precision depends on."""
    device = torch.device(device)
    if device.type == "cuda":
        return _probe_gpu(device)
    flags = _cpu_flags()
    return {
        "kind": "cpu",
        "name": _cpu_model(),
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "caches": _cpu_caches(),
        "avx2": "avx2" in flags,
        "avx512": "avx512f" in flags,
        "bf16_native": bool({"avx512_bf16", "amx_bf16"} & flags),
        "amx": "amx_tile" in flags,
        "fp16_native": bool({"avx512_fp16", "amx_fp16"} & flags),
    }


def _probe_gpu(device):
    props = torch.cuda.get_device_properties(device)
    capability = (props.major, props.minor)
    count = torch.cuda.device_count()
    peers = {f"{a}->{b}": torch.cuda.can_device_access_peer(a, b) for a in range(count) for b in range(count) if a != b}
    return {
        "kind": "cuda",
        "name": props.name,
        "memory_bytes": props.total_memory,
        "capability": f"{props.major}.{props.minor}",
        "sms": props.multi_processor_count,
        # bf16 in hardware from Ampere (8.0); is_bf16_supported() also counts emulation on older GPUs
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "bf16": capability >= (8, 0),
        "tf32": capability >= (8, 0),
        "fp8": capability >= (8, 9),
        "visible_gpus": count,
        "peer_access": peers,
        "mig": _nvidia_smi("mig.mode.current", props),
    }


def _nvidia_smi(field, props):
    """One nvidia-smi query field for this GPU, or None where nvidia-smi is absent or says n/a."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu=name,{field}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        name, _, value = line.rpartition(",")
        if name.strip() == props.name and value.strip() not in ("[N/A]", "N/A"):
            return value.strip()
    return None


def _cpu_flags():
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    match = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    return set(match.group(1).split()) if match else set()


def _cpu_model():
    try:
        match = re.search(r"^model name\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
    except OSError:
        match = None
    return match.group(1).strip() if match else "unknown CPU"


def _cpu_caches():
    """{"L1d": "48K", "L2": "2048K", ...} for core 0, from sysfs (empty where there is none)."""
    caches = {}
    for index in sorted(CPU_CACHES.glob("index*")):
        try:
            level, kind, size = ((index / name).read_text().strip() for name in ("level", "type", "size"))
        except OSError:
            continue
        caches[f"L{level}" + {"Data": "d", "Instruction": "i"}.get(kind, "")] = size
    return caches


# ---------------------------------------------------------------- micro-benchmarks
def matmul_flops(n, dtype=torch.float32, device="cpu", repeats=5):
    """FLOP/s of an n x n x n matmul (2 n^3 FLOPs), the best of `repeats` after warm-up."""
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(n, n, generator=gen).to(device, dtype) for _ in range(2))
    took = timing.measure(lambda: a @ b, device=device, warmup=2, repeats=repeats, flush=False)
    return 2 * n**3 / min(took.samples)


def matmul_rows(device="cpu", dtypes=None, sizes=None, repeats=5):
    """One row per (dtype, size): FLOP/s, for sizes that are multiples of 64 and the same minus
    one - on tensor cores odd sizes fall off the fast path (padding, or no tensor cores at all)."""
    device = torch.device(device)
    dtypes = dtypes or (
        (torch.float32, torch.bfloat16, torch.float16) if device.type == "cuda" else (torch.float32, torch.bfloat16)
    )
    sizes = sizes or ((4096, 4095, 8192, 8191) if device.type == "cuda" else (512, 511, 1024, 1023))
    rows = []
    for dtype in dtypes:
        for n in sizes:
            rows.append(
                {
                    "dtype": str(dtype).replace("torch.", ""),
                    "n": n,
                    "aligned": n % 64 == 0,
                    "flops": matmul_flops(n, dtype, device, repeats),
                }
            )
    return rows


def host_device_bandwidth(device="cuda", nbytes=256 << 20, repeats=5):
    """Bytes/s from host memory to the GPU, pinned and pageable; None on a CPU (nothing crosses)."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    out = {}
    for pinned in (True, False):
        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
        took = timing.measure(
            lambda: host.to(device, non_blocking=pinned), device=device, warmup=1, repeats=repeats, flush=False
        )
        out["pinned" if pinned else "pageable"] = nbytes / min(took.samples)
    return out


def bus_bandwidth(algorithm_bandwidth, world_size):
    """nccl-tests' bus bandwidth of an all-reduce: algorithm bandwidth (bytes / time) x 2(N-1)/N,
    the share of the data every link carries in a ring - comparable with the link's own speed."""
    return algorithm_bandwidth * 2 * (world_size - 1) / world_size


# ---------------------------------------------------------------- roofline and MFU
def _vit_step_ops(batch, tokens, width, device):
    """The ViT step's main operators at its shapes: (name, fn, FLOPs, bytes moved)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch * tokens, width, generator=gen).to(device)
    w = torch.randn(4 * width, width, generator=gen).to(device)
    h = torch.randn(batch * tokens, 4 * width, generator=gen).to(device)
    q = torch.randn(batch, 4, tokens, width // 4, generator=gen).to(device)
    ln = torch.nn.LayerNorm(width).to(device)
    m, e = batch * tokens, 4  # rows, bytes per fp32 value
    return [
        (
            "linear (MLP up)",
            lambda: F.linear(x, w),
            2 * m * width * 4 * width,
            e * (m * width + 4 * width * width + m * 4 * width),
        ),
        (
            "attention (sdpa)",
            lambda: F.scaled_dot_product_attention(q, q, q),
            4 * batch * 4 * tokens * tokens * (width // 4),
            e * 4 * q.numel(),
        ),
        ("GELU", lambda: F.gelu(h), h.numel(), e * 2 * h.numel()),
        ("LayerNorm", lambda: ln(x), 5 * x.numel(), e * 2 * x.numel()),
        ("residual add", lambda: x + x, x.numel(), e * 3 * x.numel()),
    ]


def roofline_ops(device="cpu", batch=64, tokens=64, width=64, repeats=10):
    """Each main operator of the ViT's step, measured alone at its shapes: FLOPs (matmul-like ops
    by their formula, elementwise ops counted as a few per element: a lower bound), bytes it must
    move at least (inputs and output once), arithmetic intensity and achieved FLOP/s."""
    rows = []
    for name, fn, flops, nbytes in _vit_step_ops(batch, tokens, width, torch.device(device)):
        took = timing.measure(fn, device=device, warmup=2, repeats=repeats, flush=True)
        rows.append(
            {"op": name, "flops": flops, "bytes": nbytes, "intensity": flops / nbytes, "achieved": flops / took.median}
        )
    return rows


def ridge(peak_flops, bandwidth):
    """The arithmetic intensity (FLOPs/byte) where the roofs meet: below it an op is memory-bound."""
    return peak_flops / bandwidth


def step_flops(model, batch):
    """FLOPs of one forward and backward of model on batch, counted by FlopCounterMode."""
    x, y = batch
    with FlopCounterMode(display=False) as counter:
        F.cross_entropy(model(x), y).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


@while_working("the reference loop, timed, and its FLOPs per step counted")
def mfu(device="cpu", steps=30, batch_size=128, precision="fp32", peak_flops=None):
    """Model FLOPs utilisation of the reference loop (trainlab.loop: the workbook CNN at its
    default settings, in `precision`): FLOPs per step (FlopCounterMode) x steps per second / peak.
    peak_flops: the device's measured matmul peak in that precision unless given (a published one)."""
    from trainlab.data import DataConfig, load_images
    from trainlab.device import autocast_dtype
    from trainlab.loop import TrainConfig, train
    from trainlab.models import ModelConfig, build_model

    device = torch.device(device)
    cfg = TrainConfig(
        device=str(device),
        precision=precision,
        max_steps=steps,
        epochs=100,
        batch_size=batch_size,
        log_every=max(steps // 8, 1),
    )  # several intervals: their median resists a noisy neighbour
    record = train(cfg, images=load_images(DataConfig()), progress=False)
    intervals = sorted(record.images_per_s[1:] or record.images_per_s)  # the first interval holds the warm-up
    images_per_s = intervals[len(intervals) // 2]
    model = build_model(ModelConfig()).to(device)
    gen = torch.Generator().manual_seed(0)
    batch = (
        torch.randn(batch_size, 3, 32, 32, generator=gen).to(device),
        torch.randint(0, 10, (batch_size,), generator=gen).to(device),
    )
    flops = step_flops(model, batch)  # the same count whatever the precision
    dtype = autocast_dtype(precision) or torch.float32
    peak = peak_flops or max(r["flops"] for r in matmul_rows(device, dtypes=(dtype,), repeats=10))
    achieved = flops * images_per_s / batch_size
    return {
        "flops_per_step": flops,
        "images_per_s": images_per_s,
        "achieved_flops": achieved,
        "peak_flops": peak,
        "mfu": achieved / peak,
        "batch_size": batch_size,
        "precision": precision,
    }


@while_working(lambda device="cpu", world_size=2, *a, **k: f"{world_size} ranks: all-reduce at each message size")
def allreduce_rows(device="cpu", world_size=2, sizes_mb=(1, 4, 16, 64), timeout=180):
    """All-reduce bus bandwidth across world_size ranks (trainlab.memory.busbw in a torchrun
    launch); raises with the failing rank's message when the launch fails."""
    if world_size < 2:
        raise ValueError(f"world_size={world_size}: an all-reduce moves nothing on one rank; use 2 or more")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "busbw.json"
        result = runner.run_distributed(
            module="trainlab.memory.busbw",
            nproc=world_size,
            timeout=timeout,
            retry_crash=True,
            stream=False,
            args=[out, "--device", str(device), "--sizes-mb", *sizes_mb],
        )
        if not result.ok:
            raise RuntimeError(f"the all-reduce launch failed: {result.error}")
        return json.loads(out.read_text())


# ---------------------------------------------------------------- published figures, side by side
GPUS = ("a100", "h100", "h200", "b200")
FIELDS = ("memory", "hbm-bandwidth", "bf16", "fp8", "nvlink", "mig", "mig-slice")


def published_rows():
    """One row per GPU with its published figures (data/published.toml), None where a figure does
    not exist (A100's tensor cores have no fp8) or is not in the data file (B200's MIG slice size)."""
    known = published.everything()

    def figure(gpu, field):
        key = f"{gpu}-{field}"
        return None if key not in known else published.link(key) if known[key].direction else known[key]

    return [{"gpu": gpu, **{field: figure(gpu, field) for field in FIELDS}} for gpu in GPUS]


def consequences(row, model_params=70e9, bytes_per_param=16):
    """What a GPU's published figures imply: its ridge point in bf16 (FLOPs per byte above which
    an op is compute-bound), how many of it hold a model's mixed-precision Adam states under ZeRO-3
    (states only, no activations), and the parameters one MIG slice holds the states of."""
    memory = row["memory"].value * 1e9
    ridge_bf16 = row["bf16"].value * 1e12 / (row["hbm-bandwidth"].value * 1e12)
    slice_bytes = row["mig-slice"].value * 1e9 if row["mig-slice"] else None
    return {
        "gpu": row["gpu"],
        "ridge_bf16": ridge_bf16,
        "gpus_for_states": -(-model_params * bytes_per_param // memory),
        "params_per_mig_slice": slice_bytes / bytes_per_param if slice_bytes else None,
    }
