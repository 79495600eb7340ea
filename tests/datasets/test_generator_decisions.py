"""No generated program takes a discrete decision from a computed float (grammar.Ctx.decision).

XLA's pipeline may reassociate float arithmetic; a branch, an offset or an index
computed from the stream then flips where the stream sits near a boundary, and
the program's outputs change far beyond tolerance (version 1 of the generator
failed validation under XLA's default pipeline on 9 of 1,000 seeds this way).
This test traces every body block (forward and, in a training step, backward)
and follows which values depend on the stream ``x`` through the jaxpr, into
and out of nested jaxprs (``cond``, ``while`` and ``scan`` carries to a fixed
point, ``jit``, custom derivatives, ``checkpoint``). A *decision* is an
operand that picks rather than computes: the branch index of ``cond``, the
predicate of ``while``, the start indices of dynamic slices, the indices of
gathers and scatters. None may depend on ``x``.
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.extend import core  # noqa: E402

#: ``primitive name -> positions of its operands that decide`` (``None``: every one but the first).
DECIDING = {
    "cond": (0,),
    "dynamic_slice": None,
    "dynamic_update_slice": (2, 3, 4, 5, 6, 7),
    "gather": (1,),
    "scatter": (1,),
    "scatter-add": (1,),
    "scatter_add": (1,),
    "scatter-mul": (1,),
    "scatter_mul": (1,),
    "scatter-min": (1,),
    "scatter-max": (1,),
}


def _closed(value: Any) -> tuple[core.Jaxpr, ...]:
    """The jaxprs held by one equation parameter."""
    if isinstance(value, core.ClosedJaxpr):
        return (value.jaxpr,)
    if isinstance(value, core.Jaxpr):
        return (value,)
    if isinstance(value, tuple):
        return tuple(j for v in value for j in _closed(v))
    return ()


def _flow(jaxpr: core.Jaxpr, tainted_in: list[bool], found: list[str], where: str) -> list[bool]:
    """Which outputs of ``jaxpr`` depend on a tainted input; decisions that do go to ``found``."""
    tainted: set[Any] = {v for v, t in zip(jaxpr.invars, tainted_in) if t}

    def is_t(v: Any) -> bool:
        return not isinstance(v, core.Literal) and v in tainted

    for eqn in jaxpr.eqns:
        name, ins = eqn.primitive.name, [is_t(v) for v in eqn.invars]
        deciding = DECIDING.get(name, ())
        positions = range(1, len(ins)) if deciding is None else deciding
        for k in positions:
            if k < len(ins) and ins[k]:
                found.append(f"{where}: operand {k} of {name} depends on the stream")
        outs = _through(eqn, ins, found, f"{where}/{name}")
        tainted.update(v for v, t in zip(eqn.outvars, outs) if t)
    return [is_t(v) for v in jaxpr.outvars]


def _through(eqn: Any, ins: list[bool], found: list[str], where: str) -> list[bool]:
    """Taint of an equation's outputs, following nested jaxprs where there are any."""
    p, n_out = eqn.params, len(eqn.outvars)
    if eqn.primitive.name == "cond":
        outs = [False] * n_out
        for branch in p["branches"]:
            outs = [a or b for a, b in zip(outs, _flow(branch.jaxpr, ins[1:], found, where))]
        return outs
    if eqn.primitive.name == "while":
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, carry = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
        while True:  # to a fixed point: what the body carries round
            new = _flow(p["body_jaxpr"].jaxpr, bconsts + carry, [], where)
            merged = [a or b for a, b in zip(carry, new)]
            if merged == carry:
                break
            carry = merged
        _flow(p["body_jaxpr"].jaxpr, bconsts + carry, found, where)
        if _flow(p["cond_jaxpr"].jaxpr, cconsts + carry, found, where)[0]:
            found.append(f"{where}: the loop's predicate depends on the stream")
        return carry
    if eqn.primitive.name == "scan":
        nc, ncarry = p["num_consts"], p["num_carry"]
        consts, carry, xs = ins[:nc], ins[nc:nc + ncarry], ins[nc + ncarry:]
        while True:
            outs = _flow(p["jaxpr"].jaxpr, consts + carry + xs, [], where)
            merged = [a or b for a, b in zip(carry, outs[:ncarry])]
            if merged == carry:
                break
            carry = merged
        return _flow(p["jaxpr"].jaxpr, consts + carry + xs, found, where)
    for value in p.values():  # jit, custom_jvp/vjp, checkpoint: the operands map one to one
        for inner in _closed(value):
            if len(inner.invars) == len(ins) and len(inner.outvars) == n_out:
                return _flow(inner, ins, found, where)
    return [any(ins)] * n_out


def decisions_on_the_stream(name: str, mode: str, seed: int, dtype: Any) -> list[str]:
    """Where block ``name``, drawn from ``seed``, decides from its input stream (empty: nowhere)."""
    from xla_gym_datasets.generator import blocks
    from xla_gym_datasets.generator.grammar import Ctx, NotApplicable, Program
    from xla_gym_datasets.generator.program import _forward_backward

    blk = blocks()[name]
    ctx = Ctx(Program(mode, np.random.default_rng(seed)), f"b00_{name}", {}, dtype)
    try:
        closed = jax.make_jaxpr(lambda x: _forward_backward(blk, ctx, x))(
            jax.ShapeDtypeStruct((2, 8, 16), jnp.float32))
    except NotApplicable:
        return []
    found: list[str] = []
    _flow(closed.jaxpr, [True], found, name)
    return found


def _body_blocks() -> list[str]:
    from xla_gym_datasets.generator import blocks

    return sorted(n for n, b in blocks().items() if b.kind == "body")


@pytest.mark.parametrize("name", _body_blocks())
def test_no_block_decides_from_a_computed_float(name):
    from xla_gym_datasets.generator import blocks

    modes = ("infer", "train") if blocks()[name].train else ("infer",)
    for mode, seed in itertools.product(modes, range(6)):  # seeds: nested blocks of cond, switch, remat
        found = decisions_on_the_stream(name, mode, seed, jnp.bfloat16 if seed % 2 else jnp.float32)
        assert not found, f"{mode}, seed {seed}: {found[:3]}"


def test_the_check_finds_decisions_taken_from_the_stream():
    """The analysis itself: an argmax-driven switch, a top-k gather, a dynamic offset and a
    settle-until loop are each found; the same shapes driven by an input are not."""
    from jax import lax

    def found(fn: Any) -> list[str]:
        out: list[str] = []
        _flow(jax.make_jaxpr(fn)(jnp.ones((4, 8))).jaxpr, [True], out, "f")
        return out

    assert found(lambda x: lax.switch(jnp.argmax(x[0]) % 2, [jnp.sin, jnp.cos], x))
    assert found(lambda x: jnp.take_along_axis(x, lax.top_k(x, 2)[1], axis=-1))
    assert found(lambda x: lax.dynamic_slice(x, (jnp.argmax(x[:, 0]), 0), (2, 8)))
    assert found(lambda x: lax.while_loop(lambda c: jnp.max(c) > 1.0, lambda c: c * 0.5, x))
    assert found(lambda x: lax.scan(lambda c, r: (c + r, jnp.take(r, jnp.argmax(c))), x[0], x)[1])
    ids = jnp.arange(8, dtype=jnp.int32) % 3
    assert not found(lambda x: jnp.take(x, ids, axis=1) * lax.switch(ids[0], [jnp.sin, jnp.cos], x))
    assert not found(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 0.5, x))


def test_activations_are_continuous_and_training_ones_have_no_kink():
    """Every activation's value, and in a training step its slope, moves by no more than
    rounding when its input does (around 0 and +-1, where the table's kinks were)."""
    from xla_gym_datasets.generator.blocks_layers import ACTIVATIONS, KINKED

    points = jnp.array([-1.0, 0.0, 1.0], jnp.float32)
    h = 1e-4
    for name, fn in sorted(ACTIVATIONS.items()):
        jump = jnp.abs(fn(points + h) - fn(points - h))
        assert float(jnp.max(jump)) < 10 * h, f"{name} jumps: {jump}"
        if name in KINKED:
            continue
        slope = jax.vmap(jax.grad(lambda v, f=fn: f(v)))
        kink = jnp.abs(slope(points + h) - slope(points - h))
        assert float(jnp.max(kink)) < 1e-2, f"{name}'s slope jumps: {kink}"
    assert KINKED <= set(ACTIVATIONS)
