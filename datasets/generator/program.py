"""A program of the grammar: planned from a seed (the draws), built into a jitted JAX function.

``program := mode precision stem body* head`` (``datasets/README.md``,
"The generator"): *mode* is an inference graph or a whole training step
(loss, ``jax.value_and_grad``, an optimizer update); *precision* is float32,
bfloat16, or mixed (each block draws its own); the body grows, block by block
drawn by weight from :data:`grammar.BLOCKS`, until the estimated op count
reaches a target drawn log-uniformly inside the requested range.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from xla_gym_datasets.generator import blocks_control, blocks_index, blocks_io, blocks_layers  # noqa: F401
from xla_gym_datasets.generator.grammar import (
    BLOCKS,
    DTYPES,
    Block,
    Ctx,
    NotApplicable,
    Program,
    Spec,
)
from xla_gym_datasets.models.common import make_optimizer

__all__ = ["Plan", "plan", "build", "lower", "MAX_BLOCKS"]

MAX_BLOCKS = 48
#: Normalized HLO instructions per traced jaxpr equation; the growth of a
#: training step's stem and head over their forward pass, and of its body over
#: a forward and input-gradient trace (measured on generated programs).
OPS_PER_EQN = 1.08
TRAIN_FACTOR = 2.6
TRAIN_BODY = 1.12
#: Optimizer instructions per weight tensor in a training step.
OPS_PER_PARAM = {"sgd": 4, "adam": 14, "adamw": 16}


@dataclass
class Plan:
    """Every draw of one program (JSON-able): the metadata's ``program``."""

    seed: int
    attempt: int
    draws: dict[str, Any] = field(default_factory=dict)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    estimate: float = 0.0

    @property
    def mode(self) -> str:
        return str(self.draws["mode"])

    def as_json(self) -> dict[str, Any]:
        return {**self.draws, "blocks": self.blocks, "skipped": self.skipped,
                "estimated_ops": int(self.estimate)}


def _count(jaxpr: Any) -> int:
    """Equations of a jaxpr, those of nested jaxprs (loops, branches) included."""
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    total += _count(inner)
    return total


def _trace(fn: Callable[..., Any], *avals: Any) -> tuple[int, Any]:
    closed = jax.make_jaxpr(fn)(*avals)
    return _count(closed.jaxpr), closed.out_avals


def _pick(rng: np.random.Generator, kind: str, mode: str) -> Block:
    options = [b for _, b in sorted(BLOCKS.items()) if b.kind == kind and (b.train or mode == "infer")]
    weights = np.asarray([b.weight for b in options], dtype=np.float64)
    return options[int(rng.choice(len(options), p=weights / weights.sum()))]


def apply_body(blk: Block, ctx: Ctx, x: Any) -> Any:
    """A body block on the stream: ``x + fn(norm(x))`` when residual, else ``fn(x)``."""
    h = x.astype(ctx.dtype)
    if blk.residual:
        kind = ctx.choice("prenorm", ["layer", "rms", "none"], [0.45, 0.45, 0.1])
        return x + blk.fn(ctx, ctx.norm("prenorm", h, kind)).astype(x.dtype)
    return blk.fn(ctx, h).astype(x.dtype)


def _forward_backward(blk: Block, ctx: Ctx, x: Any) -> Any:
    """The block on ``x``; in a training step also its gradient (so a block that cannot be
    differentiated is found when planning, and the estimate counts the backward pass)."""
    if not ctx.training:
        return apply_body(blk, ctx, x)
    y, pull = jax.vjp(lambda v: apply_body(blk, ctx, v), x)
    return y, pull(jnp.ones_like(y))[0]


def plan(
    seed: int, attempt: int, ops: tuple[int, int], target: int | None = None, inference: bool = False
) -> tuple[Plan, Program]:
    """Draw a program for ``(seed, attempt)``; ``target`` overrides the drawn op count target,
    ``inference`` the drawn mode (when a training step cannot be small enough)."""
    rng = np.random.default_rng([seed, attempt])
    program = Program("infer", rng)
    p = Plan(seed, attempt)
    root = Ctx(program, "program", p.draws)
    program.mode = root.choice("mode", ["infer", "train"], [0.45, 0.55])
    if inference and program.mode == "train":
        program.mode = p.draws["mode"] = "infer"
        p.draws["mode_forced"] = "a training step would exceed the size range"
    optimizer = root.choice("optimizer", ["sgd", "adam", "adamw"]) if program.mode == "train" else None
    if optimizer:
        root.flag("clip_grad_norm", 0.4)
    precision = root.choice("precision", ["f32", "bf16", "mixed"], [0.5, 0.2, 0.3])
    low, high = math.log(ops[0] * 1.15), math.log(max(ops[1] * 0.85, ops[0] * 1.15))
    drawn = int(round(math.exp(rng.uniform(low, high))))
    p.draws["target_ops"] = target or drawn
    stream = DTYPES["bf16" if precision == "bf16" else "f32"]
    factor = OPS_PER_EQN

    stem = _pick(rng, "stem", program.mode)
    p.draws["stem"] = {"block": stem.name, "draws": {}}
    eqns, (aval,) = _trace(lambda: stem.fn(Ctx(program, "stem", p.draws["stem"]["draws"], stream), None))
    aval = jax.ShapeDtypeStruct(aval.shape, stream)
    head = _pick(rng, "head", program.mode)
    p.draws["head"] = {"block": head.name, "draws": {}}
    head_ctx = Ctx(program, "head", p.draws["head"]["draws"], stream)
    head_eqns, _ = _trace(lambda x: head.fn(head_ctx, x), aval)
    fixed = eqns + head_eqns

    def estimate(body: int) -> float:
        per_param = OPS_PER_PARAM.get(optimizer or "", 0) * len(program.declared_params)
        return (fixed * (TRAIN_FACTOR if optimizer else 1.0) + body * factor) * (
            TRAIN_BODY if optimizer else 1.0) + per_param

    if optimizer and not inference and estimate(0) > 0.95 * ops[1]:
        return plan(seed, attempt, ops, target, inference=True)  # a training step is too big
    body_eqns, tries, overshoots = 0, 0, 0
    while estimate(body_eqns) < p.draws["target_ops"] and len(p.blocks) < MAX_BLOCKS and tries < 4 * MAX_BLOCKS:
        tries += 1
        blk = _pick(rng, "body", program.mode)
        dtype = precision if precision != "mixed" else ("bf16" if rng.random() < 0.5 else "f32")
        key = f"b{len(p.blocks):02d}_{blk.name}"
        entry: dict[str, Any] = {"block": blk.name, "dtype": dtype, "draws": {}}
        ctx = Ctx(program, key, entry["draws"], DTYPES[dtype])
        try:
            n, (out, *_) = _trace(lambda x, blk=blk, ctx=ctx: _forward_backward(blk, ctx, x), aval)
        except Exception as e:  # noqa: BLE001 - a draw JAX rejects is skipped (recorded)
            for table in (program.declared_params, program.declared_inputs):
                for name in [k for k in table if k.startswith(key + ".")]:
                    del table[name]
            if not isinstance(e, NotApplicable):
                p.skipped.append(f"{key}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
            continue
        if estimate(body_eqns + n) > 1.25 * p.draws["target_ops"]:  # too big: another, or stop
            for table in (program.declared_params, program.declared_inputs):
                for name in [k for k in table if k.startswith(key + ".")]:
                    del table[name]
            overshoots += 1
            if overshoots >= 6 or estimate(body_eqns) >= 0.8 * p.draws["target_ops"]:
                break
            continue
        p.blocks.append(entry)
        body_eqns += n
        aval = jax.ShapeDtypeStruct(out.shape, stream)
    _trace(lambda x: head.fn(head_ctx, x), aval)  # the head's weights and inputs at their final shapes
    p.estimate = estimate(body_eqns)
    return p, program


def build(p: Plan, declared: Program) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The jitted function of a plan and its abstract arguments (weights, optimizer state, inputs)."""
    program = Program(p.mode, None)
    stream = DTYPES["bf16" if p.draws["precision"] == "bf16" else "f32"]

    def forward(params: dict[str, Any], inputs: dict[str, Any]) -> tuple[Any, Any]:
        program.params, program.inputs = params, inputs
        x = BLOCKS[p.draws["stem"]["block"]].fn(Ctx(program, "stem", p.draws["stem"]["draws"], stream), None)
        for i, entry in enumerate(p.blocks):
            blk = BLOCKS[entry["block"]]
            x = apply_body(blk, Ctx(program, f"b{i:02d}_{blk.name}", entry["draws"], DTYPES[entry["dtype"]]), x)
        head = BLOCKS[p.draws["head"]["block"]]
        return head.fn(Ctx(program, "head", p.draws["head"]["draws"], stream), x)

    params = {k: s.abstract() for k, s in sorted(declared.declared_params.items())}
    inputs = {k: s.abstract() for k, s in sorted(declared.declared_inputs.items())}
    if p.mode == "infer":

        def generated_inference(params: dict[str, Any], inputs: dict[str, Any]) -> Any:
            return forward(params, inputs)[0]

        return jax.jit(generated_inference), (params, inputs)
    opt = make_optimizer(p.draws["optimizer"])
    clip = bool(p.draws.get("clip_grad_norm"))

    def generated_train_step(params: dict[str, Any], opt_state: Any, inputs: dict[str, Any]) -> tuple[Any, Any, Any]:
        loss, grads = jax.value_and_grad(lambda q: forward(q, inputs)[1])(params)
        if clip:
            norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree_util.tree_leaves(grads)))
            grads = jax.tree_util.tree_map(lambda g: g * jnp.minimum(1.0, 1.0 / (norm + 1e-6)), grads)
        new_params, new_state = opt.update(grads, opt_state, params)
        return new_params, new_state, loss

    return jax.jit(generated_train_step), (params, jax.eval_shape(opt.init, params), inputs)


def lower(fn: Any, args: tuple[Any, ...]) -> str:
    """The HLO text of ``fn`` lowered for abstract ``args`` (weights stay arguments)."""
    return str(fn.lower(*args).compiler_ir("hlo").as_hlo_text())


def specs(program: Program) -> tuple[dict[str, Spec], dict[str, Spec]]:
    return program.declared_params, program.declared_inputs
