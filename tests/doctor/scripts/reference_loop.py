"""The workbook's reference loop as a plain script (healthy by construction)."""

import os

from trainlab.loop import TrainConfig, train

record = train(TrainConfig(device=os.environ.get("TRAINLAB_DEVICE", "cpu"), epochs=1), progress=False)
print(record.summary())
