"""What a library file of ``datasets/realworld`` declares: its modules as
:class:`Spec` (a name, the model it belongs to, its configuration, and a
builder returning ``(function, example_args)``), and how one is lowered.

The function is lowered with ``jax.jit(fn).lower(*args)``: parameters,
optimizer state and data are arguments, never closed-over constants.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Spec", "LibraryInfo", "lower", "argument_summary", "max_constant_elements"]


@dataclass(frozen=True)
class Spec:
    """One module: ``name`` (unique in its dataset), ``model`` (the split unit:
    modules of one model share a split), ``mode`` (``train``, ``infer`` or
    ``step`` for a simulation or solver step), the JSON-able ``config``, and
    ``build() -> (function, example_args)``."""

    name: str
    model: str
    mode: str
    config: dict[str, Any]
    build: Callable[[], tuple[Callable[..., Any], tuple[Any, ...]]] = field(compare=False)
    function: str = ""  # the library function or class lowered, e.g. "flax.linen.Dense"
    #: False where XLA's CPU backend aborts compiling the module (then only the
    #: default HLO pipeline runs, no execution): recorded as verification null.
    execute: bool = True


@dataclass(frozen=True)
class LibraryInfo:
    """A dataset ``xla-<name>-v0``: the library's distribution(s), license and
    the models held out for validation and test (every other model trains)."""

    name: str
    distributions: tuple[str, ...]
    license: str
    homepage: str
    description: str
    validation: tuple[str, ...]
    test: tuple[str, ...]

    def split(self, model: str) -> str:
        if model in self.test:
            return "test"
        if model in self.validation:
            return "validation"
        return "train"


def lower(spec: Spec) -> tuple[str, tuple[Any, ...]]:
    """The raw HLO text of ``spec``'s function and its example arguments."""
    import jax

    fn, args = spec.build()
    ir: Any = jax.jit(fn).lower(*args).compiler_ir("hlo")
    text = ir.as_hlo_text()
    return text, args


def argument_summary(args: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Per positional argument: its leaves, elements and dtypes, and the
    shapes of its leaves as ``{"dtype[d0,d1]": number of leaves}`` (sorted;
    the order of the leaves is that of the module's parameters)."""
    from collections import Counter

    import jax
    import numpy as np

    out = []
    for i, a in enumerate(args):
        leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(a)]
        shapes = [f"{np.dtype(x.dtype).name}[{','.join(map(str, np.shape(x)))}]" for x in leaves]
        out.append(
            {
                "index": i,
                "leaves": len(leaves),
                "elements": int(sum(int(np.size(x)) for x in leaves)),
                "dtypes": sorted({np.dtype(x.dtype).name for x in leaves}),
                "shapes": dict(sorted(Counter(shapes).items())),
            }
        )
    return out


_CONSTANT = re.compile(r"= [a-z0-9]+\[([0-9,]*)\][^ ]* constant\(")


def max_constant_elements(text: str) -> int:
    """The largest number of elements of one ``constant`` instruction in ``text``."""
    biggest = 0
    for m in _CONSTANT.finditer(text):
        n = 1
        for d in filter(None, m.group(1).split(",")):
            n *= int(d)
        biggest = max(biggest, n)
    return biggest


def optax_train_step(loss_fn: Callable[..., Any], optimizer: Any) -> Callable[..., Any]:
    """``step(params, opt_state, *batch) -> (params, opt_state, loss)``: the
    gradient of ``loss_fn(params, *batch)`` and one ``optimizer`` update."""
    import jax
    import optax

    def step(params, opt_state, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step


def optimizer(name: str) -> Any:
    """An optax optimizer by name (the ones the library files use)."""
    import optax

    table: dict[str, Callable[[], Any]] = {
        "sgd": lambda: optax.sgd(1e-2, momentum=0.9),
        "adam": lambda: optax.adam(1e-3),
        "adamw": lambda: optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3, weight_decay=1e-2)),
        "lion": lambda: optax.lion(1e-4),
        "lamb": lambda: optax.lamb(1e-3),
        "adafactor": lambda: optax.adafactor(1e-3),
        "rmsprop": lambda: optax.rmsprop(1e-3),
        "adagrad": lambda: optax.adagrad(1e-2),
        "novograd": lambda: optax.novograd(1e-3),
        "yogi": lambda: optax.yogi(1e-3),
        "radam": lambda: optax.radam(1e-3),
        "adabelief": lambda: optax.adabelief(1e-3),
        "nadam": lambda: optax.nadam(1e-3),
        "lars": lambda: optax.lars(1e-2),
        "sm3": lambda: optax.sm3(1e-2),
        "fromage": lambda: optax.fromage(1e-2),
        "muon": lambda: optax.contrib.muon(1e-3),
        "schedule_free": lambda: optax.contrib.schedule_free_adamw(1e-3),
        "multisteps_adam": lambda: optax.MultiSteps(optax.adam(1e-3), every_k_schedule=4),
    }
    if name not in table:
        raise ValueError(f"Unknown optimizer: expected one of {sorted(table)}, got {name!r}")
    return table[name]()
