"""Functional-style training: make_data(), make_model(), train(), evaluate()."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

SEED = 0
NUM_CLASSES = 10


def make_data(n_train=4096, n_val=1024, batch_size=64):
    g = torch.Generator().manual_seed(SEED)
    templates = torch.rand(NUM_CLASSES, 3, 16, 16, generator=g) * 255
    n = n_train + n_val
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=g)
    images = (0.12 * templates[labels] + 0.88 * 128 + 90 * torch.randn(n, 3, 16, 16, generator=g)).clamp(0, 255)
    images = images / 127.5 - 1.0
    train_ds = TensorDataset(images[:n_train], labels[:n_train])
    val_ds = TensorDataset(images[n_train:], labels[n_train:])
    train_loader = DataLoader(train_ds, batch_size=batch_size, shuffle=True,
                              generator=torch.Generator().manual_seed(SEED))
    val_loader = DataLoader(val_ds, batch_size=512)
    return train_loader, val_loader


def make_model():
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(3 * 16 * 16, 128),
        nn.ReLU(),
        nn.Linear(128, 64),
        nn.ReLU(),
        nn.Linear(64, NUM_CLASSES),
    )


def train(model, loader, steps=300, lr=0.02, log_every=30):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True)
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    while step < steps:
        for x, y in loader:
            logits = model(x)
            loss = loss_fn(logits, y)
            loss.backward()
            optimizer.step()
            step += 1
            if step % log_every == 0:
                print(f"step {step} loss {loss.item():.4f}")
            if step == steps:
                break
    return model


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    total, correct, loss_sum = 0, 0, 0.0
    for x, y in loader:
        logits = model(x)
        loss_sum += loss_fn(logits, y).item()
        correct += (logits.argmax(1) == y).sum().item()
        total += len(y)
    return loss_sum / total, correct / total


if __name__ == "__main__":
    torch.manual_seed(SEED)
    train_loader, val_loader = make_data()
    model = train(make_model(), train_loader)
    val_loss, val_acc = evaluate(model, val_loader)
    print(f"final: val_loss={val_loss:.4f} val_acc={val_acc:.4f}")
