"""The action space of xla-v0: XLA's passes, as CompilerGym's ``Commandline`` space.

Sent as a ``CommandlineSpace`` packed in the space's ``any_value``, which the
stock client turns into ``compiler_gym.spaces.Commandline`` whose flags are
the pass names: ``env.action_space.names``, ``env.action_space["cse"]`` and
CompilerGym's ``CommandlineWithTerminalAction`` and ``ConstrainedCommandline``
wrappers work. The observation spaces are in ``observations.py``.
"""
from __future__ import annotations

from xla_service.catalog.passes import PASS_NAMES
from xla_service.proto import ActionSpace, CommandlineSpace, Space

__all__ = ["ACTION_SPACES", "ACTION_SPACE_NAME"]

ACTION_SPACE_NAME = "passes"


def _commandline(names: list[str]) -> Space:
    space = Space()
    space.any_value.Pack(CommandlineSpace(name=names))
    return space


ACTION_SPACES: list[ActionSpace] = [
    ActionSpace(name=ACTION_SPACE_NAME, space=_commandline(list(PASS_NAMES)))
]
