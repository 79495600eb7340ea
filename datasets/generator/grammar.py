"""The grammar's machinery: the table of building blocks, and the context a block draws through.

A *block* is a plain JAX function ``fn(ctx, x) -> y`` registered in
:data:`BLOCKS` with :func:`block`. It draws its hyperparameters with
``ctx.choice`` / ``ctx.integer`` / ``ctx.flag``, declares its weights with
``ctx.param`` and any extra program input with ``ctx.input``. The same
function runs twice: when the program is *planned* (traced alone with
``jax.make_jaxpr``: the draws come from the seed's random stream and are
recorded by name, weights and inputs are declared and stand in as zeros) and
when it is *built* (inside the whole jitted program: the recorded draws are
replayed, weights and inputs are the program's arguments). So a block is
written once, its draws are the metadata, and weights are always arguments,
never literals.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Block", "BLOCKS", "block", "Ctx", "NotApplicable", "Spec", "DTYPES"]

DTYPES = {"f32": jnp.float32, "bf16": jnp.bfloat16}
KINDS = ("stem", "body", "head")


class NotApplicable(Exception):
    """Raised by a block whose draw does not fit the stream it was offered (e.g. too short)."""


@dataclass(frozen=True)
class Block:
    """One building block of the grammar (see ``datasets/README.md``, "The generator")."""

    name: str
    kind: str  # "stem", "body" or "head"
    fn: Callable[..., Any]
    weight: float = 1.0
    #: Usable in a training step (differentiable, or made so by the block itself).
    train: bool = True
    #: Applied as ``x + fn(norm(x))`` (keeps the shape) rather than ``fn(x)``.
    residual: bool = True
    #: May be nested inside control flow (``cond``/``switch``/``remat`` branches).
    leaf: bool = True
    #: HLO opcodes it is written to exercise (documentation; the measurements check coverage).
    opcodes: tuple[str, ...] = ()
    doc: str = ""


#: Every block by name: the grammar, one entry per block. Draws see it sorted by name,
#: so the order in which the block modules are imported never changes a program.
BLOCKS: dict[str, Block] = {}


def block(
    name: str,
    kind: str = "body",
    *,
    weight: float = 1.0,
    train: bool = True,
    residual: bool = True,
    leaf: bool = True,
    opcodes: Sequence[str] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as the block ``name`` (its docstring's first line documents it)."""
    if kind not in KINDS:
        raise ValueError(f"Expected a block kind in {KINDS}, got {kind!r}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in BLOCKS:
            raise ValueError(f"Block {name!r} is registered twice")
        doc = " ".join((fn.__doc__ or "").strip().split("\n\n")[0].split())
        BLOCKS[name] = Block(name, kind, fn, weight, train, residual, leaf, tuple(opcodes), doc)
        return fn

    return register


@dataclass(frozen=True)
class Spec:
    """A declared argument: weight (``param``) or program input (``input``)."""

    shape: tuple[int, ...]
    dtype: str  # numpy dtype name
    role: str  # "param" or an input's meaning ("ids", "labels", "data", "key", ...)

    def abstract(self) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(self.shape, jnp.dtype(self.dtype))

    def as_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype, "role": self.role}


@dataclass
class Program:
    """What every context of one program shares."""

    mode: str  # "infer" or "train"
    rng: np.random.Generator | None  # None: building (replaying the recorded draws)
    params: dict[str, Any] = field(default_factory=dict)  # building: the arguments
    inputs: dict[str, Any] = field(default_factory=dict)
    declared_params: dict[str, Spec] = field(default_factory=dict)
    declared_inputs: dict[str, Spec] = field(default_factory=dict)


class Ctx:
    """Where a block draws hyperparameters and finds its weights (module docstring)."""

    def __init__(self, program: Program, key: str, draws: dict[str, Any], dtype: Any = jnp.float32) -> None:
        self.program, self.key, self.draws, self.dtype = program, key, draws, dtype

    @property
    def mode(self) -> str:
        return self.program.mode

    @property
    def training(self) -> bool:
        return self.program.mode == "train"

    def _draw(self, name: str, make: Callable[[np.random.Generator], Any]) -> Any:
        if name not in self.draws:
            if self.program.rng is None:
                raise KeyError(f"draw {self.key}.{name} was not recorded when the program was planned")
            self.draws[name] = make(self.program.rng)
        return self.draws[name]

    def choice(self, name: str, options: Sequence[Any], p: Sequence[float] | None = None) -> Any:
        """One of ``options`` (JSON values), with probabilities ``p`` (default uniform)."""
        weights = None if p is None else np.asarray(p, dtype=np.float64) / float(np.sum(p))
        return self._draw(name, lambda r: options[int(r.choice(len(options), p=weights))])

    def integer(self, name: str, low: int, high: int) -> int:
        """An integer in ``[low, high]``."""
        return self._draw(name, lambda r: int(r.integers(low, high + 1)))

    def flag(self, name: str, p: float = 0.5) -> bool:
        return self._draw(name, lambda r: bool(r.random() < p))

    def sub(self, name: str, dtype: Any = None) -> Ctx:
        """A child context (a nested block): draws and weights under ``name``."""
        child = self.draws.setdefault(name, {})
        return Ctx(self.program, f"{self.key}.{name}", child, self.dtype if dtype is None else dtype)

    def param(self, name: str, shape: Sequence[int], cast: bool = True) -> Any:
        """A float32 weight, an argument of the program; cast to the block's dtype if ``cast``."""
        key = f"{self.key}.{name}"
        shape = tuple(int(s) for s in shape)
        if self.program.rng is not None:
            self.program.declared_params[key] = Spec(shape, "float32", "param")
            value = jnp.zeros(shape, jnp.float32)
        else:
            value = self.program.params[key]
        return value.astype(self.dtype) if cast else value

    def input(self, name: str, shape: Sequence[int], dtype: Any, role: str) -> Any:
        """A program input that is not trained (token ids, labels, data, a random key)."""
        shape = tuple(int(s) for s in shape)
        if self.program.rng is not None:
            self.program.declared_inputs[name] = Spec(shape, jnp.dtype(dtype).name, role)
            return jnp.zeros(shape, dtype)
        return self.program.inputs[name]

    def decision(self, name: str, shape: Sequence[int] = ()) -> Any:
        """An int32 program input that a discrete decision is taken from (a branch, an offset,
        a route, a sort key, a trip count).

        Decisions are never taken from computed floats: XLA's pipeline may legally
        reassociate float arithmetic, and where a computed value sits near a decision's
        boundary a rounding difference flips the branch, the offset or the order, so the
        program's outputs change far beyond float tolerance (measured: 9 of 1,000 seeds of
        generator version 1 failed validation under XLA's own default pipeline this way).
        Integers are exact: the same decision before and after any pass.
        """
        return self.input(f"{self.key}.{name}", shape, jnp.int32, "decision")

    def pick(self, name: str, exclude: Sequence[str] = ()) -> Block:
        """A leaf body block, drawn by weight (for branches of control flow)."""
        options = [
            b for _, b in sorted(BLOCKS.items())  # by name: the order of imports never matters
            if b.kind == "body" and b.leaf and b.residual and b.name not in exclude
            and (b.train or not self.training)
        ]
        chosen = self.choice(name, [b.name for b in options], [b.weight for b in options])
        return BLOCKS[chosen]

    # ------------------------------------------------------------- common layers

    def dense(self, name: str, x: Any, out: int, bias: bool = True) -> Any:
        """``x @ w + b`` over the last axis."""
        w = self.param(f"{name}.w", (x.shape[-1], out))
        y = jnp.matmul(x, w, preferred_element_type=jnp.float32).astype(x.dtype)
        return y + self.param(f"{name}.b", (out,)) if bias else y

    def extreme(self, x: Any, axis: int, largest: bool = True) -> Any:
        """``max`` (or ``min``) over ``axis``; in a training step with the mean's gradient.

        The value is continuous in ``x``, its gradient is not: it goes to the one
        element that wins, and which one wins a near tie is decided by rounding, which
        XLA's pipeline may change (measured: generated training steps whose gradients
        went to other elements after the default pipeline, or were 0/0 = NaN where
        JAX's rule divides by the number of exact ties). So training steps take the
        value with a straight-through gradient (the mean's), continuous in ``x``.
        """
        value = jnp.max(x, axis=axis) if largest else jnp.min(x, axis=axis)
        if not self.training:
            return value
        mean = jnp.mean(x, axis=axis)
        return jax.lax.stop_gradient(value - mean) + mean

    def rectify(self, x: Any) -> Any:
        """ReLU; in a training step tanh-GELU, whose slope does not jump at 0 (a jump makes the
        gradient a decision taken from a computed float: see ``blocks_layers.KINKED``)."""
        return jax.nn.gelu(x, approximate=True) if self.training else jax.nn.relu(x)

    def norm(self, name: str, x: Any, kind: str) -> Any:
        """``layer`` / ``rms`` norm over features, ``batch`` over batch and positions, or ``none``;
        statistics in float32."""
        if kind == "none":
            return x
        xf = x.astype(jnp.float32)
        axes = tuple(range(x.ndim - 1)) if kind == "batch" else (-1,)
        if kind == "rms":
            y = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=axes, keepdims=True) + 1e-5)
        else:
            mu = jnp.mean(xf, axis=axes, keepdims=True)
            y = (xf - mu) * jax.lax.rsqrt(jnp.var(xf, axis=axes, keepdims=True) + 1e-5)
        y = y * self.param(f"{name}.g", (x.shape[-1],), cast=False)
        if kind != "rms":
            y = y + self.param(f"{name}.b", (x.shape[-1],), cast=False)
        return y.astype(x.dtype)


def divisors(n: int, options: Sequence[int]) -> list[int]:
    """The ``options`` that divide ``n`` (at least ``[1]``)."""
    found = [o for o in options if n % o == 0]
    return found or [1]


def fan_in_scale(n: int) -> float:
    return 1.0 / math.sqrt(max(n, 1))
