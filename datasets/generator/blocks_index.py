"""Body blocks of index math and data movement: top-k routing, sorting, scatter, gather,
integer permutations, bucketing, windowed and cumulative reductions, random masks,
dynamic slices, quantization and guards.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from xla_gym_datasets.generator.grammar import Ctx, NotApplicable, block


def _batch_index(x: Any, positions: int) -> Any:
    return lax.broadcasted_iota(jnp.int32, (x.shape[0], positions), 0)


@block("moe", weight=1.5, opcodes=("topk", "gather", "dot", "exponential"))
def moe(ctx: Ctx, x: Any) -> Any:
    """Mixture of experts, hash-routed: ``lax.top_k`` over expert scores hashed from a route id per
    position (distinct integers: no ties), every expert's output, the chosen ones gathered and
    weighted by the router's softmax gates."""
    b, s, d = x.shape
    e = ctx.choice("experts", [2, 4, 8])
    k = min(ctx.choice("k", [1, 2]), e)
    f = d * ctx.choice("mult", [1, 2])
    route = ctx.decision("route", (b, s))
    # (route + 5 j) mod e over experts j is a permutation (5 is odd, e a power of two).
    scores = ((route[..., None] + 5 * lax.iota(jnp.int32, e)) % e).astype(jnp.float32)
    _, chosen = lax.top_k(scores, k)  # [b, s, k]
    probs = jax.nn.softmax((x @ ctx.param("router", (d, e))).astype(jnp.float32), axis=-1)
    gate = jnp.take_along_axis(probs, chosen, axis=-1)
    hidden = jax.nn.gelu(jnp.einsum("bsd,edf->bsef", x, ctx.param("w1", (e, d, f))), approximate=True)
    outs = jnp.einsum("bsef,efd->bsed", hidden, ctx.param("w2", (e, f, d)))  # [b, s, e, d]
    picked = jnp.take_along_axis(outs, chosen[..., None], axis=2)  # [b, s, k, d]
    return jnp.sum(picked * gate[..., None].astype(x.dtype), axis=2)


@block("sort", opcodes=("sort", "gather", "scatter", "iota"))
def sort(ctx: Ctx, x: Any) -> Any:
    """Sorting: features sorted per position (``jnp.sort``), or positions ordered by an integer key
    input (``argsort``, gather), a running mean along that order, and scattered back."""
    b, s, d = x.shape
    if ctx.flag("features"):
        ordered = jnp.sort(x, axis=-1)
        if ctx.training:  # sorted values are continuous, their gradient's routing is not: straight through
            ordered = lax.stop_gradient(ordered - x) + x
        return ctx.dense("mix", ordered, d)
    key = ctx.decision("key", (b, s)) * s + lax.iota(jnp.int32, s)  # distinct keys: no ties
    order = jnp.argsort(key, axis=1)
    ordered = jnp.take_along_axis(x, order[..., None], axis=1)
    running = jnp.cumsum(ordered.astype(jnp.float32), axis=1) / (lax.iota(jnp.float32, s)[None, :, None] + 1)
    y = jnp.zeros_like(x).at[_batch_index(x, s), order].set(running.astype(x.dtype))
    return ctx.dense("out", y, d)


@block("scatter_memory", opcodes=("scatter", "gather", "divide"))
def scatter_memory(ctx: Ctx, x: Any) -> Any:
    """A slot memory: each position writes to its slot, an address input (scatter-add), then reads
    its slot's mean back (gather)."""
    b, s, d = x.shape
    m = ctx.choice("slots", [4, 8, 16])
    slot = ctx.decision("slot", (b, s)) % m
    rows = _batch_index(x, s)
    values = ctx.dense("value", x, d).astype(jnp.float32)
    memory = jnp.zeros((b, m, d), jnp.float32).at[rows, slot].add(values)
    counts = jnp.zeros((b, m), jnp.float32).at[rows, slot].add(1.0)
    memory = memory / jnp.maximum(counts, 1.0)[..., None]
    return memory[rows, slot].astype(x.dtype)


@block("permute", opcodes=("xor", "shift-right-logical", "remainder", "gather", "multiply"))
def permute(ctx: Ctx, x: Any) -> Any:
    """Positions permuted by integer index math: an affine map ``(a i + c) mod n`` or the Gray code
    ``i xor (i >> 1)``; the permuted stream is mixed in."""
    s, d = x.shape[1], x.shape[2]
    i = lax.iota(jnp.int32, s)
    if ctx.flag("gray") and s & (s - 1) == 0:
        perm = i ^ lax.shift_right_logical(i, 1)
    else:
        perm = (i * ctx.choice("a", [3, 5, 7]) + ctx.integer("c", 0, s - 1)) % s
    return ctx.dense("mix", jnp.take(x, perm, axis=1), d)


@block("bucket_embed", opcodes=("floor", "convert", "clamp", "gather"))
def bucket_embed(ctx: Ctx, x: Any) -> Any:
    """A scalar input per position (a time or a distance) bucketed (floor, clamp, convert to int)
    into an embedding table, gated by the stream. The scalar is an input, not computed: a computed
    value near a bucket's edge would change bucket with rounding (``Ctx.decision``)."""
    n = ctx.choice("buckets", [8, 16, 32])
    value = jnp.tanh(ctx.input(f"{ctx.key}.value", x.shape[:2], jnp.float32, "data"))
    index = lax.clamp(0, jnp.floor((value + 1) * (0.5 * n)).astype(jnp.int32), n - 1)
    return jnp.take(ctx.param("table", (n, x.shape[-1])), index, axis=0) * jnp.tanh(x)


@block("window", opcodes=("reduce-window", "pad"))
def window(ctx: Ctx, x: Any) -> Any:
    """A windowed reduction over positions (max, min or mean; same padding, stride 1)."""
    how = ctx.choice("how", ["max", "min", "mean"])
    size = ctx.choice("size", [2, 3, 5])
    dims, strides = (1, size, 1), (1, 1, 1)
    if how == "mean":
        return lax.reduce_window(x, 0.0, lax.add, dims, strides, "SAME") / size
    init, op = (-jnp.inf, lax.max) if how == "max" else (jnp.inf, lax.min)
    pooled = lax.reduce_window(lax.stop_gradient(x), init, op, dims, strides, "SAME")
    return pooled + (x - lax.stop_gradient(x)) if ctx.training else pooled


@block("cumulative", opcodes=("reduce-window",))
def cumulative(ctx: Ctx, x: Any) -> Any:
    """A cumulative sum (normalized) or log-sum-exp along positions, forward or reversed."""
    how = ctx.choice("how", ["sum", "logsumexp"])
    rev = ctx.flag("reverse", 0.3)
    xf = x.astype(jnp.float32)
    if how == "sum":
        y = lax.cumsum(xf, axis=1, reverse=rev) / jnp.sqrt(jnp.float32(x.shape[1]))
    else:
        y = lax.cumlogsumexp(jnp.tanh(xf), axis=1, reverse=rev) - jnp.log(jnp.float32(x.shape[1]))
    return y.astype(x.dtype)


@block("dropout", opcodes=("rng-bit-generator", "shift-left", "xor", "bitcast-convert"))
def dropout(ctx: Ctx, x: Any) -> Any:
    """A random mask from a key argument: threefry (``jax.random.bernoulli``) or ``lax.rng_bit_generator``."""
    keep = ctx.choice("keep", [0.5, 0.8, 0.9])
    if ctx.flag("threefry"):
        key = jax.random.wrap_key_data(ctx.input(f"{ctx.key}.key", (2,), jnp.uint32, "key"), impl="threefry2x32")
        mask = jax.random.bernoulli(key, keep, x.shape)
    else:
        raw = ctx.input(f"{ctx.key}.key", (4,), jnp.uint32, "key")
        _, bits = lax.rng_bit_generator(raw, x.shape, dtype=jnp.uint32)
        mask = (bits >> 8).astype(jnp.float32) < keep * 2.0**24
    return jnp.where(mask, x / keep, 0).astype(x.dtype) * ctx.param("scale", (x.shape[-1],))


@block("dynamic_window", opcodes=("dynamic-slice", "dynamic-update-slice", "clamp"))
def dynamic_window(ctx: Ctx, x: Any) -> Any:
    """A window of positions at an offset given as input (dynamic slice), transformed, written back
    (dynamic update slice)."""
    b, s, d = x.shape
    width = ctx.choice("width", [2, 4])
    if s <= width:
        raise NotApplicable("too few positions")
    start = ctx.decision("start")
    part = lax.dynamic_slice(x, (0, start, 0), (b, width, d))
    part = ctx.dense("proj", jnp.tanh(part), d)
    return lax.dynamic_update_slice(jnp.zeros_like(x), part, (0, start, 0))


@block("quantize", opcodes=("round-nearest-even", "round-nearest-afz", "ceil", "reduce-precision"))
def quantize(ctx: Ctx, x: Any) -> Any:
    """Fake quantization with a straight-through gradient: rounding (even, away from zero), ceiling,
    or ``reduce_precision`` to a narrow float format."""
    how = ctx.choice("how", ["round", "round_afz", "ceil", "precision"])
    scale = float(ctx.choice("levels", [4, 8, 16]))
    xf = x.astype(jnp.float32)
    if how == "precision":
        q = lax.reduce_precision(xf, *ctx.choice("format", [[5, 2], [4, 3], [8, 7]]))
    else:
        f = {"round": jnp.round, "round_afz": lambda v: lax.round(v, lax.RoundingMethod.AWAY_FROM_ZERO),
             "ceil": jnp.ceil}[how]
        q = f(xf * scale) / scale
    return (xf + lax.stop_gradient(q - xf)).astype(x.dtype)


@block("guard", opcodes=("is-finite", "not", "sign", "log-plus-one", "abs"))
def guard(ctx: Ctx, x: Any) -> Any:
    """Numerical guards: non-finite values zeroed (``isfinite``) and counted (``not``, convert),
    then a signed log compression."""
    y = x * ctx.param("scale", (x.shape[-1],))
    finite = jnp.isfinite(y)
    y = jnp.where(finite, y, 0) - (~finite).astype(y.dtype)
    return jnp.sign(y) * jnp.log1p(jnp.abs(y))


@block("statistics", opcodes=("reduce", "broadcast", "maximum", "minimum"))
def statistics(ctx: Ctx, x: Any) -> Any:
    """Statistics over positions (max, min, mean, variance, log-sum-exp), broadcast back and mixed in."""
    xf = x.astype(jnp.float32)
    stats = [ctx.extreme(xf, 1), ctx.extreme(xf, 1, largest=False), jnp.mean(xf, axis=1)]
    if ctx.flag("more"):
        stats += [jnp.var(xf, axis=1), jax.nn.logsumexp(xf, axis=1)]
    pooled = ctx.dense("mix", jnp.concatenate(stats, axis=-1).astype(x.dtype), x.shape[-1])
    return jnp.broadcast_to(pooled[:, None, :], x.shape) * jnp.tanh(x)
