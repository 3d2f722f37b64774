"""What "fixed" means for each single-process cause: the mechanism a check measures in the learner's run,
one file per category of the doctor's checklist (`trainlab.doctor.causes.CATEGORIES`), mirroring
`trainlab/doctor/rules/`:

- `data.py`: inputs normalised, labels informative, batches that mix classes and differ;
- `model.py`: weights that start different, units that fire;
- `loss.py`: logits into the loss, the gradient at the logits;
- `optimizer.py`: gradients cleared and applied, what the optimizer holds, the LR per step, the size of each
  update, clipping that stands in for a fix, weight decay;
- `device.py`: time waiting for data, host reads per step, graphs released, the batch size;
- `precision.py`: fp32 master weights, updates kept, representable gradients, no float64;
- `outcome.py`: a lab's report kept.

Each category file declares `JUDGES` = {cause id: mechanisms} for its own causes; BY_CAUSE gathers them in the
registry's order. Labs (`LabExercise`) and drills (`trainlab.drill`) judge a cause by its entry here, so adding
a cause's check is one mechanism and one JUDGES entry in its category's file (docs/extending.md).
"""

from trainlab.checks.mechanisms import data, device, loss, model, optimizer, precision
from trainlab.checks.mechanisms.data import BatchesDiffer, ClassesPerBatch, InputsNormalised, LabelsInformative
from trainlab.checks.mechanisms.device import (
    AtMost,
    BatchAtLeast,
    GraphsReleased,
    HostReadsAtMost,
    data_wait_at_most,
    graph_growth_at_most,
    assembled_samples_at_most,
    sample_fetches_at_most,
)
from trainlab.checks.mechanisms.loss import LogitsIntoLoss, LossGradientMatches
from trainlab.checks.mechanisms.model import NoConstantWeights, UnitsFire
from trainlab.checks.mechanisms.optimizer import (
    AllParamsOptimized,
    FreshGradients,
    GradientNotCut,
    GradientsAtStep,
    ScheduleMatches,
    StepEveryBackward,
    StepsChangeWeights,
    UpdatesSized,
    WeightDecayAtMost,
)
from trainlab.checks.mechanisms.outcome import ReportKept
from trainlab.checks.mechanisms.precision import Fp32MasterWeights, GradientsRepresentable, NoFloat64, UpdatesKept
from trainlab.doctor import causes

CATEGORY_FILES = {
    "data": data,
    "model": model,
    "loss": loss,
    "optimizer": optimizer,
    "device": device,
    "precision": precision,
}


def _gather():
    judges = {cause: mechanisms for file in CATEGORY_FILES.values() for cause, mechanisms in file.JUDGES.items()}
    return {cause: judges[cause] for cause in causes.ALL if cause in judges}


# cause id -> what must hold in the learner's run; what drills judge each generated script by
BY_CAUSE = _gather()

__all__ = [
    "AllParamsOptimized",
    "AtMost",
    "BY_CAUSE",
    "BatchAtLeast",
    "BatchesDiffer",
    "ClassesPerBatch",
    "Fp32MasterWeights",
    "FreshGradients",
    "GradientNotCut",
    "GradientsAtStep",
    "GradientsRepresentable",
    "GraphsReleased",
    "HostReadsAtMost",
    "InputsNormalised",
    "LabelsInformative",
    "LogitsIntoLoss",
    "LossGradientMatches",
    "NoConstantWeights",
    "NoFloat64",
    "ReportKept",
    "ScheduleMatches",
    "StepEveryBackward",
    "StepsChangeWeights",
    "UnitsFire",
    "UpdatesKept",
    "UpdatesSized",
    "WeightDecayAtMost",
    "data_wait_at_most",
    "graph_growth_at_most",
    "assembled_samples_at_most",
    "sample_fetches_at_most",
]
