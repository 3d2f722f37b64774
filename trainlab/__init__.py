"""trainlab: the package behind the workbook's notebooks.

    import trainlab
    params = trainlab.setup(device="auto")          # validate parameters, self-check
    record = trainlab.train(params.train_config())  # the reference loop -> RunRecord

One idea per module: data (data, synthetic, cifar), models, loop and record, device,
runner (child processes), labs and checks (exercises), viz (plots and widgets), params
(notebook parameters), notebooks (the learner-notebook generator).
"""

from trainlab.data import DataConfig, load_images  # noqa: F401
from trainlab.loop import TrainConfig, train  # noqa: F401
from trainlab.models import ModelConfig, build_model  # noqa: F401
from trainlab.params import setup  # noqa: F401
from trainlab.record import RunRecord  # noqa: F401

__version__ = "0.1.0"
