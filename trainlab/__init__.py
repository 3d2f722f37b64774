"""trainlab: the package behind the workbook's notebooks.

    import trainlab
    params = trainlab.setup(device="auto")          # validate parameters, self-check
    record = trainlab.train(params.train_config())  # the reference loop -> RunRecord

The core every module trains with:
    data/ models loop record device     images, models, the reference loop, device and precision
    runner distributed/                 child processes and torchrun launches; multi-rank machinery
    paths atomic compat                 where things are, atomic writes, torch APIs newer than 2.11
Notebook plumbing:
    params display plots                notebook parameters; text and tables; run and data plots
    labs checks/ measure notebooks      the lab format, exercise checks, measuring runs, learner notebooks
The tool:
    doctor/                             `python -m trainlab.doctor script.py`
One package per notebook, named as its labs/ and tests/ folders:
    start/ (00)  debugging/ (01)  fsdp/ (02)  sparse/ (03)  kernels/ (04)
"""

from trainlab.data import DataConfig, load_images  # noqa: F401
from trainlab.loop import TrainConfig, train  # noqa: F401
from trainlab.models import ModelConfig, build_model  # noqa: F401
from trainlab.params import setup  # noqa: F401
from trainlab.record import RunRecord  # noqa: F401

__version__ = "0.1.0"
