"""The precision rules: half-precision master weights, gradients that underflow, float64 compute."""

from trainlab.doctor import causes
from trainlab.doctor.report import Finding
from trainlab.doctor.rules.common import full_batch_optimizer, fp16_underflow, fp16_weights, zero_gradient_share


def fp16_master_weights(m, x):
    if fp16_weights(m):
        eps = next((o.get("eps") for o in m["optimizers"] if o.get("eps")), None)
        severity = "critical" if not m["finite"] else "warning"
        return Finding(
            severity,
            "precision",
            "fp16-master-weights",
            "the optimizer updates fp16 parameters (no fp32 master weights)",
            {
                "param_dtypes": ",".join(sorted({d for o in m["optimizers"] for d in o["param_dtypes"]})),
                "optimizer_eps": eps,
                "eps_in_fp16": 0.0 if eps and eps < 6e-8 else eps,
            },
            "keep weights in fp32; use torch.autocast(dtype=torch.float16) with a GradScaler, or bf16",
        )


def bf16_master_weights(m, x):
    bf16 = any("bfloat16" in d for o in m["optimizers"] for d in o["param_dtypes"])
    lost = m.get("lost_update_shares") or []
    share = sum(lost) / len(lost) if lost else None
    if bf16:
        critical = share is not None and share > causes.limit("bf16-master-weights", "doctor")["lost_share"]
        return Finding(
            "critical" if critical else "warning",
            "precision",
            "bf16-master-weights",
            "the optimizer adds its updates to bf16 weights (no fp32 master weights)"
            + (f": {share:.0%} of the weights pushed by a gradient did not move" if share is not None else ""),
            {"lost_update_share": share},
            "keep the weights (and the optimizer's state) in fp32 and compute in bf16 under torch.autocast",
        )


def fp16_gradient_underflow(m, x):
    share = zero_gradient_share(m)
    if fp16_underflow(m):
        return Finding(
            "critical",
            "precision",
            "fp16-gradient-underflow",
            f"{share:.0%} of the gradient entries are exactly zero while the layers compute in fp16",
            {"zero_gradient_share": share},
            "scale the loss before backward with torch.amp.GradScaler (or compute in bf16): gradients "
            "below 2^-24 round to zero in fp16",
        )


def float64_compute(m, x):
    dtypes = m["output_dtypes"]
    if dtypes.get("torch.float64"):
        return Finding(
            "info" if full_batch_optimizer(m) else "critical",
            "precision",
            "float64-compute",
            f"{dtypes['torch.float64']} of {sum(dtypes.values())} layer outputs are float64",
            {"float64_outputs": dtypes["torch.float64"]},
            "keep the model and its inputs in float32 (look for .double() and float64 numpy arrays)",
        )


RULES = [fp16_master_weights, bf16_master_weights, fp16_gradient_underflow, float64_compute]
