"""pyproject.toml declares the dependencies: the environment alone is light, the extras and the lock agree.

The install itself is measured and smoke-tested in a fresh virtual environment by
``benchmarks/measure_install.py`` (minutes, network): see docs/install.md.
"""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
CORE = PROJECT["dependencies"]
EXTRAS = PROJECT["optional-dependencies"]

#: Distributions of the extras that the environment alone must not pull in.
HEAVY = {"torch", "ray", "torch-geometric", "pyarrow", "matplotlib", "stable-baselines3", "sb3-contrib", "pandas", "tensorboard"}

#: Import name -> distribution, where they differ.
DISTRIBUTION = {"grpc": "grpcio", "google": "protobuf", "PIL": "pillow", "absl": "absl-py", "yaml": "PyYAML", "sklearn": "scikit-learn"}


def _name(requirement: str) -> str:
    return re.split(r"[\[=<>!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _lock() -> dict[str, str]:
    """requirements.txt, requirements-dev.txt and requirements-realworld.txt: name -> exact pin."""
    pins: dict[str, str] = {}
    for file in ("requirements.txt", "requirements-dev.txt", "requirements-realworld.txt"):
        for line in (ROOT / file).read_text().splitlines():
            line = line.split("#")[0].strip()
            if "==" in line:
                name, version = line.split("==")
                pins[_name(name)] = version.strip()
    return pins


def _top_level_imports(folder: Path) -> set[str]:
    """Third-party modules imported at module level (not inside functions) under ``folder``."""
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        if "proto" in path.parts:
            continue
        for node in ast.parse(path.read_text()).body:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            found.update(n.split(".")[0] for n in names)
    return {n for n in found if n not in sys.stdlib_module_names}


def test_the_environment_alone_pulls_in_no_extra():
    assert not {_name(r) for r in CORE} & HEAVY, "the environment alone must install without the extras' packages"


@pytest.mark.parametrize("requirement", CORE + [r for rs in EXTRAS.values() for r in rs if not r.startswith("xla-gym")])
def test_every_pin_is_the_locks_pin(requirement):
    """pyproject.toml pins exactly what requirements*.txt (make setup's lock) pins."""
    name = _name(requirement)
    assert "==" in requirement, f"expected an exact pin, got {requirement!r}"
    assert _lock().get(name) == requirement.split("==")[1], f"{requirement!r} differs from requirements*.txt"


def test_torch_is_only_ever_the_cpu_build():
    torch = [r for rs in EXTRAS.values() for r in rs if _name(r) == "torch"]
    assert torch and all(r.endswith("+cpu") for r in torch), torch


def test_all_is_every_extra_but_dev_and_the_dataset_generators():
    """``realworld`` only regenerates the real-programs datasets (its libraries are not needed to use them)."""
    (everything,) = EXTRAS["all"]
    named = set(everything.split("[")[1].rstrip("]").split(","))
    assert named == set(EXTRAS) - {"all", "dev", "realworld"}


@pytest.mark.parametrize("folder", ["xla_service", "datasets"])
def test_the_environments_imports_are_declared(folder):
    """What the environment imports at module level is a core dependency (or ours, or compiler_gym)."""
    declared = {_name(r) for r in CORE} | {"compiler-gym", "xla-service", "xla-gym-datasets", "jaxlib", "jax"}
    missing = {_name(DISTRIBUTION.get(m, m)) for m in _top_level_imports(ROOT / folder)} - declared
    # ml_dtypes comes with jax; typing_extensions with pydantic.
    assert missing <= {"ml-dtypes", "typing-extensions"}, missing
