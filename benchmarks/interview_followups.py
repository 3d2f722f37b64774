"""The figures the interview answers' follow-ups quote, measured in one run (issue 35).

    python -m benchmarks.interview_followups [--device cpu]

Notebook 01: anomaly mode's cost and the op it names, BatchNorm's train/eval regrouping, activation
scales by initialisation. Notebook 03: one rank's batch encoded four ways, values three ways, and the
hierarchical sync projected over published links. Notebook 04: one operator call's overhead and a
float32 sum's order difference. Notebooks 02 and 05: the ZeRO stage formulas against the ZeRO paper's
published figures. Writes results/interview_followups.json.
"""

import argparse

from benchmarks.common import machine, table, write_result
from trainlab.workbook import published
from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.debugging import followups
from trainlab.device import resolve_device
from trainlab.distributed import planner, scaling
from trainlab.kernels import overheads
from trainlab.sparse import cost, encoding, workload

SUITE = "interview"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 1


def debugging_figures(device):
    images = load_images(DataConfig())
    loader = DeviceLoader(images.train_x, images.train_y, 64, mean=images.mean, std=images.std, device=device)
    model = followups.trained_cnn(loader, device)
    x, y = next(iter(loader))
    held = next(
        iter(
            DeviceLoader(
                images.test_x, images.test_y, 256, mean=images.mean, std=images.std, device=device, train=False
            )
        )
    )
    return {
        "anomaly": followups.anomaly_mode(model, x, y),
        "modes": followups.train_vs_eval(model, *held),
        "init_scales": followups.activation_scale_by_init(depth=10, width=256),
    }


def sparse_figures():
    ids, _ = workload.zipf_bags(128, 50_000, bag=20, classes=10)
    idx = encoding.index_bytes(ids, 50_000)
    k = idx["int32"] // 4
    links = {name: make() for name, make in scaling.LINKS.items()}
    rows = int(1e9 / (workload.EMBED_DIM * 4))
    hierarchical = cost.hierarchical_table(
        rows, rows // 1000, 8, links["nvlink"], links["infiniband"], row=workload.EMBED_DIM
    )
    return {
        "rows_touched": k,
        "index_bytes": idx,
        "value_bytes": encoding.value_bytes(k, workload.EMBED_DIM),
        "value_error": encoding.value_error(encoding.gradient_rows(k, workload.EMBED_DIM)),
        "hierarchical": hierarchical,
    }


def zero_figures():
    ours = {s: planner.plan(7.5e9, 64, s)["device_total"] / 1e9 for s in ("ddp", "zero1", "zero2", "zero3")}
    paper = {
        s: published.get(k).value
        for s, k in (("ddp", "zero-baseline-gb"), ("zero1", "zero1-gb"), ("zero2", "zero2-gb"), ("zero3", "zero3-gb"))
    }
    return [{"stage": s, "formula GB (7.5B, 64 GPUs)": ours[s], "ZeRO paper GB (published)": paper[s]} for s in ours]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    device = resolve_device(parser.parse_args(argv).device)
    device = device if device.type in ("cpu", "cuda") else resolve_device("cpu")
    debugging, sparse, zero = debugging_figures(device), sparse_figures(), zero_figures()
    kernels = {"per_call_us": 1e6 * overheads.per_call_s(device), "order_difference": overheads.order_difference()}
    a, m = debugging["anomaly"], debugging["modes"]
    print(
        f"01: anomaly mode {a['slowdown']:.2f}x a step, named {a['named']}; regrouping changed "
        f"{m['train']['changed_by_regrouping']:.0%} of predictions in train mode, "
        f"{m['eval']['changed_by_regrouping']:.0%} in eval"
    )
    print("01: std after 10 ReLU layers: " + ", ".join(f"{k} {v:.3g}" for k, v in debugging["init_scales"].items()))
    print(table([{k: (f"{v:.1f}" if isinstance(v, float) else v) for k, v in row.items()} for row in zero]))
    print(
        f"03: {sparse['rows_touched']} rows touched; index bytes {sparse['index_bytes']}; "
        f"value bytes {sparse['value_bytes']}"
    )
    print(
        table([{k: (f"{v:.2f}" if isinstance(v, float) else v) for k, v in r.items()} for r in sparse["hierarchical"]])
    )
    print(
        f"04: {kernels['per_call_us']:.2f} us per call; a shuffled float32 sum of "
        f"{kernels['order_difference']['n']:,} "
        f"values differed by {kernels['order_difference']['abs']:.1e}"
    )
    payload = {"machine": machine(device), "debugging": debugging, "sparse": sparse, "zero": zero, "kernels": kernels}
    print("wrote", write_result("interview_followups", payload))
    return payload


if __name__ == "__main__":
    main()
