"""A classifier trained with PyTorch's habits; only the import line names the library.

tests/test_nn.py runs this module twice, as it is and with ``from chainrule import`` turned
into ``from torch import``, and checks that both give the same numbers: nn.init,
manual_seed, comparisons as boolean Tensors, retain_grad and register_hook, gradient
clipping, two optimizers with a learning-rate schedule each, and a checkpoint saved with
``save`` and resumed from with ``load`` and the state dicts.
"""

from __future__ import annotations

import numpy as np

from chainrule import as_tensor, load, manual_seed, nn, no_grad, optim, save


def make_data(n: int = 96, seed: int = 0):
    """Points in 4-D and one of 3 classes each (float64 and int64 in both libraries)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4))
    labels = (x[:, 0] + 0.5 * x[:, 1] ** 2 > 0.3).astype(np.int64) + (x[:, 2] > 0.8)
    return as_tensor(x), as_tensor(labels)


class Classifier(nn.Module):
    def __init__(self, hidden: int = 12) -> None:
        super().__init__()
        self.hidden = nn.Linear(4, hidden)
        self.out = nn.Linear(hidden, 3)
        nn.init.xavier_uniform_(self.hidden.weight, gain=nn.init.calculate_gain("tanh"))
        nn.init.kaiming_normal_(self.out.weight, nonlinearity="linear")
        nn.init.zeros_(self.hidden.bias)
        nn.init.constant_(self.out.bias, 0.1)
        self.activations = None

    def forward(self, x):
        h = self.hidden(x).tanh()
        if h.requires_grad:
            h.retain_grad()  # its gradient is logged
            h.register_hook(lambda g: g.clamp(-0.02, 0.02))
        self.activations = h
        return self.out(h)


def make_model(seed: int = 0) -> Classifier:
    manual_seed(seed)
    model = Classifier().double()  # PyTorch's parameters start float32; the data is float64
    model.out.weight.register_hook(lambda g: g * 0.5)  # a hook on a leaf
    return model


def make_optimizer(model: Classifier, kind: str, epochs: int):
    if kind == "sgd":
        optimizer = optim.SGD(model.parameters(), lr=0.2, momentum=0.9, nesterov=True)
        scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    else:
        optimizer = optim.Adam(model.parameters(), lr=0.05, betas=(0.8, 0.99))
        scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs, eta_min=1e-3)
    return optimizer, scheduler


def train(model, optimizer, scheduler, x, labels, epochs: range) -> list[tuple]:
    """One full-batch step per epoch; per epoch: (loss, accuracy, total gradient norm
    before clipping, norm of the hidden activations' gradient, learning rate)."""
    loss_fn = nn.CrossEntropyLoss()
    history = []
    for _ in epochs:
        model.train()
        optimizer.zero_grad()
        logits = model(x)
        loss = loss_fn(logits, labels)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
        nn.utils.clip_grad_value_(model.out.bias, 0.05)
        optimizer.step()
        scheduler.step()
        with no_grad():
            accuracy = (logits.argmax(dim=1) == labels).float().mean()
        history.append((loss.item(), accuracy.item(), grad_norm.item(),
                        model.activations.grad.norm().item(), scheduler.get_last_lr()[0]))
    return history


def run(kind: str, epochs: int, checkpoint_path: str, stop_at: int,
        initial: dict | None = None) -> tuple[dict, list, dict]:
    """Train for ``stop_at`` epochs, save a checkpoint, then resume from it in a new model,
    optimizer and scheduler for the remaining epochs. ``initial``: NumPy arrays to start
    from instead of the model's own initial weights. Returns the initial weights, the
    history and the final weights, as NumPy arrays."""
    x, labels = make_data()
    model = make_model()
    if initial is not None:
        model.load_state_dict({name: as_tensor(value) for name, value in initial.items()})
    start = {name: p.detach().numpy().copy() for name, p in model.named_parameters()}
    optimizer, scheduler = make_optimizer(model, kind, epochs)
    history = train(model, optimizer, scheduler, x, labels, range(stop_at))
    save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
          "scheduler": scheduler.state_dict(), "epoch": stop_at}, checkpoint_path)

    checkpoint = load(checkpoint_path)
    resumed = make_model(seed=1)  # other initial weights: the checkpoint replaces them
    resumed.load_state_dict(checkpoint["model"])
    optimizer, scheduler = make_optimizer(resumed, kind, epochs)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    history += train(resumed, optimizer, scheduler, x, labels, range(checkpoint["epoch"], epochs))
    return start, history, {name: p.detach().numpy() for name, p in resumed.named_parameters()}
