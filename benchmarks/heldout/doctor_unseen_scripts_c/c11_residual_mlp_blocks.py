"""Class: deep residual MLP for tabular classification (pre-norm residual blocks, stem/blocks/head layout, AdamW with a short linear warmup, minibatches drawn by a torch.Generator). Broken (params-not-in-optimizer): the residual blocks are kept in a plain Python list instead of nn.ModuleList, so they are not registered as submodules: model.parameters() (and so AdamW, state_dict and .to()) never sees them, and the four blocks stay at their random initialisation while only the stem, final norm and head train.

What a user sees: the printed parameter count is about 1.8k where the architecture implies about
69k; the run still learns (the stem and head fit through the fixed random blocks), but plateaus
clearly below what the model should reach on this teacher-generated task.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

D_IN = 20
WIDTH = 64
DEPTH = 4
N_CLASSES = 5
BATCH = 128
STEPS = 300
WARMUP = 20
LR = 2e-3


class ResidualBlock(nn.Module):
    def __init__(self, width, expansion=2, dropout=0.05):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, expansion * width)
        self.fc2 = nn.Linear(expansion * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return x + self.dropout(self.fc2(F.gelu(self.fc1(self.norm(x)))))


class ResidualMLP(nn.Module):
    def __init__(self, d_in, width, depth, n_classes):
        super().__init__()
        self.stem = nn.Linear(d_in, width)
        self.blocks = [ResidualBlock(width) for _ in range(depth)]
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, n_classes)

    def forward(self, x):
        h = self.stem(x)
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))


def teacher_data(n, rng, teacher):
    w1, w2 = teacher
    x = rng.normal(size=(n, D_IN)).astype(np.float32)
    scores = np.tanh(x @ w1) @ w2
    return torch.from_numpy(x), torch.from_numpy(scores.argmax(1).astype(np.int64))


@torch.no_grad()
def accuracy(model, x, y):
    model.eval()
    acc = (model(x).argmax(1) == y).float().mean().item()
    model.train()
    return acc


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    teacher = (rng.normal(size=(D_IN, 32)) / np.sqrt(D_IN) * 2, rng.normal(size=(32, N_CLASSES)))
    train_x, train_y = teacher_data(10_000, rng, teacher)
    val_x, val_y = teacher_data(2000, rng, teacher)
    print("class shares", np.bincount(train_y.numpy(), minlength=N_CLASSES) / len(train_y))

    model = ResidualMLP(D_IN, WIDTH, DEPTH, N_CLASSES)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params:,} trainable parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / WARMUP))
    gen = torch.Generator().manual_seed(0)

    for step in range(1, STEPS + 1):
        idx = torch.randint(0, len(train_x), (BATCH,), generator=gen)
        logits = model(train_x[idx])
        loss = F.cross_entropy(logits, train_y[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step == 1 or step % 50 == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}  val acc {accuracy(model, val_x, val_y):.3f}")


if __name__ == "__main__":
    main()
