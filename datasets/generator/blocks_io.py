"""Stems (program inputs -> a ``[batch, positions, features]`` stream) and heads (stream -> outputs, loss).

A stem ignores its ``x`` argument and returns the stream; a head returns
``(outputs, loss)``: inference returns the outputs, a training step
differentiates the loss.
"""
from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from xla_gym_datasets.generator.grammar import Ctx, block

BATCHES = (1, 2, 4)
POSITIONS = (8, 16, 32)
WIDTHS = (16, 32, 48, 64, 96, 128)


def _sizes(ctx: Ctx) -> tuple[int, int, int]:
    return ctx.choice("batch", BATCHES), ctx.choice("positions", POSITIONS), ctx.choice("width", WIDTHS)


def _positions(ctx: Ctx, x: Any) -> Any:
    """Learned positions (a parameter), sinusoidal ones (sine, cosine of an iota), or none."""
    kind = ctx.choice("positions_kind", ["learned", "sinusoidal", "none"], [0.4, 0.4, 0.2])
    _, s, d = x.shape
    if kind == "learned":
        return x + ctx.param("pos", (s, d))[None]
    if kind == "sinusoidal":
        pos = lax.iota(jnp.float32, s)[:, None]
        freq = jnp.exp(-jnp.log(1e4) * lax.iota(jnp.float32, (d + 1) // 2) / max(d // 2, 1))
        angle = pos * freq[None]
        table = jnp.concatenate([jnp.sin(angle), jnp.cos(angle)], axis=-1)[:, :d]
        return x + table.astype(x.dtype)[None]
    return x


@block("tokens", "stem", residual=False, opcodes=("gather", "clamp"))
def tokens(ctx: Ctx, _: Any) -> Any:
    """Token ids (int32) looked up in an embedding table (gather), plus positions."""
    b, s, d = _sizes(ctx)
    vocab = ctx.choice("vocab", [64, 128, 256, 512])
    ids = ctx.input("ids", (b, s), jnp.int32, "ids")
    x = jnp.take(ctx.param("table", (vocab, d)), ids, axis=0, mode="clip")
    return _positions(ctx, x)


@block("hashed_tokens", "stem", residual=False,
       opcodes=("xor", "shift-right-logical", "shift-right-arithmetic", "popcnt", "count-leading-zeros", "remainder"))
def hashed_tokens(ctx: Ctx, _: Any) -> Any:
    """Unbounded integer ids hashed (multiply, xor, shifts, popcount, leading zeros, remainder) into buckets."""
    b, s, d = _sizes(ctx)
    buckets = ctx.choice("buckets", [61, 127, 251])
    ids = ctx.input("ids", (b, s), jnp.int32, "ids").astype(jnp.uint32)
    h = (ids * jnp.uint32(2654435761)) ^ (ids >> jnp.uint32(ctx.integer("shift", 3, 15)))
    signed = lax.bitcast_convert_type(h, jnp.int32) >> 3
    bucket = (signed & 0x7FFFFFFF) % buckets
    x = jnp.take(ctx.param("table", (buckets, d)), bucket, axis=0, mode="clip")
    bits = jnp.stack([lax.population_count(h), lax.clz(h)], axis=-1).astype(jnp.float32) / 32.0
    return _positions(ctx, x + ctx.dense("bits", bits.astype(x.dtype), d))


@block("features", "stem", residual=False, opcodes=("dot",))
def features(ctx: Ctx, _: Any) -> Any:
    """Dense float features projected to the stream's width."""
    b, s, d = _sizes(ctx)
    f = ctx.choice("features", [4, 8, 16, 32])
    data = ctx.input("data", (b, s, f), jnp.float32, "data").astype(ctx.dtype)
    return _positions(ctx, ctx.dense("proj", data, d))


@block("image", "stem", residual=False, opcodes=("convolution", "reduce-window"))
def image(ctx: Ctx, _: Any) -> Any:
    """An NHWC image through a strided 2-D convolution and optional pooling, flattened to positions."""
    b = ctx.choice("batch", BATCHES)
    side, channels = ctx.choice("side", [8, 16]), ctx.choice("channels", [1, 3, 4])
    d = ctx.choice("width", WIDTHS)
    k, stride = ctx.choice("kernel", [1, 3, 5]), ctx.choice("stride", [1, 2] if side <= 8 else [2])
    img = ctx.input("image", (b, side, side, channels), jnp.float32, "data").astype(ctx.dtype)
    w = ctx.param("conv", (k, k, channels, d))
    y = lax.conv_general_dilated(img, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = ctx.rectify(y + ctx.param("bias", (d,)))
    pool = ctx.choice("pool", ["none", "max", "avg"])
    if pool != "none" and y.shape[1] >= 8:
        init, op = (-jnp.inf, lax.max) if pool == "max" else (0.0, lax.add)
        source = lax.stop_gradient(y) if pool == "max" and ctx.training else y
        pooled = lax.reduce_window(source, init, op, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        pooled = pooled / 4 if pool == "avg" else pooled
        y = pooled if pool == "avg" or not ctx.training else pooled + (y[:, ::2, ::2] - lax.stop_gradient(y[:, ::2, ::2]))
    return y.reshape(b, y.shape[1] * y.shape[2], d)


@block("patches", "stem", residual=False, opcodes=("transpose", "reshape"))
def patches(ctx: Ctx, _: Any) -> Any:
    """An image cut into patches by reshape and transpose (as a vision transformer), then projected."""
    b = ctx.choice("batch", BATCHES)
    side, p = ctx.choice("side", [8, 16, 32]), ctx.choice("patch", [2, 4])
    channels, d = ctx.choice("channels", [1, 3]), ctx.choice("width", WIDTHS)
    img = ctx.input("image", (b, side, side, channels), jnp.float32, "data").astype(ctx.dtype)
    n = side // p
    x = img.reshape(b, n, p, n, p, channels).transpose(0, 1, 3, 2, 4, 5).reshape(b, n * n, p * p * channels)
    return _positions(ctx, ctx.dense("proj", x, d))


# --------------------------------------------------------------------------- heads


def _cross_entropy(logits: Any, labels: Any, how: str) -> Any:
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    if how == "gather":
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))
    onehot = labels[..., None] == lax.broadcasted_iota(jnp.int32, logp.shape, logp.ndim - 1)
    return -jnp.mean(jnp.sum(jnp.where(onehot, logp, 0.0), axis=-1))


@block("lm", "head", residual=False, opcodes=("reduce", "exponential", "log"))
def lm(ctx: Ctx, x: Any) -> tuple[Any, Any]:
    """Logits at every position and a next-token cross-entropy (gathered or one-hot)."""
    b, s, _ = x.shape
    vocab = ctx.choice("vocab", [64, 128, 256])
    x = ctx.norm("norm", x, ctx.choice("norm", ["layer", "rms"]))
    logits = ctx.dense("out", x, vocab, bias=ctx.flag("bias")).astype(jnp.float32)
    labels = ctx.input("labels", (b, s), jnp.int32, "labels")
    return logits, _cross_entropy(logits, labels, ctx.choice("loss", ["gather", "onehot"]))


@block("classify", "head", residual=False, opcodes=("reduce", "broadcast"))
def classify(ctx: Ctx, x: Any) -> tuple[Any, Any]:
    """Pooled over positions (mean, max, first, attention), a class per example."""
    b, _, d = x.shape
    classes = ctx.choice("classes", [2, 10, 32])
    how = ctx.choice("pool", ["mean", "max", "first", "attention"])
    # Normalized first, as ``lm``: on large activations attention pooling's softmax saturates,
    # and its gradient becomes a difference of near-equal terms, rounding noise.
    x = ctx.norm("norm", x, ctx.choice("norm", ["layer", "rms"]))
    if how == "mean":
        pooled = jnp.mean(x.astype(jnp.float32), axis=1)
    elif how == "max":
        pooled = ctx.extreme(x.astype(jnp.float32), 1)
    elif how == "first":
        pooled = x[:, 0].astype(jnp.float32)
    else:
        # No bias: softmax ignores it, so its gradient would be rounding noise (which Adam amplifies).
        scores = ctx.dense("score", x, 1, bias=False).astype(jnp.float32) / math.sqrt(d)
        weights = jax.nn.softmax(scores, axis=1)
        pooled = jnp.sum(weights * x.astype(jnp.float32), axis=1)
    logits = ctx.dense("out", pooled.astype(x.dtype), classes).astype(jnp.float32)
    labels = ctx.input("labels", (b,), jnp.int32, "labels")
    return logits, _cross_entropy(logits, labels, ctx.choice("loss", ["gather", "onehot"]))


@block("regress", "head", residual=False, opcodes=("abs", "select", "multiply"))
def regress(ctx: Ctx, x: Any) -> tuple[Any, Any]:
    """A float prediction at every position against targets: squared, Huber or log-cosh loss."""
    b, s, _ = x.shape
    out = ctx.choice("outputs", [1, 4, 8])
    pred = ctx.dense("out", x, out).astype(jnp.float32)
    err = pred - ctx.input("targets", (b, s, out), jnp.float32, "targets")
    loss = ctx.choice("loss", ["squared", "huber", "logcosh"])
    if loss == "squared":
        value = err * err
    elif loss == "huber":
        a = jnp.abs(err)
        value = jnp.where(a < 1.0, 0.5 * err * err, a - 0.5)
    else:
        value = jnp.logaddexp(err, -err) - jnp.log(2.0)
    return pred, jnp.mean(value)
