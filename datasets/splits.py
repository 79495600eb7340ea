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

Two more families are held out whole, every configuration in the fourth
split ``heldout``: no agent trains, tunes or is tested on them by default, and
they differ in structure from the six (the leaderboard reports them as their
own column, a transfer to unseen architectures):

=========  ======================================================
family     structure
=========  ======================================================
unet       DDPM U-Net: skip connections across resolutions, group
           norm, pooling and upsampling, pixel attention
ssm        Mamba-style selective state space: a linear recurrence as
           ``lax.scan`` or as ``lax.associative_scan``
=========  ======================================================
"""
from __future__ import annotations

from typing import Any

SPLITS = ("train", "validation", "test", "heldout")

#: family -> (config attribute, validation values, test values)
RULES: dict[str, tuple[str, tuple[Any, ...], tuple[Any, ...]]] = {
    "gpt2": ("n_layer", (3,), (6,)),
    "bert": ("n_layer", (3,), (6,)),
    "resnet": ("arch", ("resnet26",), ("resnet18", "resnet50")),
    "rnn": ("n_layer", (3,), (4,)),
    "vit": ("n_layer", (3,), (6,)),
    "moe": ("d_model", (48,), (96,)),
}

#: Families held out whole (split ``heldout``), never in train, validation or test.
HELD_OUT_FAMILIES = ("unet", "ssm")


def split_axis(family: str) -> str:
    """The configuration attribute whose values decide the split (``"family"``
    for a family held out whole)."""
    if family in HELD_OUT_FAMILIES:
        return "family"
    return RULES[family][0]


def split(family: str, config: Any) -> str:
    """``"train"``, ``"validation"``, ``"test"`` or ``"heldout"`` for ``config`` of ``family``."""
    if family in HELD_OUT_FAMILIES:
        return "heldout"
    axis, validation, test = RULES[family]
    value = getattr(config, axis)
    if value in test:
        return "test"
    if value in validation:
        return "validation"
    return "train"
