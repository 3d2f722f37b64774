"""Module 04's validation beyond unit tests: peak memory of each fused kernel against eager, and
convergence parity of the ViT trained 20 steps with each kernel against a rounding control;
every autotuning configuration of the chain kernel checked (timed on GPUs).

    python -m benchmarks.kernel_validation [--device auto]

Writes results/kernel_validation.json.
"""

from benchmarks.common import kernel_device, machine, table, write_result
from trainlab.kernels import autotune, parity, peak_memory, triton_env

SUITE = "kernels"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 3


def main(argv=None):
    device = kernel_device(argv, __doc__.splitlines()[0])
    mem = peak_memory.compare(device)
    print(
        table(
            [
                {
                    "kernel": r["kernel"],
                    "case": r["what"],
                    "eager MiB": f"{r['eager_bytes'] / 2**20:.1f}",
                    "fused MiB": f"{r['fused_bytes'] / 2**20:.1f}",
                    "scale MiB": f"{r['scale_bytes'] / 2**20:.0f}",
                }
                for r in mem
            ],
            ["kernel", "case", "eager MiB", "fused MiB", "scale MiB"],
        )
    )
    control = parity.rounding_control(20)
    runs = [parity.compare(kernel, 20) for kernel in parity.KERNELS]  # the C++ kernels, on CPU
    print(
        table(
            [
                {
                    "kernel": r["kernel"],
                    "grad error (step 1)": f"{r['grad_error']:.1e}",
                    "update error (step 1)": f"{r['step_error']:.1e}",
                    "loss drop": f"{r['loss_drop']:.3f}",
                    "max loss diff": f"{r['max_loss_diff']:.1e}",
                    "drift": f"{r['drift']:.2e}",
                    "x control": f"{r['drift'] / control:.2f}",
                }
                for r in runs
            ],
            [
                "kernel",
                "grad error (step 1)",
                "update error (step 1)",
                "loss drop",
                "max loss diff",
                "drift",
                "x control",
            ],
        )
    )
    print(f"rounding control drift {control:.2e}")
    tuned = autotune.run(device if device.type == "cuda" else "cpu") if triton_env.AVAILABLE else None
    if tuned:
        print(table(tuned["rows"], list(tuned["rows"][0])))
        print(
            f"hand-picked {tuned['hand_picked']}, autotuner's choice {tuned['best'] or '- (not timed without a GPU)'}"
        )
    payload = {
        "benchmark": "kernel_validation",
        "machine": machine(device),
        "memory": mem,
        "control_drift": control,
        "parity": [
            {k: v for k, v in r.items() if not k.endswith("_losses")} | {"fused_losses": r["fused_losses"]}
            for r in runs
        ],
        "autotune": tuned,
    }
    print("wrote", write_result("kernel_validation", payload))
    return payload


if __name__ == "__main__":
    main()
