"""The client's action space: CompilerGym's ``Commandline``, one flag per XLA pass.

The service sends a ``CommandlineSpace``; :func:`action_space_converter`
turns it into :class:`PassSpace`, a ``Commandline`` (so CompilerGym's
``CommandlineWithTerminalAction`` and ``ConstrainedCommandline`` wrappers
accept it) whose flags are the pass names, with a description of each pass
and close-match suggestions for unknown names.
"""
from __future__ import annotations

from typing import Any

from compiler_gym.service.client_service_compiler_env import ServiceMessageConverters
from compiler_gym.service.proto import py_converters
from compiler_gym.spaces import Commandline, CommandlineFlag

from xla_service.catalog.passes import get_pass
from xla_service.errors import UnknownPassError, close_matches

__all__ = ["PassSpace", "action_space_converter", "message_converters"]


def _description(name: str) -> str:
    try:
        spec = get_pass(name)
    except UnknownPassError:
        return "XLA pass"
    if spec.parent:
        return f"XLA pass, run alone inside the {spec.parent} fixpoint pipeline"
    if spec.members:
        return f"XLA's {name} fixpoint pipeline ({len(spec.members)} passes)"
    return "XLA pass"


class PassSpace(Commandline):
    """``Commandline`` whose flags are XLA pass names."""

    def __getitem__(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise UnknownPassError(
                f"Unknown pass {name!r}: expected one of the {len(self.names)} passes of "
                f"env.action_space.names.{close_matches(name, self.names)}"
            ) from None


def action_space_converter(message: Any) -> PassSpace:
    """CompilerGym's converter for an ``ActionSpace`` message, as a :class:`PassSpace`."""
    space = py_converters.make_message_default_converter()(message.space)
    names = list(space.names)
    converted = PassSpace([CommandlineFlag(n, n, _description(n)) for n in names], name=message.name)
    return converted


def message_converters() -> ServiceMessageConverters:
    return ServiceMessageConverters(action_space_converter=action_space_converter)
