"""The benchmark generator's contract: its dataset, its URIs and its recipes (pure Python).

``generator://xla-random-v0/<seed>`` names one seeded random JAX program
(``datasets/generator/``, documented in ``datasets/README.md``). The client
never imports jax: its benchmark for a seed carries a *recipe* as its program,
a line of ASCII such as ``xla-gym-generator v1 seed=42`` (with `` ops=MIN-MAX``
when the size range is not the default), which the service recognizes and
turns into HLO in a worker process. The client (``env/``), the session and the
worker all read the recipe through this module, so that they never disagree.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DATASET",
    "VERSION",
    "MAX_SEED",
    "DEFAULT_OPS",
    "OPS_LIMITS",
    "MAX_ATTEMPTS",
    "RECIPE_MAGIC",
    "Recipe",
    "parse_recipe",
    "parse_seed",
    "parse_ops",
    "uri_form",
]

#: The dataset, in CompilerGym's ``generator://`` convention.
DATASET = "generator://xla-random-v0"
#: The generator's version: a new version may draw other programs for the same seed.
#: 2: numerically sound by construction (datasets/README.md): discrete decisions come from
#: inputs (``Ctx.decision``), training steps have no kinked activations, the classify head
#: normalizes.
VERSION = 2
#: Seeds are unsigned 32-bit integers, as CompilerGym's generator datasets take.
MAX_SEED = 2**32 - 1
#: Default range of a generated module's op count (the count rule's, as loaded).
DEFAULT_OPS = (50, 5000)
#: The widest range a recipe may ask for.
OPS_LIMITS = (30, 100_000)
#: Draws tried per seed before the seed is reported as without a valid program.
MAX_ATTEMPTS = 8
RECIPE_MAGIC = "xla-gym-generator"

_RECIPE = re.compile(rf"^{RECIPE_MAGIC} v(\d+)((?: [a-z_]+=[^\s=]+)*)\s*$")
_OPS = re.compile(r"^(\d+)-(\d+)$")


def uri_form() -> str:
    """How a generator URI is written, for error messages."""
    return (
        f"{DATASET}/<seed>, the seed an integer in [0, {MAX_SEED}] written in decimal "
        f"(optionally with ?ops=MIN-MAX, {OPS_LIMITS[0]} <= MIN <= MAX <= {OPS_LIMITS[1]})"
    )


def parse_seed(text: str) -> int:
    """The seed written as ``text`` (decimal digits); ``ValueError`` naming the valid form."""
    text = text.strip()
    if not text.isdigit() or not text.isascii():
        raise ValueError(f"Invalid generator seed {text!r}: expected {uri_form()}")
    seed = int(text)
    if seed > MAX_SEED:
        raise ValueError(f"Generator seed {seed} out of range: expected {uri_form()}")
    return seed


def parse_ops(text: str) -> tuple[int, int]:
    """An op count range ``MIN-MAX``; ``ValueError`` naming the valid form."""
    m = _OPS.match(text.strip())
    low, high = (int(m[1]), int(m[2])) if m else (0, -1)
    if not (OPS_LIMITS[0] <= low <= high <= OPS_LIMITS[1]):
        raise ValueError(
            f"Invalid generator size range {text!r}: expected MIN-MAX with "
            f"{OPS_LIMITS[0]} <= MIN <= MAX <= {OPS_LIMITS[1]}, e.g. "
            f"{DEFAULT_OPS[0]}-{DEFAULT_OPS[1]}"
        )
    return low, high


@dataclass(frozen=True)
class Recipe:
    """What the service needs to generate one module."""

    seed: int
    ops: tuple[int, int] = DEFAULT_OPS
    version: int = VERSION

    def __post_init__(self) -> None:
        if not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"Generator seed {self.seed} out of range: expected {uri_form()}")
        parse_ops(f"{self.ops[0]}-{self.ops[1]}")

    @property
    def text(self) -> str:
        """The canonical recipe line (no ``ops=`` for the default range)."""
        ops = "" if self.ops == DEFAULT_OPS else f" ops={self.ops[0]}-{self.ops[1]}"
        return f"{RECIPE_MAGIC} v{self.version} seed={self.seed}{ops}"

    def encode(self) -> bytes:
        return self.text.encode("ascii")

    @property
    def uri(self) -> str:
        ops = "" if self.ops == DEFAULT_OPS else f"?ops={self.ops[0]}-{self.ops[1]}"
        return f"{DATASET}/{self.seed}{ops}"

    @property
    def name(self) -> str:
        """A file name stem: the seed, and the range if not the default."""
        return f"{self.seed}" + ("" if self.ops == DEFAULT_OPS else f"-ops{self.ops[0]}-{self.ops[1]}")


def parse_recipe(data: bytes | str) -> Recipe | None:
    """The recipe ``data`` holds; None if it is not a recipe at all (HLO text, gzip).

    ``ValueError`` for a recipe that is malformed, of another generator
    version, or asks for an invalid seed or range.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    if not data.startswith(RECIPE_MAGIC.encode()):
        return None
    form = f"'{RECIPE_MAGIC} v{VERSION} seed=<seed>[ ops=MIN-MAX]'"
    text = data.decode("ascii", "replace")
    m = _RECIPE.match(text)
    if m is None or len(data) > 200:
        raise ValueError(f"Malformed generator recipe {text[:80]!r}: expected {form}")
    if int(m[1]) != VERSION:
        raise ValueError(
            f"Generator recipe of version {m[1]}: this service generates version {VERSION} only "
            f"(recipes {form})"
        )
    fields = dict(part.split("=", 1) for part in m[2].split())
    unknown = sorted(set(fields) - {"seed", "ops"})
    if unknown or "seed" not in fields:
        raise ValueError(f"Malformed generator recipe {text[:80]!r}: expected {form}")
    ops = parse_ops(fields["ops"]) if "ops" in fields else DEFAULT_OPS
    return Recipe(parse_seed(fields["seed"]), ops)
