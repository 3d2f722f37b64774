"""The workbook's reference loop as a plain script (healthy by construction)."""

from trainlab.loop import TrainConfig, train

record = train(TrainConfig(device="cpu", epochs=1), progress=False)
print(record.summary())
