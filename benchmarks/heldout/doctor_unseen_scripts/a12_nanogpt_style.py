"""Class: nanoGPT-style tiny decoder-only transformer, get_batch() from a token tensor, step-based loop with periodic estimate_loss(). Broken (same-batch-every-step): the first batch is fetched before the loop and the loop never fetches another, so every step trains on the same batch.
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# config
vocab_size = 32
block_size = 32
batch_size = 32
n_layer = 2
n_head = 4
n_embd = 64
dropout = 0.0
learning_rate = 3e-3
max_iters = 300
eval_interval = 100
eval_iters = 10
log_interval = 20
seed = 1337

torch.manual_seed(seed)


def make_corpus(n_tokens=100_000):
    """Tokens from a hidden-state process: a small set of recurring 'words' glued together."""
    g = torch.Generator().manual_seed(seed)
    words = [torch.randint(1, vocab_size, (int(torch.randint(3, 8, (1,), generator=g)),), generator=g)
             for _ in range(40)]
    freq = torch.softmax(torch.randn(len(words), generator=g), 0)
    out, n = [], 0
    while n < n_tokens:
        w = words[int(torch.multinomial(freq, 1, generator=g))]
        out.append(w)
        out.append(torch.zeros(1, dtype=torch.long))
        n += len(w) + 1
    return torch.cat(out)[:n_tokens]


data = make_corpus()
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]


def get_batch(split):
    d = train_data if split == "train" else val_data
    ix = torch.randint(len(d) - block_size, (batch_size,))
    x = torch.stack([d[i:i + block_size] for i in ix])
    y = torch.stack([d[i + 1:i + 1 + block_size] for i in ix])
    return x, y


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
        k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
        v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout if self.training else 0.0)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


model = GPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.95), weight_decay=0.1)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            _, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean().item()
    model.train()
    return out


def get_lr(it, warmup=40):
    if it < warmup:
        return learning_rate * (it + 1) / warmup
    ratio = (it - warmup) / max(1, max_iters - warmup)
    return 0.1 * learning_rate + 0.9 * learning_rate * 0.5 * (1 + math.cos(math.pi * ratio))


print(f"{sum(p.numel() for p in model.parameters()) / 1e3:.1f}k parameters, uniform loss {math.log(vocab_size):.3f}")
X, Y = get_batch("train")
t0 = time.time()
for iter_num in range(max_iters + 1):
    lr = get_lr(iter_num)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr

    if iter_num % eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")

    logits, loss = model(X, Y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()

    if iter_num % log_interval == 0:
        dt = time.time() - t0
        t0 = time.time()
        print(f"iter {iter_num}: loss {loss.item():.4f}, time {dt * 1000:.2f}ms, lr {lr:.2e}")
