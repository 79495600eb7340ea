"""Layers, losses and optimizers shared by the model families (plain JAX)."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

PyTree = Any

DTYPES = {"f32": jnp.float32, "bf16": jnp.bfloat16}


# --------------------------------------------------------------------------
# Initialization (random only; nothing is downloaded)
# --------------------------------------------------------------------------


class KeyGen:
    """Deterministic stream of random numbers for initialization.

    NumPy's PCG64 rather than ``jax.random``: eager ``jax.random`` calls compile
    a kernel per new shape, which dominated build time. Values only need to be
    random and reproducible.
    """

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def normal(self, shape, std=0.02, dtype=jnp.float32):
        return jnp.asarray((std * self.rng.standard_normal(shape)).astype(np.float32), dtype)

    def uniform(self, shape, low=0.0, high=1.0, dtype=jnp.float32):
        return jnp.asarray(self.rng.uniform(low, high, shape).astype(np.float32), dtype)

    def randint(self, shape, low, high, dtype=jnp.int32):
        return jnp.asarray(self.rng.integers(low, high, shape), dtype)


def normal(kg: KeyGen, shape, std=0.02, dtype=jnp.float32):
    return kg.normal(shape, std, dtype)


def dense_init(kg: KeyGen, n_in: int, n_out: int, std: float | None = None, bias=True):
    std = (1.0 / math.sqrt(n_in)) if std is None else std
    p = {"w": normal(kg, (n_in, n_out), std)}
    if bias:
        p["b"] = jnp.zeros((n_out,), jnp.float32)
    return p


def ln_init(d: int):
    return {"g": jnp.ones((d,), jnp.float32), "b": jnp.zeros((d,), jnp.float32)}


# --------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------


def cast_tree(tree: PyTree, dtype) -> PyTree:
    """Cast the floating leaves of ``tree`` to ``dtype`` (mixed precision)."""
    return jax.tree_util.tree_map(
        lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree
    )


def dense(p, x):
    y = x @ p["w"]
    if "b" in p:
        y = y + p["b"]
    return y


def layer_norm(p, x, eps=1e-5):
    # Statistics in f32 even under bf16 compute, as mixed-precision code does.
    xf = x.astype(jnp.float32)
    mu = jnp.mean(xf, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(xf - mu), axis=-1, keepdims=True)
    y = (xf - mu) * jax.lax.rsqrt(var + eps)
    y = y * p["g"].astype(jnp.float32) + p["b"].astype(jnp.float32)
    return y.astype(x.dtype)


def gelu(x):
    # GPT-2 / BERT use the tanh approximation.
    return jax.nn.gelu(x, approximate=True)


def multi_head_attention(p, x, n_heads: int, mask=None):
    """Self-attention. ``p`` has a fused ``qkv`` dense and an output ``proj``.

    ``mask``: boolean, broadcastable to [batch, heads, q, k]; True = attend.
    """
    b, s, d = x.shape
    hd = d // n_heads
    qkv = dense(p["qkv"], x)  # [b, s, 3d]
    q, k, v = jnp.split(qkv, 3, axis=-1)

    def heads(t):
        return t.reshape(b, s, n_heads, hd).transpose(0, 2, 1, 3)

    q, k, v = heads(q), heads(k), heads(v)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.asarray(math.sqrt(hd), x.dtype)
    if mask is not None:
        scores = jnp.where(mask, scores, jnp.asarray(-1e9 if x.dtype == jnp.float32 else -3e4, scores.dtype))
    w = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(x.dtype)
    out = jnp.einsum("bhqk,bhkd->bhqd", w, v)
    out = out.transpose(0, 2, 1, 3).reshape(b, s, d)
    return dense(p["proj"], out)


def attention_init(kg: KeyGen, d: int, out_std: float | None = None):
    return {"qkv": dense_init(kg, d, 3 * d, std=0.02), "proj": dense_init(kg, d, d, std=out_std or 0.02)}


def cross_entropy(logits, labels, weights=None):
    """Mean token cross-entropy (in f32); ``weights`` masks positions."""
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    nll = -jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]
    if weights is None:
        return jnp.mean(nll)
    return jnp.sum(nll * weights) / jnp.maximum(jnp.sum(weights), 1.0)


# --------------------------------------------------------------------------
# Optimizers (functional, optax-like, without optax)
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Optimizer:
    init: Callable[[PyTree], PyTree]
    update: Callable[[PyTree, PyTree, PyTree], tuple[PyTree, PyTree]]


def sgd(lr=1e-2, momentum=0.9) -> Optimizer:
    """SGD with (heavy-ball) momentum."""

    def init(params):
        return {"mom": jax.tree_util.tree_map(jnp.zeros_like, params)}

    def update(grads, state, params):
        mom = jax.tree_util.tree_map(lambda m, g: momentum * m + g, state["mom"], grads)
        new = jax.tree_util.tree_map(lambda p, m: p - lr * m, params, mom)
        return new, {"mom": mom}

    return Optimizer(init, update)


def adam(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0) -> Optimizer:
    """Adam (AdamW when ``weight_decay`` > 0) with bias correction."""

    def init(params):
        z = jax.tree_util.tree_map(jnp.zeros_like, params)
        return {"m": z, "v": jax.tree_util.tree_map(jnp.zeros_like, params), "count": jnp.zeros((), jnp.int32)}

    def update(grads, state, params):
        count = state["count"] + 1
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
        # Bias correction folded into the step size (Kingma & Ba, sec. 2):
        # alpha_t = lr * sqrt(1 - b2^t) / (1 - b1^t).
        t = count.astype(jnp.float32)
        alpha = lr * jnp.sqrt(1 - b2**t) / (1 - b1**t)

        def step(p, m, v):
            u = m / (jnp.sqrt(v) + eps)
            if weight_decay:
                return p - alpha * u - lr * weight_decay * p
            return p - alpha * u

        new = jax.tree_util.tree_map(step, params, m, v)
        return new, {"m": m, "v": v, "count": count}

    return Optimizer(init, update)


def make_optimizer(name: str) -> Optimizer:
    if name == "sgd":
        return sgd()
    if name == "adam":
        return adam()
    if name == "adamw":
        return adam(weight_decay=0.01)
    raise ValueError(f"unknown optimizer {name!r}")


def train_step_fn(loss_fn: Callable, opt: Optimizer, has_aux: bool = False):
    """``(params, opt_state, *batch) -> (params, opt_state, loss[, aux])``."""

    def step(params, opt_state, *batch):
        if has_aux:
            (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, *batch)
        else:
            loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
            aux = None
        new_params, new_state = opt.update(grads, opt_state, params)
        if has_aux:
            return new_params, new_state, loss, aux
        return new_params, new_state, loss

    return step
