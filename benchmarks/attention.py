"""Module 04's counter-example: naive attention against scaled_dot_product_attention.

    python -m benchmarks.attention [--device auto]

The workbook ViT's attention shape (4 heads of 16, batch 4) at 64 to 2048 tokens: peak bytes
of one forward and backward (allocator on GPUs, live tensors on CPU), median time, and the
ratios. Writes results/attention.json.
"""

from benchmarks.common import kernel_device, machine, table, write_result
from trainlab.kernels import attention

SUITE = "kernels"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 2


def main(argv=None):
    device = kernel_device(argv, __doc__.splitlines()[0])
    rows = attention.compare((64, 256, 1024, 2048), batch=4, device=device, repeats=5)
    ratios = attention.ratios(rows)
    print(
        table(
            [
                {
                    **r,
                    "peak MiB": f"{r['peak_bytes'] / 2**20:.1f}",
                    "ms": f"{r['ms']:.2f}",
                    "scores MiB": f"{r['scores_bytes'] / 2**20:.1f}",
                }
                for r in rows
            ],
            ["seq", "impl", "peak MiB", "scores MiB", "ms", "max_abs_error"],
        )
    )
    print(
        table(
            [
                {"seq": r["seq"], "memory naive/sdpa": f"{r['memory']:.1f}x", "time naive/sdpa": f"{r['time']:.2f}x"}
                for r in ratios
            ],
            ["seq", "memory naive/sdpa", "time naive/sdpa"],
        )
    )
    payload = {"benchmark": "attention", "machine": machine(device), "rows": rows, "ratios": ratios}
    print("wrote", write_result("attention", payload))
    return payload


if __name__ == "__main__":
    main()
