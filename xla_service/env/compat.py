"""Restores three NumPy 1 names that compiler_gym 0.2.5 uses, removed in NumPy 2.

``np.NINF`` and ``np.PINF`` are read when ``compiler_gym.service.proto`` is
imported; ``np.find_common_type`` is called by ``compiler_gym.spaces``. This
runs before either, from the ``gym.envs`` plugin hook (see registration.py),
and changes nothing in site-packages.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["restore_numpy_names"]


def _find_common_type(array_types: Any, scalar_types: Any) -> Any:
    """NumPy 1's ``find_common_type``, through its documented replacement."""
    return np.result_type(*array_types, *scalar_types)


def restore_numpy_names() -> None:
    """Define the missing names, leaving any that exist alone. Idempotent."""
    for name, value in (
        ("NINF", -np.inf),
        ("PINF", np.inf),
        ("find_common_type", _find_common_type),
    ):
        if not hasattr(np, name):
            setattr(np, name, value)
