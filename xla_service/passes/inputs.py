"""Validation inputs: seeded draws that keep a module's activations sensitive.

NumPy only (no jax): ``validation.validate`` passes the entry parameters' NumPy
dtypes and dimensions. One *draw* is one argument per entry parameter;
``draws(text, shapes, seed)`` makes ``DRAWS`` of them, with seeds ``seed``,
``seed + 1``, ... A draw is a function of its seed alone: parameter ``i``
comes from ``numpy.random.default_rng([seed, i])``, so the same seed gives
byte-identical inputs and a parameter's values do not depend on the others'.
The seed modulo 3 picks the draw's regime (``REGIMES``), so that the 3 draws
of a validation see each: *sensitive* (the rules below), *accumulators zero*
(the same, with accumulators other than second moments zero) and
*saturating* (floating point uniform in [0, 1), as validation drew before:
activations large, saturated, reaching overflow and underflow guards;
integers and booleans by their rules).

Each parameter gets a :class:`Rule` read from its uses in the HLO text
(:func:`rules`), followed forward from the entry ``parameter`` through
instructions that keep its meaning, into and out of ``call``, ``while`` and
``conditional`` computations (tuple elements followed by index):

- floating point (and complex): normal, mean 0, standard deviation ``scale``.
  A parameter that reaches an operand of a ``dot`` (through shape changes,
  converts, slices) gets ``scale = fan_in ** -1/2``, ``fan_in`` being the
  product of that operand's contracting dimensions, so that the dot's output
  has unit scale when its other operand has; ``fan_in ** -1/4`` when the
  other operand also comes from a parameter (``x @ w``: the product again has
  unit scale). The kernel of a ``convolution``: ``fan_in`` = every kernel
  dimension but the output features. Several dots (a training step's forward
  and backward products): the smallest scale, so that none saturates.
  Otherwise ``scale`` = 1: layer-norm gains, biases, embedding tables, images.
- a floating point parameter that reaches the operand of ``sqrt``, ``rsqrt``,
  ``log`` or ``power``'s base through sums, scalings by a scalar, reductions
  and shape changes (Adam's second moment, batch norm's running variance) is
  drawn as ``|normal|``: the function stays in its domain.
- an *accumulator*, a floating point parameter that no ``dot`` or
  ``convolution`` depends on (an optimizer's moments, training's running
  statistics: what a training step only adds to), is zero in *accumulators
  zero* draws, so that what the step adds to it shows in full instead of
  within tolerance of the accumulator's own value. Not one drawn as
  ``|normal|`` (Adam's second moment): zero, the update ``m / sqrt(v)``
  becomes the sign of each gradient element, rounding noise where a
  gradient element is near zero (measured: a false alarm on a BERT step).
- integers: uniform in ``[0, bound)`` when the value (through reshapes,
  converts, slices, selects, adds: JAX's wrapping of negative indices) is
  the start index of a ``gather``, ``scatter``, ``dynamic-slice`` or
  ``dynamic-update-slice``: ``bound`` = the indexed dimension of the operand
  minus the slice size plus one (embedding ids below the table size,
  positions inside the sequence), the smallest over every such use. Else,
  compared with an ``iota`` of extent ``n`` (one-hot labels, lengths): uniform
  in ``[0, n)`` for ``EQ``/``NE``, ``[0, n]`` for ordering comparisons. Else,
  compared with a constant ``c``: uniform over ``{c - 1, c, c + 1}`` (every
  direction sees both outcomes). Else uniform in ``[0, schema.INPUT_INT_HIGH)``.
  An array of two elements or more holds both ends of its range (at
  positions drawn from the same generator), except in *accumulators zero*
  draws.
- booleans: a fair coin, with both values present (one element flipped if a
  draw came out all equal); a single boolean alternates with the seed.

A module whose text cannot be read gets the plain rules (normal, scale 1;
integers in ``[0, INPUT_INT_HIGH)``; booleans both ways). Documented in
``docs/validation.md``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from xla_service.passes.input_rules import Rule, Shape, plain_rule, rules

__all__ = ["DRAWS", "REGIMES", "Rule", "rules", "draw", "draws", "plain_rule"]

#: Draws per validation by default: seeds ``seed``, ``seed + 1``, ``seed + 2``.
DRAWS = 3

#: What a draw's seed modulo 3 makes of it (``REGIMES[seed % 3]``): so that
#: every validation's 3 consecutive seeds see each once.
REGIMES = ("sensitive", "accumulators zero", "saturating")


def draw(parameter_rules: Sequence[Rule], shapes: Sequence[Shape], seed: int) -> list[np.ndarray]:
    """One argument per parameter, from ``rng([seed, i])`` for parameter ``i``.

    The seed's regime (``REGIMES[seed % 3]``): *sensitive* draws follow the
    rules; *accumulators zero* draws too, with accumulators zero (but the
    ``positive`` ones); *saturating* draws make floating point values uniform
    in [0, 1) (what validation drew before: activations grow, saturate, reach
    overflow and underflow guards), integers and booleans by their rules. Integer arrays of two elements or
    more hold both ends of their range (at positions drawn too), except in
    *accumulators zero* draws.
    """
    regime = REGIMES[seed % 3]
    arrays = []
    for i, (rule, (dtype, dims)) in enumerate(zip(parameter_rules, shapes)):
        dtype, dims = np.dtype(dtype), tuple(dims)
        rng = np.random.default_rng([seed, i])
        if rule.kind == "bool":
            value = rng.integers(0, 2, dims).astype(np.bool_)
            if value.size == 1:
                value[...] = (seed + i) % 2 == 1
            elif value.size > 1 and (value.all() or not value.any()):
                value.flat[int(rng.integers(value.size))] ^= True
            arrays.append(value)
        elif rule.kind in ("integers", "values"):
            if rule.kind == "values":
                ints = np.asarray(rng.choice(np.array(rule.values, np.int64), dims))
                ends = (rule.values[0], rule.values[-1])
            else:
                ints = np.asarray(rng.integers(rule.low, rule.high, dims, dtype=np.int64))
                ends = (rule.low, rule.high - 1)
            if regime != "accumulators zero" and ints.size > 1:
                first, last = rng.choice(ints.size, 2, replace=False)
                ints.flat[first], ints.flat[last] = ends
            arrays.append(ints.astype(dtype))
        elif regime == "accumulators zero" and rule.accumulator and rule.kind != "positive":
            arrays.append(np.zeros(dims, dtype))
        elif regime == "saturating":
            if np.issubdtype(dtype, np.complexfloating):
                arrays.append((rng.random(dims) + 1j * rng.random(dims)).astype(dtype))
            else:
                arrays.append(rng.random(dims).astype(dtype))
        elif np.issubdtype(dtype, np.complexfloating):
            parts = rng.standard_normal((2, *dims)) * (rule.scale / math.sqrt(2))
            arrays.append((parts[0] + 1j * parts[1]).astype(dtype))
        else:
            normal = rng.standard_normal(dims) * rule.scale
            arrays.append((np.abs(normal) if rule.kind == "positive" else normal).astype(dtype))
    return arrays


def draws(text: str, shapes: Sequence[Shape], seed: int, count: int = DRAWS) -> list[list[np.ndarray]]:
    """``count`` draws for the module ``text``: seeds ``seed`` .. ``seed + count - 1``."""
    parameter_rules = rules(text, shapes)
    return [draw(parameter_rules, shapes, seed + k) for k in range(count)]
