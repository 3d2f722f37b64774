"""Class: knowledge distillation from a frozen teacher with an EMA copy of the student. Healthy: correct distillation (teacher frozen and in eval mode, KL on temperature-softened log-probabilities over classes, EMA updated after each optimizer step).
"""
import copy
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    in_dim: int = 32
    n_classes: int = 10
    teacher_hidden: int = 256
    student_hidden: int = 64
    temperature: float = 2.0
    alpha: float = 0.7
    lr: float = 2e-3
    ema_decay: float = 0.99
    batch_size: int = 128
    steps: int = 800
    log_every: int = 50


def build_teacher(cfg):
    teacher = nn.Sequential(nn.Linear(cfg.in_dim, cfg.teacher_hidden), nn.GELU(),
                            nn.Linear(cfg.teacher_hidden, cfg.teacher_hidden), nn.GELU(),
                            nn.Linear(cfg.teacher_hidden, cfg.n_classes))
    with torch.no_grad():
        teacher[-1].weight.mul_(50.0)
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    return teacher


class Student(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(cfg.in_dim, cfg.student_hidden), nn.LayerNorm(cfg.student_hidden),
                                  nn.GELU(), nn.Dropout(0.1),
                                  nn.Linear(cfg.student_hidden, cfg.student_hidden), nn.GELU())
        self.classifier = nn.Linear(cfg.student_hidden, cfg.n_classes)

    def forward(self, x):
        return self.classifier(self.body(x))


@torch.no_grad()
def ema_update(ema_model, model, decay):
    for e, p in zip(ema_model.parameters(), model.parameters()):
        e.mul_(decay).add_(p.detach(), alpha=1 - decay)
    for e, b in zip(ema_model.buffers(), model.buffers()):
        e.copy_(b)


def distill_loss(student_logits, teacher_logits, labels, T, alpha):
    soft = F.kl_div(F.log_softmax(student_logits / T, dim=-1), F.log_softmax(teacher_logits / T, dim=-1),
                    reduction="batchmean", log_target=True) * T * T
    hard = F.cross_entropy(student_logits, labels)
    return alpha * soft + (1 - alpha) * hard


@torch.no_grad()
def agreement(model, teacher, x):
    model.eval()
    return (model(x).argmax(-1) == teacher(x).argmax(-1)).float().mean().item()


def main():
    cfg = Config()
    torch.manual_seed(3)
    teacher = build_teacher(cfg)
    student = Student(cfg)
    ema = copy.deepcopy(student)
    for p in ema.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adam(student.parameters(), lr=cfg.lr)
    x_val = torch.randn(4096, cfg.in_dim)

    for step in range(1, cfg.steps + 1):
        student.train()
        x = torch.randn(cfg.batch_size, cfg.in_dim)
        with torch.no_grad():
            t_logits = teacher(x)
        labels = t_logits.argmax(-1)
        loss = distill_loss(student(x), t_logits, labels, cfg.temperature, cfg.alpha)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema_update(ema, student, cfg.ema_decay)
        if step % cfg.log_every == 0 or step == 1:
            print(f"step {step:5d} loss {loss.item():.4f} "
                  f"agree(student) {agreement(student, teacher, x_val):.3f} agree(ema) {agreement(ema, teacher, x_val):.3f}")


if __name__ == "__main__":
    main()
