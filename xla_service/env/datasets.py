"""The bundled HLO suites, ``benchmark://xla-<family>-v0/<name>``, for the client.

Each suite is a folder ``datasets/xla-<family>-v0/`` holding gzip-compressed
HLO text and a ``manifest.json`` written by ``datasets/generate.py``. The
folder of suites is ``$XLA_GYM_DATASETS``, by default the installed package
``xla_gym_datasets`` (the repository's ``datasets/``). No jax: the service decompresses and parses.
"""
from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from compiler_gym.datasets import Benchmark, BenchmarkUri, Dataset

from xla_service.env.generator import GeneratorDataset
from xla_service.env.validation import make_validatable
from xla_service.errors import BenchmarkError, close_matches

__all__ = [
    "SPLITS",
    "XlaDataset",
    "datasets_root",
    "get_xla_datasets",
    "default_benchmark_uri",
    "split_benchmark_uris",
]

SPLITS = ("train", "validation", "test", "heldout")

_DESCRIPTIONS = {
    "gpt2": "GPT-2 training steps and inference graphs over a grid of configurations",
    "bert": "BERT encoder masked-language-model training steps and inference",
    "resnet": "ResNet training steps and inference, basic and bottleneck blocks",
    "rnn": "Recurrent models through lax.scan (while loops)",
    "vit": "Vision transformer training steps and inference",
    "moe": "Mixture-of-experts routing: top-k, sort, gather, scatter, control flow",
    "unet": "DDPM U-Net denoisers with skip connections (held out from all training)",
    "ssm": "Mamba-style selective state-space models, scan and associative scan (held out)",
}


def datasets_root() -> Path:
    """The folder of suites: ``$XLA_GYM_DATASETS``, else the installed package
    ``xla_gym_datasets`` (the repository's ``datasets/``, whose suites are package data)."""
    env = os.environ.get("XLA_GYM_DATASETS")
    if env:
        return Path(env)
    spec = importlib.util.find_spec("xla_gym_datasets")
    if spec is None or not spec.submodule_search_locations:
        raise BenchmarkError(
            "The bundled suites are not installed: expected the package xla_gym_datasets "
            "(make setup), or $XLA_GYM_DATASETS naming a folder of suites"
        )
    return Path(list(spec.submodule_search_locations)[0])


def default_benchmark_uri() -> str:
    """The bundled default benchmark, named in ``datasets/DEFAULT_BENCHMARK``."""
    return (datasets_root() / "DEFAULT_BENCHMARK").read_text().strip()


class XlaDataset(Dataset):
    """One suite of HLO modules, listed by its manifest."""

    def __init__(self, folder: Path) -> None:
        with open(folder / "manifest.json") as f:
            manifest = json.load(f)
        family = manifest["family"]
        #: "bundled" (this project's models) or "realworld" (lowered from public
        #: JAX libraries, datasets/realworld): only named suites of the latter
        #: enter split_benchmark_uris.
        self.collection: str = manifest.get("collection", "bundled")
        super().__init__(
            name=f"benchmark://{folder.name}",
            description=manifest.get("description")
            or _DESCRIPTIONS.get(family, f"{family} HLO modules made with JAX"),
            license=manifest.get("license", "MIT"),
            validatable="Yes",
        )
        self.folder = folder
        self.entries: dict[str, dict[str, Any]] = {
            e["name"]: e for e in manifest["benchmarks"]
        }
        self._names: list[str] = sorted(self.entries)

    @property
    def size(self) -> int:
        return len(self._names)

    def benchmark_uris(self) -> Iterable[str]:
        return (f"{self.name}/{n}" for n in self._names)

    def benchmark_from_parsed_uri(self, uri: BenchmarkUri) -> Benchmark:
        name = uri.path.lstrip("/")
        entry = self.entries.get(name)
        if entry is None:
            raise LookupError(
                f"Benchmark not found: {uri} is not in {self.name}."
                f"{close_matches(name, self._names)}"
            )
        path = self.folder / entry["file"]
        try:
            data = path.read_bytes()
        except OSError as e:
            raise BenchmarkError(f"Cannot read benchmark {uri} from {path}: {e}") from None
        return make_validatable(Benchmark.from_file_contents(str(uri), data))

    def split_uris(self, split: str) -> list[str]:
        """The URIs of one split: ``"train"``, ``"validation"``, ``"test"`` or ``"heldout"``.

        Splits hold out whole configurations (``datasets/splits.py``): agents
        train on ``train`` and are evaluated on ``test``; ``heldout`` holds the
        families no agent trains on (every configuration of them).
        """
        if split not in SPLITS:
            raise ValueError(f"Unknown split: expected one of {SPLITS}, got {split!r}")
        return [f"{self.name}/{n}" for n in self._names if self.entries[n]["split"] == split]

    def _random_benchmark(self, random_state: np.random.Generator) -> Benchmark:
        name = self._names[random_state.integers(len(self._names))]
        return self.benchmark(f"{self.name}/{name}")


def get_xla_datasets(root: Path | None = None) -> list[XlaDataset | GeneratorDataset]:
    """Every suite under ``root`` (default :func:`datasets_root`), then the generator
    ``generator://xla-random-v0`` (``env/generator.py``)."""
    root = root or datasets_root()
    suites: list[XlaDataset | GeneratorDataset] = [
        XlaDataset(d) for d in sorted(root.glob("xla-*-v*")) if (d / "manifest.json").is_file()
    ]
    return suites + [GeneratorDataset()]


def split_benchmark_uris(split: str, datasets: list[str] | None = None) -> list[str]:
    """The URIs of ``split`` over the named suites (default: every bundled suite).

    ``datasets`` names suites as ``"xla-gpt2-v0"`` or ``"benchmark://xla-gpt2-v0"``;
    a named suite without benchmarks in ``split`` is a ``LookupError`` naming the
    splits it has (e.g. the held-out families have only ``"heldout"``).
    """
    suites = {d.name.split("://")[-1]: d for d in get_xla_datasets() if isinstance(d, XlaDataset)}
    # By default the bundled suites: the realworld ones (datasets/realworld) only when named.
    names = (
        [n.split("://")[-1] for n in datasets]
        if datasets
        else sorted(n for n, d in suites.items() if d.collection == "bundled")
    )
    uris: list[str] = []
    for name in names:
        if GeneratorDataset().name.endswith(f"://{name.split('/')[0]}"):
            raise LookupError(
                f"{name!r} is the generator, which has no splits: name seeds instead, "
                "e.g. generator://xla-random-v0/0-999 (xla_service.env.generator.generator_uris)"
            )
        if name not in suites:
            raise LookupError(
                f"Unknown dataset {name!r}: expected one of {sorted(suites)}."
                f"{close_matches(name, suites)}"
            )
        found = suites[name].split_uris(split)
        if not found and datasets:
            has = [s for s in SPLITS if suites[name].split_uris(s)]
            raise LookupError(
                f"{name} has no {split!r} split: expected one of its splits {has}"
                + (" (a family held out from all training: use its 'heldout' split)" if has == ["heldout"] else "")
            )
        uris += found
    return uris
