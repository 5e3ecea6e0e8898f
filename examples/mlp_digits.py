"""A multilayer perceptron on scikit-learn's 8x8 digits, trained with misc.optimizers.adam.

Parameters are a list of (weights, bias) pairs, a pytree: ``grad`` returns the same
structure and ``adam`` updates it. The full run reaches >= 95% test accuracy.

    python examples/mlp_digits.py            # 30 epochs
    python examples/mlp_digits.py --smoke    # one epoch
"""

from __future__ import annotations

import numpy as onp
from _common import parse_args, progress, result, save

import chainrule.numpy as np
from chainrule import grad
from chainrule.misc.optimizers import adam


def init_params(sizes: list[int], rng: onp.random.Generator) -> list[tuple]:
    return [
        (rng.standard_normal((m, n)) / onp.sqrt(m), onp.zeros(n))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def predict(params, X):
    """Log class probabilities."""
    for W, b in params[:-1]:
        X = np.tanh(X @ W + b)
    W, b = params[-1]
    logits = X @ W + b
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))


def loss(params, X, Y, l2=1e-4):
    """Cross-entropy of one-hot targets Y plus a small weight penalty."""
    penalty = sum(np.sum(W**2) for W, _ in params)
    return -np.mean(np.sum(predict(params, X) * Y, axis=1)) + l2 * penalty


def accuracy(params, X, labels) -> float:
    return float(onp.mean(onp.argmax(predict(params, X), axis=1) == labels))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv, {"epochs": (int, 30, "passes over the training set")})
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    X = digits.data / 16.0
    X_train, X_test, y_train, y_test = train_test_split(
        X, digits.target, test_size=0.25, random_state=args.seed, stratify=digits.target
    )
    Y_train = onp.eye(10)[y_train]
    rng = onp.random.default_rng(args.seed)
    params = init_params([64, 128, 10], rng)

    batch = 64
    batches_per_epoch = -(-len(X_train) // batch)
    epochs = 1 if args.smoke else args.epochs
    orders = [rng.permutation(len(X_train)) for _ in range(epochs)]
    loss_grad = grad(loss)
    history = []

    def batch_grad(params, i):
        epoch, j = divmod(i, batches_per_epoch)
        idx = orders[epoch][j * batch : (j + 1) * batch]
        bar.update()
        return loss_grad(params, X_train[idx], Y_train[idx])

    def callback(params, i, g):
        if i % batches_per_epoch == 0:
            epoch = i // batches_per_epoch
            history.append(
                (epoch, accuracy(params, X_train, y_train), accuracy(params, X_test, y_test))
            )
            if epoch % 5 == 0:
                bar.write(
                    f"epoch {epoch:3d}  train {history[-1][1]:.3f}  test {history[-1][2]:.3f}"
                )

    with progress(epochs * batches_per_epoch, "training") as bar:
        params = adam(
            batch_grad,
            params,
            callback=callback,
            num_iters=epochs * batches_per_epoch,
            step_size=0.005,
        )
    test_acc = accuracy(params, X_test, y_test)
    history.append((epochs, accuracy(params, X_train, y_train), test_acc))

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    e, tr, te = zip(*history)
    ax.plot(e, tr, label="train")
    ax.plot(e, te, label="test")
    ax.set(xlabel="epoch", ylabel="accuracy", title="MLP 64-128-10 on digits, Adam")
    ax.legend()
    save(fig, args, "mlp_digits.png")
    result(args, f"test accuracy {test_acc:.4f} after {epochs} epochs")


if __name__ == "__main__":
    main()
