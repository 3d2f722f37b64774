"""Class: real script hf_trainer_lm. Broken (fp16-master-weights): the model is cast to half precision with .half() before it is handed to Trainer (to save memory), so AdamW keeps its weights and moment estimates in float16 with no fp32 master copy: eps=1e-8 and the squared gradients underflow to zero in float16, and the very first AdamW step divides by zero and turns every weight into NaN (the first forward and backward are finite).

Planted held-out bug: the original script from benchmarks/real_scripts/ours/hf_trainer_lm.py with one
minimal edit (.half() on the model before Trainer); the original module docstring follows as a second string."""
"""A small causal language model trained with Hugging Face's Trainer, written in the style of the
transformers documentation (a config, a model from it, TrainingArguments, Trainer.train). Written for
trainlab's tests, not taken from anywhere: a randomly initialised two-layer GPT-2 on synthetic token
sequences with structure to learn (each sequence counts up from a random start, modulo the
vocabulary), so no weights, tokenizer or data are downloaded."""

import tempfile

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, set_seed


class CountingSequences(Dataset):
    def __init__(self, samples=2048, length=32, vocab=128, seed=0):
        g = torch.Generator().manual_seed(seed)
        starts = torch.randint(0, vocab, (samples, 1), generator=g)
        steps = torch.randint(1, 4, (samples, 1), generator=g)
        self.ids = (starts + steps * torch.arange(length)) % vocab

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


if __name__ == "__main__":
    set_seed(0)
    config = GPT2Config(vocab_size=128, n_positions=32, n_embd=64, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(config).half()
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, per_device_train_batch_size=16, learning_rate=1e-3,
                                 num_train_epochs=1, logging_steps=20, save_strategy="no", report_to=[],
                                 use_cpu=True, disable_tqdm=True, seed=0)
        trainer = Trainer(model=model, args=args, train_dataset=CountingSequences())
        trainer.train()
