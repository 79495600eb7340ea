"""One seed to one valid module: draws, size control, XLA's check, metadata, the disk cache.

A seed's *attempt* ``a`` plans a program from the random stream
``numpy.random.default_rng([seed, a])``, builds and lowers it, and has XLA
parse and normalize it (``xla_service.passes.xla.load``: exactly what the
environment loads), which gives its op count under the count rule. If the
count falls outside the requested range, the same attempt is planned again
for a corrected target (at most ``RESIZES`` times: the same draws, more or
fewer blocks). An attempt that JAX or XLA rejects, or that stays outside the
range, is recorded in the metadata's ``rejected`` and the next attempt is
drawn; the first attempt that passes is the seed's module. All of it is a
function of the seed, the generator version and jaxlib: the same text in
every process.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from xla_service.catalog import ENGINE_SEMANTICS_VERSION
from xla_service.catalog.generator import DATASET, MAX_ATTEMPTS, VERSION, Recipe, parse_recipe
from xla_service.errors import BenchmarkError

__all__ = ["Generated", "Rejected", "attempt", "generate", "worker_generate", "RESIZES"]

#: Re-plans of one attempt for a corrected size target.
RESIZES = 3
#: Largest literal (elements) a generated module may hold: weights are arguments.
MAX_LITERAL = 64
_LITERAL = re.compile(r"=\s*[a-z]+[0-9]*\[([0-9,]*)\][^ ]*\s+constant\(")
_DTYPE = re.compile(r"\b(pred|[su](?:4|8|16|32|64)|bf16|f16|f32|f64|c64|c128|f8e\w+)\[")


class Rejected(Exception):
    """An attempt that JAX or XLA rejected, or whose size is out of range."""


@dataclass(frozen=True)
class Generated:
    recipe: Recipe
    text: str
    metadata: dict[str, Any]


def _largest_literal(text: str) -> int:
    largest = 0
    for m in _LITERAL.finditer(text):
        n = 1
        for dim in filter(None, m[1].split(",")):
            n *= int(dim)
        largest = max(largest, n)
    return largest


def attempt(recipe: Recipe, index: int) -> Generated:
    """Attempt ``index`` of ``recipe``'s seed; :class:`Rejected` says why it is not served."""
    import jax
    import jaxlib
    from xla_gym_datasets.generator import program

    from xla_service.passes import xla

    target: int | None = None
    inference = False
    resizes: list[dict[str, int]] = []
    low, high = recipe.ops
    for _ in range(RESIZES + 1):
        try:
            plan, declared = program.plan(recipe.seed, index, recipe.ops, target, inference)
            fn, args = program.build(plan, declared)
            raw = program.lower(fn, args)
        except Exception as e:  # noqa: BLE001 - JAX's verdict on this draw
            raise Rejected(f"JAX rejected the draw: {type(e).__name__}: {_first_line(e)}") from None
        try:
            state = xla.load(raw)
        except Exception as e:  # noqa: BLE001 - XLA's verdict on this draw
            raise Rejected(f"XLA rejected the module: {type(e).__name__}: {_first_line(e)}") from None
        count = state.op_count
        if low <= count <= high:
            break
        resizes.append({"target": int(plan.draws["target_ops"]), "op_count": count})
        if count > high and not plan.blocks:  # the stem and head alone: train no more
            inference = plan.mode == "train"
        goal = min(max(plan.draws["target_ops"], low * 1.1), high * 0.9)
        target = max(int(plan.draws["target_ops"] * goal / max(count, 1)), 1)
    else:
        raise Rejected(f"op count {count} outside [{low}, {high}] after {RESIZES} resizes")
    literal = _largest_literal(state.text)
    if literal > MAX_LITERAL:
        raise Rejected(f"a literal of {literal} elements (weights must be arguments)")
    params, inputs = declared.declared_params, declared.declared_inputs
    metadata = {
        "generator": DATASET,
        "generator_version": VERSION,
        "uri": recipe.uri,
        "recipe": recipe.text,
        "seed": recipe.seed,
        "ops_range": list(recipe.ops),
        "attempt": index,
        "resizes": resizes,
        "program": plan.as_json(),
        "op_count": count,
        "opcodes": dict(sorted(state.histogram().items())),
        "dtypes": sorted(set(_DTYPE.findall(state.text))),
        "parameters": {
            "tensors": len(params),
            "elements": sum(_elements(s.shape) for s in params.values()),
        },
        "inputs": {k: s.as_json() for k, s in sorted(inputs.items())},
        "largest_literal": literal,
        "sha256": hashlib.sha256(state.text.encode()).hexdigest(),
        "text_bytes": len(state.text.encode()),
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib.__version__,
        "engine_semantics": ENGINE_SEMANTICS_VERSION,
    }
    return Generated(recipe, state.text, metadata)


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else "")[:300]


def generate(recipe: Recipe | int, use_cache: bool = True) -> Generated:
    """The seed's module, from the disk cache or made here (every attempt in this process)."""
    from xla_gym_datasets.generator import cache

    recipe = recipe if isinstance(recipe, Recipe) else Recipe(recipe)
    if use_cache and (hit := cache.read(recipe)) is not None:
        return Generated(recipe, *hit)
    rejected: list[list[Any]] = []
    for index in range(MAX_ATTEMPTS):
        try:
            made = attempt(recipe, index)
        except Rejected as e:
            rejected.append([index, str(e)])
            continue
        made.metadata["rejected"] = rejected
        if use_cache:
            cache.write(recipe, made.text, made.metadata)
        return made
    raise BenchmarkError(_exhausted(recipe, rejected))


def _exhausted(recipe: Recipe, rejected: list[list[Any]]) -> str:
    reasons = "; ".join(f"draw {i}: {why}" for i, why in rejected)
    return f"No valid program for {recipe.uri} in {MAX_ATTEMPTS} draws ({reasons})"


def worker_generate(recipe_text: str, index: int, rejected: list[list[Any]]) -> tuple[str, ...]:
    """The worker's ``generate`` request: one attempt (the engine loops, so that an XLA abort
    costs one draw); the disk cache first. ``("ok", text, metadata JSON)`` or ``("rejected", why)``."""
    from xla_gym_datasets.generator import cache

    try:
        recipe = parse_recipe(recipe_text)
    except ValueError as e:
        raise BenchmarkError(str(e)) from None
    if recipe is None:
        raise BenchmarkError(f"Not a generator recipe: {recipe_text[:80]!r}")
    hit = cache.read(recipe)
    if hit is not None:
        return "ok", hit[0], json.dumps(hit[1], sort_keys=True)
    try:
        made = attempt(recipe, index)
    except Rejected as e:
        return "rejected", str(e)
    made.metadata["rejected"] = [list(r) for r in rejected]
    cache.write(recipe, made.text, made.metadata)
    return "ok", made.text, json.dumps(made.metadata, sort_keys=True)


def opcode_union(metadata: list[dict[str, Any]]) -> Counter[str]:
    """How many modules use each opcode."""
    seen: Counter[str] = Counter()
    for m in metadata:
        seen.update(m.get("opcodes", {}).keys())
    return seen
