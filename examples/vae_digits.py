"""A variational autoencoder on scikit-learn's 8x8 digits.

Encoder and decoder are one-hidden-layer MLPs; the encoder gives a Gaussian q(z|x), a sample
is drawn with the reparameterisation z = mu + sigma * eps so that ``grad`` reaches the encoder,
and the decoder gives Bernoulli pixel probabilities. Trained with misc.optimizers.adam on the
negative ELBO; reports the test-set ELBO in nats per image and saves samples and reconstructions.

    python examples/vae_digits.py            # 3000 iterations
    python examples/vae_digits.py --smoke    # 20 iterations
"""

from __future__ import annotations

import numpy as onp
from _common import parse_args, progress, result, save

import chainrule.numpy as np
from chainrule import grad
from chainrule.misc.optimizers import adam

LATENT = 2


def dense(rng: onp.random.Generator, m: int, n: int) -> tuple:
    return rng.standard_normal((m, n)) / onp.sqrt(m), onp.zeros(n)


def init(rng: onp.random.Generator, hidden: int = 128) -> dict:
    return {
        "enc": [dense(rng, 64, hidden), dense(rng, hidden, 2 * LATENT)],
        "dec": [dense(rng, LATENT, hidden), dense(rng, hidden, 64)],
    }


def mlp(layers, x):
    (W1, b1), (W2, b2) = layers
    return np.tanh(x @ W1 + b1) @ W2 + b2


def elbo(params, x, eps):
    """Mean ELBO per image (nats) with one reparameterised sample per image."""
    stats = mlp(params["enc"], x)
    mu, log_sigma = stats[:, :LATENT], stats[:, LATENT:]
    z = mu + np.exp(log_sigma) * eps
    logits = mlp(params["dec"], z)
    log_lik = np.sum(x * logits - np.logaddexp(0.0, logits), axis=1)
    kl = 0.5 * np.sum(mu**2 + np.exp(2 * log_sigma) - 1.0 - 2 * log_sigma, axis=1)
    return np.mean(log_lik - kl)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv, {"iters": (int, 3000, "Adam iterations")})
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X = load_digits().data / 16.0  # pixel intensities in [0, 1] as Bernoulli means
    X_train, X_test = train_test_split(X, test_size=0.25, random_state=args.seed)
    rng = onp.random.default_rng(args.seed)
    params = init(rng)
    iters = 20 if args.smoke else args.iters
    batch = 100
    loss_grad = grad(lambda p, x, eps: -elbo(p, x, eps))

    def batch_grad(params, i):
        idx = rng.integers(0, len(X_train), batch)
        if not args.smoke and i % (iters // 10) == 0:
            test = elbo(params, X_test, rng.standard_normal((len(X_test), LATENT)))
            bar.write(f"iter {i:5d}  test ELBO {test:.2f} nats/image")
        bar.update()
        return loss_grad(params, X_train[idx], rng.standard_normal((batch, LATENT)))

    with progress(iters, "training") as bar:
        params = adam(batch_grad, params, num_iters=iters, step_size=0.003)
    test_elbo = float(
        onp.mean(
            [elbo(params, X_test, rng.standard_normal((len(X_test), LATENT))) for _ in range(10)]
        )
    )

    import matplotlib.pyplot as plt

    grid = onp.linspace(-2.0, 2.0, 8)
    z = onp.array([[a, b] for b in grid[::-1] for a in grid])
    images = 1.0 / (1.0 + onp.exp(-mlp(params["dec"], z)))
    recon = 1.0 / (1.0 + onp.exp(-mlp(params["dec"], mlp(params["enc"], X_test[:8])[:, :LATENT])))
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.5))
    axes[0].imshow(images.reshape(8, 8, 8, 8).transpose(0, 2, 1, 3).reshape(64, 64), cmap="gray")
    axes[0].set_title("decoder over the 2-D latent grid")
    pairs = onp.concatenate([X_test[:8], recon]).reshape(2, 8, 8, 8)
    axes[1].imshow(pairs.transpose(0, 2, 1, 3).reshape(16, 64), cmap="gray")
    axes[1].set_title("test digits (top) and reconstructions")
    for ax in axes:
        ax.axis("off")
    save(fig, args, "vae_digits.png")
    result(args, f"test ELBO {test_elbo:.2f} nats/image after {iters} iterations")


if __name__ == "__main__":
    main()
