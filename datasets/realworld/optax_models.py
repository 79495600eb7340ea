"""Optax optimizer updates, ``update`` + ``apply_updates`` of one optimizer
on the parameter tree of a model (MLP, CNN, transformer shapes): parameters,
gradients and optimizer state are arguments. The model of a module (its split
unit) is the optimizer."""
from __future__ import annotations

from xla_gym_datasets.realworld.spec import LibraryInfo, Spec, optimizer

__all__ = ["INFO", "specs", "OPTIMIZERS"]

OPTIMIZERS = ("sgd", "adam", "adamw", "lion", "lamb", "adafactor", "rmsprop", "adagrad", "novograd",
              "yogi", "radam", "adabelief", "nadam", "lars", "sm3", "fromage", "muon", "schedule_free",
              "multisteps_adam")

INFO = LibraryInfo(
    name="optax",
    distributions=("optax",),
    license="Apache-2.0",
    homepage="https://github.com/google-deepmind/optax",
    description="Optax optimizer updates (update + apply_updates) on the parameter trees of real model shapes",
    validation=("optax-lamb", "optax-yogi", "optax-sm3"),
    test=("optax-adafactor", "optax-muon", "optax-novograd", "optax-multisteps_adam"),
)

#: parameter trees: name -> {leaf name: shape}
TREES: dict[str, dict[str, tuple[int, ...]]] = {
    "mlp": {f"dense{i}/{k}": ((256, 256) if k == "w" else (256,)) for i in range(4) for k in ("w", "b")},
    "cnn": {**{f"conv{i}/w": (3, 3, 16 * 2**i, 32 * 2**i) for i in range(3)},
            **{f"bn{i}/scale": (32 * 2**i,) for i in range(3)}, "head/w": (128, 10)},
    "transformer": {**{f"layer{i}/{k}": s for i in range(4) for k, s in
                       (("qkv", (128, 384)), ("proj", (128, 128)), ("fc1", (128, 512)), ("fc2", (512, 128)),
                        ("ln1", (128,)), ("ln2", (128,)))},
                    "embed": (512, 128)},
}


def _build(opt_name: str, tree: str):
    import jax.numpy as jnp
    import optax

    params = {k: jnp.full(s, 0.01, jnp.float32) for k, s in TREES[tree].items()}
    opt = optimizer(opt_name)
    state = opt.init(params)

    def step(params, grads, state):
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step, (params, params, state)


def specs() -> list[Spec]:
    out = []
    for name in OPTIMIZERS:
        for tree in TREES:
            out.append(Spec(f"optax-{name}-{tree}", f"optax-{name}", "train",
                            {"model": f"optax-{name}", "optimizer": name, "tree": tree,
                             "leaves": {k: list(s) for k, s in TREES[tree].items()}},
                            lambda n=name, t=tree: _build(n, t), f"optax.{name}"))
    return out
