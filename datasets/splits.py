"""Fixed train / validation / test splits, one rule per family.

Every rule is a pure function of a configuration (no randomness), and holds
out whole values of one architectural axis, so that no test (or validation)
configuration shares that value with any training configuration: a policy
evaluated on ``test`` has never seen a graph of that depth (or width, or
architecture) during training.

=========  ==========================================  ==============  ============
family     axis held out                               validation      test
=========  ==========================================  ==============  ============
gpt2       number of layers ``n_layer``                3               6
bert       number of layers ``n_layer``                3               6
resnet     architecture (stage depths, block type)     resnet26        resnet18,
                                                                       resnet50
rnn        number of stacked recurrent layers          3               4
vit        number of layers ``n_layer``                3               6
moe        model width ``d_model``                     48              96
=========  ==========================================  ==============  ============

Everything else is ``train``. ``tests/datasets/test_models.py`` checks that
the held-out values never occur in a training configuration.
"""
from __future__ import annotations

from typing import Any

SPLITS = ("train", "validation", "test")

#: family -> (config attribute, validation values, test values)
RULES: dict[str, tuple[str, tuple[Any, ...], tuple[Any, ...]]] = {
    "gpt2": ("n_layer", (3,), (6,)),
    "bert": ("n_layer", (3,), (6,)),
    "resnet": ("arch", ("resnet26",), ("resnet18", "resnet50")),
    "rnn": ("n_layer", (3,), (4,)),
    "vit": ("n_layer", (3,), (6,)),
    "moe": ("d_model", (48,), (96,)),
}


def split_axis(family: str) -> str:
    """The configuration attribute whose values decide the split."""
    return RULES[family][0]


def split(family: str, config: Any) -> str:
    """``"train"``, ``"validation"`` or ``"test"`` for ``config`` of ``family``."""
    axis, validation, test = RULES[family]
    value = getattr(config, axis)
    if value in test:
        return "test"
    if value in validation:
        return "validation"
    return "train"
