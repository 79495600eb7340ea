"""Body blocks of control flow: ``lax.scan`` recurrences, ``fori_loop`` and data-dependent
``while_loop``, ``cond`` / ``switch`` over nested blocks, rematerialization.

Nested blocks are drawn with ``ctx.pick`` among the leaf blocks, so nesting is
one level deep. Branches and trip counts come from integer inputs
(``Ctx.decision``), never from computed floats. Reverse-mode differentiation of a data-dependent
``while_loop`` does not exist: in a training step its inputs pass through
``stop_gradient`` (the loop stays in the forward pass).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from xla_gym_datasets.generator.grammar import Ctx, block


def _nested(ctx: Ctx, name: str, x: Any, exclude: tuple[str, ...] = ()) -> Any:
    """A leaf block drawn under ``name``, applied to ``x`` (pre-normalized, scaled)."""
    inner = ctx.pick(name, exclude)
    sub = ctx.sub(f"{name}_{inner.name}")
    return inner.fn(sub, sub.norm("norm", x, "rms")).astype(x.dtype)


@block("scan_rnn", weight=1.5, leaf=False, opcodes=("while", "dynamic-slice", "dynamic-update-slice", "reverse"))
def scan_rnn(ctx: Ctx, x: Any) -> Any:
    """A recurrent cell (tanh RNN, GRU, minimal GRU) over positions with ``lax.scan``, forward or reversed."""
    b, s, d = x.shape
    hidden = ctx.choice("hidden", [16, 32, 64])
    cell = ctx.choice("cell", ["rnn", "gru", "mingru"])
    gates = {"rnn": 1, "gru": 3, "mingru": 2}[cell]
    wx = ctx.param("wx", (d, gates * hidden))
    wh = ctx.param("wh", (hidden, gates * hidden))
    bias = ctx.param("b", (gates * hidden,))
    xs = jnp.swapaxes(x, 0, 1) @ wx + bias  # [s, b, gates * hidden]

    def step(h: Any, xt: Any) -> tuple[Any, Any]:
        # The recurrent term is halved: a contraction, so rounding does not grow along positions.
        if cell == "rnn":
            h = jnp.tanh(xt + 0.5 * (h @ wh))
        elif cell == "mingru":
            z, c = jnp.split(xt, 2, axis=-1)
            z = jax.nn.sigmoid(z)
            h = (1 - z) * h + z * jnp.tanh(c)
        else:
            xr, xz, xn = jnp.split(xt, 3, axis=-1)
            hr, hz, hn = jnp.split(0.5 * (h @ wh), 3, axis=-1)
            r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
            h = (1 - z) * jnp.tanh(xn + r * hn) + z * h
        return h, h

    h0 = jnp.zeros((b, hidden), x.dtype)
    _, hs = lax.scan(step, h0, xs, reverse=ctx.flag("reverse", 0.3))
    return ctx.dense("out", jnp.swapaxes(hs, 0, 1), d)


@block("fori_refine", leaf=False, opcodes=("while",))
def fori_refine(ctx: Ctx, x: Any) -> Any:
    """A fixed number of shared residual refinements with ``lax.fori_loop`` (differentiable)."""
    d = x.shape[-1]
    w = ctx.param("w", (d, d))
    n = ctx.integer("steps", 2, 4)

    def body(_: Any, y: Any) -> Any:
        return y + 0.5 * jnp.tanh(y @ w)

    return lax.fori_loop(0, n, body, x) - x


@block("while_refine", leaf=False, opcodes=("while", "compare", "and"))
def while_refine(ctx: Ctx, x: Any) -> Any:
    """A ``while_loop`` that iterates a contraction a number of times given as input, at most a step
    limit (data-dependent trips; not "until it settles": a float test flips with rounding)."""
    d = x.shape[-1]
    w = ctx.param("w", (d, d))
    limit = ctx.integer("max_steps", 3, 8)
    trips = ctx.decision("trips") % limit + 1
    if ctx.training:
        x, w = lax.stop_gradient(x), lax.stop_gradient(w)

    def cond(c: tuple[Any, Any]) -> Any:
        i, _ = c
        return (i < limit) & (i < trips)

    def body(c: tuple[Any, Any]) -> tuple[Any, Any]:
        i, y = c
        return i + 1, 0.5 * y + 0.5 * jnp.tanh(y @ w)

    _, y = lax.while_loop(cond, body, (jnp.int32(0), x))
    return y


@block("cond", leaf=False, opcodes=("conditional", "compare"))
def cond(ctx: Ctx, x: Any) -> Any:
    """``lax.cond`` on a flag input (positive, or not), between two nested blocks."""
    flag = ctx.decision("flag") > 0
    return lax.cond(flag, lambda y: _nested(ctx, "then", y), lambda y: _nested(ctx, "else", y), x)


@block("switch", leaf=False, opcodes=("conditional", "remainder"))
def switch(ctx: Ctx, x: Any) -> Any:
    """``lax.switch`` among 2-4 nested blocks, the branch an input (modulo the number of branches)."""
    n = ctx.integer("branches", 2, 4)
    index = ctx.decision("branch") % n
    branches = [lambda y, i=i: _nested(ctx, f"branch{i}", y) for i in range(n)]
    return lax.switch(index, branches, x)


@block("remat", leaf=False, weight=0.7, opcodes=("opt-barrier",))
def remat(ctx: Ctx, x: Any) -> Any:
    """A nested block under ``jax.checkpoint`` (rematerialized in the backward pass)."""
    return jax.checkpoint(lambda y: _nested(ctx, "inner", y))(x)
