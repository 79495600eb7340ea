"""Layers only look down: each package imports only what its layer may (read from the code)."""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "xla_service"

#: package -> prefixes its modules must not import.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "catalog": ("jax", "jaxlib", "numpy", "grpc", "compiler_gym", "xla_service.passes", "xla_service.session",
                "xla_service.runtime", "xla_service.env", "xla_service.gym", "xla_service.store"),
    "passes": ("grpc", "compiler_gym", "gymnasium", "xla_service.session", "xla_service.runtime",
               "xla_service.env", "xla_service.gym", "xla_service.store"),
    "store": ("jax", "jaxlib", "grpc", "compiler_gym", "xla_service.session", "xla_service.runtime",
              "xla_service.env", "xla_service.gym"),
    "session": ("jax", "jaxlib", "compiler_gym", "gymnasium", "xla_service.runtime", "xla_service.env",
                "xla_service.gym", "xla_service.store"),
    "runtime": ("jax", "jaxlib", "compiler_gym", "xla_service.passes", "xla_service.env", "xla_service.gym",
                "xla_service.store", "xla_service.catalog"),
    "env": ("jax", "jaxlib", "xla_service.session", "xla_service.runtime", "xla_service.gym",
            "xla_service.store", "xla_service.passes"),
    "gym": ("jax", "jaxlib", "xla_service.session", "xla_service.runtime", "xla_service.store",
            "xla_service.passes"),
}
ALLOWED: set[tuple[str, str]] = set()


def _imports(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)


def _violations(package: str) -> set[str]:
    found = set()
    for path in (PACKAGE / package).rglob("*.py"):
        for name in _imports(path):
            for prefix in FORBIDDEN[package]:
                if (name == prefix or name.startswith(prefix + ".")) and (package, name) not in ALLOWED:
                    found.add(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layers_only_look_down(package):
    assert not _violations(package)


@pytest.mark.parametrize(
    "module", ["xla_service.service", "xla_service.env.xla_env", "xla_service.gym.env", "xla_service.store.__main__"]
)
def test_only_worker_processes_import_jax(module):
    import subprocess
    import sys

    code = f"import sys, {module}; sys.exit(1 if 'jax' in sys.modules else 0)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{module} imports jax" + done.stderr[-2000:]
