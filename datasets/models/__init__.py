"""One module per benchmark family.

Every module exposes ``FAMILY`` (the family name used in
``benchmark://xla-<FAMILY>-v0/<name>``), ``configs() -> list[Config]`` and
``build(config) -> (jitted_fn, example_args)``. Parameters are pytrees of
arrays passed as arguments, never closed-over constants.
"""
from __future__ import annotations

import importlib

#: The six training families, then the two held out whole (``splits.HELD_OUT_FAMILIES``).
FAMILIES = ("gpt2", "bert", "resnet", "rnn", "vit", "moe", "unet", "ssm")


def get_family(name: str):
    """Return the model module of family ``name``."""
    if name not in FAMILIES:
        raise KeyError(f"unknown family {name!r}; known: {', '.join(FAMILIES)}")
    return importlib.import_module(f"xla_gym_datasets.models.{name}")
