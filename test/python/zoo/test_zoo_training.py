"""Training steps: loss, gradients and an optax update, exported as one program.

Parameters, optimizer state and batch statistics go in and come out as
arguments and results; every updated leaf is compared with jax.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flax")
optax = pytest.importorskip("optax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from test_zoo_flax import KEY, Cnn, Mlp, normal  # noqa: E402
from zoo_harness import check  # noqa: E402


def labels(count: int, classes: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, classes, count, dtype=np.int32)


def test_mlp_adam_step() -> None:
    model = Mlp()
    x = normal((8, 32))
    params = model.init(KEY, x)["params"]
    optimizer = optax.adam(1e-3)

    def train_step(params, opt_state, x, y):
        def loss_fn(params):
            logits = model.apply({"params": params}, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    check("train_mlp_adam", train_step, (params, optimizer.init(params), x, labels(8, 10)))


def test_cnn_batchnorm_sgd_step() -> None:
    model = Cnn()
    x = normal((4, 16, 16, 3))
    variables = model.init(KEY, x)
    optimizer = optax.sgd(0.1, momentum=0.9)

    def train_step(params, batch_stats, opt_state, x, y):
        def loss_fn(params):
            logits, updated = model.apply(
                {"params": params, "batch_stats": batch_stats},
                x,
                train=True,
                mutable=["batch_stats"],
            )
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            return loss, updated["batch_stats"]

        (loss, batch_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), batch_stats, opt_state, loss

    params = variables["params"]
    check(
        "train_cnn_batchnorm_sgd",
        train_step,
        (params, variables["batch_stats"], optimizer.init(params), x, labels(4, 10)),
    )


def test_gpt2_adamw_step() -> None:
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(vocab_size=100, n_positions=32, n_embd=32, n_layer=2, n_head=2)
    model = transformers.FlaxGPT2LMHeadModel(config, seed=0)
    # The key projection's bias has an exactly zero gradient (softmax ignores a
    # constant shift), so jax and shlo both get rounding noise (~1e-11) there;
    # Adam's default eps=1e-8 would scale that noise up to updates of ~1e-6.
    optimizer = optax.adamw(1e-3, eps=1e-5, weight_decay=0.01)

    def train_step(params, opt_state, ids):
        def loss_fn(params):
            logits = model(ids[:, :-1], params=params).logits
            return optax.softmax_cross_entropy_with_integer_labels(logits, ids[:, 1:]).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    ids = np.random.default_rng(0).integers(0, 100, (2, 9), dtype=np.int32)
    params = model.params
    check("train_gpt2_adamw", train_step, (params, optimizer.init(params), jnp.asarray(ids)))
