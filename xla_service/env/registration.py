"""Makes ``compiler_gym.make("xla-v0")`` work with the stock compiler_gym.

gym 0.21 runs every ``gym.envs`` entry point when it is imported, and
compiler_gym imports gym first thing. :func:`register_plugin` (our entry
point) therefore runs while compiler_gym is half-imported, so it must not
import compiler_gym: it restores the NumPy names compiler_gym needs, puts the
``xla-v0`` spec straight into gym's registry (gym's ``register()`` would file
it under the plugin's namespace), and has ``xla-v0`` added to
``compiler_gym.COMPILER_GYM_ENVS`` (what ``manual_env --ls_env`` lists) once
compiler_gym defines that list, a moment later.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from xla_service.env import ENV_ID
from xla_service.env.compat import restore_numpy_names

__all__ = ["register_plugin"]

ENTRY_POINT = "xla_service.env.xla_env:XlaEnv"
_ENV_LIST_MODULE = "compiler_gym.util.registration"


def _list_env(module: ModuleType) -> None:
    envs = getattr(module, "COMPILER_GYM_ENVS", None)
    if envs is not None and ENV_ID not in envs:
        envs.append(ENV_ID)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` right after the module ``name`` is first imported."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name, self.then = name, then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original(module)
            self.then(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _list_in_compiler_gym() -> None:
    module = sys.modules.get(_ENV_LIST_MODULE)
    if module is not None:
        _list_env(module)
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(_ENV_LIST_MODULE, _list_env))


def register_plugin() -> None:
    """The ``gym.envs`` entry point. Idempotent."""
    restore_numpy_names()
    from gym.envs.registration import EnvSpec, registry

    if ENV_ID not in registry.env_specs:
        registry.env_specs[ENV_ID] = EnvSpec(ENV_ID, entry_point=ENTRY_POINT, order_enforce=False)
    _list_in_compiler_gym()
