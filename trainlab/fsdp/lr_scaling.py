"""The learning rate when the global batch grows: linear scaling with warmup against none.

    rows = lr_scaling.run(device, batches=(64, 256, 1024), epochs=4)
    plots.plot_lr_scaling(rows)

Data parallelism on N ranks multiplies the global batch by N. For the same number of epochs
that is N times fewer optimizer steps, and with the learning rate unchanged each step moves the
weights about as far as before, so training covers less ground. The linear scaling rule
(Goyal et al., 2017) multiplies the learning rate by the batch ratio and warms it up from a small
value, because the large rate is unstable while the weights are still random. DDP on N ranks
computes exactly the gradient of one process at the global batch (module 02 shows the parity),
so one process at the global batch stands in for N ranks here.

Each run is the reference loop (`trainlab.loop`: SGD with Nesterov momentum, a one-cycle
schedule whose warmup is `warmup_frac` of the steps) on the workbook's CIFAR CNN.
Used by notebook 02 (scaling the CIFAR CNN).
"""

from dataclasses import replace

from trainlab.data import DataConfig, load_images
from trainlab.workbook.display import while_working
from trainlab.loop import TrainConfig, train
from trainlab.models import ModelConfig

BASE_BATCH, BASE_LR = 128, 0.05  # the reference loop's batch and peak LR
ARMS = {
    "linear scaling + warmup": dict(scale=True, warmup_frac=0.2),
    "same LR as batch 128": dict(scale=False, warmup_frac=0.2),
}


@while_working(lambda *a, **k: "the CNN at each global batch, each LR rule (accuracy after the same epochs)")
def run(device="auto", batches=(64, 256, 1024), epochs=4, n_train=20_000, width=16, arms=ARMS, seed=0):
    """One run per (arm, global batch): test accuracy after `epochs` epochs, and the run itself."""
    data = DataConfig(n_train=n_train, n_test=2_000)
    images = load_images(data)
    base = TrainConfig(
        model=ModelConfig(name="cnn", width=width),
        data=data,
        device=str(device),
        epochs=epochs,
        lr=BASE_LR,
        seed=seed,
        log_every=10,
    )
    rows = []
    for arm, how in arms.items():
        for batch in batches:
            lr = BASE_LR * batch / BASE_BATCH if how["scale"] else BASE_LR
            record = train(
                replace(base, batch_size=batch, lr=lr, warmup_frac=how["warmup_frac"]), images=images, progress=False
            )
            rows.append(
                {
                    "arm": arm,
                    "batch": batch,
                    "lr": lr,
                    "steps": len(record.lr),
                    "test_accuracy": record.test_accuracy[-1],
                    "final_loss": record.loss[-1],
                    "diverged": bool(record.stopped),
                }
            )
    return rows
