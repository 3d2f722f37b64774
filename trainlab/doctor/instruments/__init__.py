"""The probe's instruments, one per file, each a listener on the Probe's events
(`trainlab.doctor.probe.EVENTS`) that declares the summary keys it provides (PROVIDES):

- `clock.py`: where each step's time goes; host reads (syncs); data-loader waits and per-sample fetches;
- `syncs.py`: host reads counted where they happen (a dispatch mode over the operations that wait for the device);
- `losses.py`: the loss of every backward; what loss functions are handed; the gradient at the logits;
- `captures.py`: the model, its initial state, a few batches and targets, what the batches held;
- `gradients.py`: stale gradients, gradient flow, norms at the step, clipping;
- `updates.py`: the optimizers, learning rates, update-to-weight ratios (also of updates made by hand);
- `formats.py`: what number formats lose (zero gradients, updates rounded away, rewritten weights);
- `graphs.py`: autograd graphs kept alive across steps, by the tensors that keep them;
- `forward.py`: dtypes, dead ReLUs, model outputs, the first module to make inf/NaN, parameters used;
- `loads.py`: torch.compile run eagerly, weights loaded from checkpoints;
- `modes.py`: whether training steps run the model (its BatchNorm and Dropout) in train() mode;
- `task.py`: what the model is trained to do (classification, language model, regression, GAN);
- `base.py`: the Instrument base, the medians, what wraps a model (DDP, FSDP).
A multi-rank run adds the rank's own instruments (`trainlab.doctor.ranks`).
"""

from trainlab.doctor.instruments.captures import Captures
from trainlab.doctor.instruments.clock import Clock
from trainlab.doctor.instruments.formats import Formats
from trainlab.doctor.instruments.forward import ForwardStats
from trainlab.doctor.instruments.gradients import Gradients
from trainlab.doctor.instruments.graphs import Graphs
from trainlab.doctor.instruments.loads import Loads
from trainlab.doctor.instruments.losses import Losses
from trainlab.doctor.instruments.modes import Modes
from trainlab.doctor.instruments.task import Task
from trainlab.doctor.instruments.updates import Updates

# The registry the Probe iterates, in the order each event reaches them: adding an instrument is its file
# and one entry here (docs/extending.md).
INSTRUMENTS = (Captures, Losses, Gradients, Updates, Formats, Graphs, ForwardStats, Loads, Clock, Task, Modes)
