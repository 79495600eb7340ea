"""The benchmark generator in-process: recipes, URIs, the grammar, determinism, validity, the disk cache."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from xla_service.catalog.generator import DATASET, DEFAULT_OPS, MAX_SEED, Recipe, parse_recipe
from xla_service.env.generator import (
    GeneratorDataset,
    generator_metadata,
    generator_uris,
    recipe_of,
)

SMALL = (50, 250)  # op count range of the modules these tests generate


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_GYM_GENERATED", str(tmp_path))
    return tmp_path


# ------------------------------------------------------------------ recipes and URIs


def test_recipes_round_trip_and_name_their_form():
    assert Recipe(42).text == "xla-gym-generator v2 seed=42"
    assert parse_recipe(b"xla-gym-generator v2 seed=42") == Recipe(42)
    assert parse_recipe(Recipe(7, (60, 400)).encode()) == Recipe(7, (60, 400))
    assert parse_recipe(b"HloModule m\n") is None and parse_recipe(b"\x1f\x8b...") is None
    for bad, match in [(b"xla-gym-generator v2 seed=x", "seed"), (b"xla-gym-generator v9 seed=1", "version 9"),
                       (b"xla-gym-generator v2 seed=4294967296", "out of range"),
                       (b"xla-gym-generator v2 seed=1 ops=9-5", "MIN-MAX"), (b"xla-gym-generator v2", "expected")]:
        with pytest.raises(ValueError, match=match):
            parse_recipe(bad)


@pytest.mark.parametrize("path, error", [
    ("abc", LookupError), ("-1", LookupError), ("1.5", LookupError), ("", LookupError),
    (str(MAX_SEED + 1), ValueError), ("99999999999999999999", ValueError),
])
def test_bad_seeds_name_the_valid_form(path, error):
    with pytest.raises(error, match=r"generator://xla-random-v0/<seed>.*\[0, 4294967295\]"):
        GeneratorDataset().benchmark(f"{DATASET}/{path}")


def test_dataset_is_an_unbounded_generator():
    dataset = GeneratorDataset()
    assert dataset.name == DATASET and dataset.size == 0 and len(dataset) == 0
    uris = dataset.benchmark_uris()
    assert list(itertools.islice(uris, 3)) == [f"{DATASET}/0", f"{DATASET}/1", f"{DATASET}/2"]
    benchmark = dataset.benchmark(f"{DATASET}/{MAX_SEED}")
    assert benchmark.proto.program.contents == f"xla-gym-generator v2 seed={MAX_SEED}".encode()
    a, b = (dataset.random_benchmark(np.random.default_rng(5)) for _ in range(2))
    assert a.uri == b.uri and str(a.uri).startswith(DATASET + "/")
    assert recipe_of(f"{DATASET}/3?ops=60-400") == Recipe(3, (60, 400))
    with pytest.raises(ValueError, match="MIN-MAX"):
        recipe_of(f"{DATASET}/3?ops=400-60")
    with pytest.raises(LookupError, match="Unknown generator parameter"):
        recipe_of(f"{DATASET}/3?size=4")


def test_generator_uris_name_seeds_lazily():
    every = generator_uris(DATASET)
    assert every is not None and len(every) == MAX_SEED + 1 and every[-1] == f"{DATASET}/{MAX_SEED}"
    some = generator_uris(f"{DATASET}/10-12?ops=60-400")
    assert list(some or []) == [f"{DATASET}/{s}?ops=60-400" for s in (10, 11, 12)]
    assert generator_uris("benchmark://xla-gpt2-v0/x") is None
    with pytest.raises(LookupError, match="first>-<last>"):
        generator_uris(f"{DATASET}/5-x")
    with pytest.raises(ValueError, match="FIRST <= LAST"):
        generator_uris(f"{DATASET}/9-5")


# ------------------------------------------------------------------ the grammar


def test_every_block_traces_alone_in_inference_and_training():
    """Each block of the table on a small stream (so a new block is tested by being registered)."""
    import jax
    import jax.numpy as jnp
    from xla_gym_datasets.generator import blocks
    from xla_gym_datasets.generator.grammar import Ctx, NotApplicable, Program
    from xla_gym_datasets.generator.program import _forward_backward

    table = blocks()
    assert sum(b.kind == "body" for b in table.values()) >= 25
    assert {b.kind for b in table.values()} == {"stem", "body", "head"}
    for (name, blk), mode in itertools.product(table.items(), ("infer", "train")):
        if blk.kind != "body" or (mode == "train" and not blk.train):
            continue
        assert blk.doc, name
        for seed in range(2):
            program = Program(mode, np.random.default_rng(seed))
            ctx = Ctx(program, f"b00_{name}", {}, jnp.bfloat16 if seed else jnp.float32)
            try:
                jax.make_jaxpr(lambda x, blk=blk, ctx=ctx: _forward_backward(blk, ctx, x))(
                    jax.ShapeDtypeStruct((2, 8, 16), jnp.float32))
            except NotApplicable:
                pass


# ------------------------------------------------------------------ generation


def _digest_in_subprocess(seeds: list[int], first: str = "") -> list[str]:
    code = (
        f"{first}\n"
        "import hashlib, sys\n"
        "from xla_gym_datasets.generator import generate\n"
        "from xla_service.catalog.generator import Recipe\n"
        f"for s in {seeds!r}:\n"
        f"    print(hashlib.sha256(generate(Recipe(s, {SMALL!r}), use_cache=False).text.encode()).hexdigest())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_same_seed_same_text_in_two_processes_whatever_came_before():
    """Byte-identical text, whatever was generated, or which block module imported, first."""
    later = _digest_in_subprocess([5, 3, 11], first="import xla_gym_datasets.generator.blocks_layers")
    assert _digest_in_subprocess([3, 11]) == later[1:]


def test_a_small_sweep_loads_executes_and_validates(cache):
    from xla_gym_datasets.generator import generate

    from xla_service.passes.engine import Engine

    engine = Engine(workers=2)
    try:
        for seed in range(4):
            made = generate(Recipe(seed, SMALL))
            state = engine.load(made.text)
            assert state.text == made.text and SMALL[0] <= state.op_count <= SMALL[1]
            assert state.op_count == made.metadata["op_count"]
            verdict = engine.validate(state, engine.default_pipeline(state), 0)
            assert verdict["status"] == "ok", (seed, verdict)
            assert made.metadata["largest_literal"] <= 64  # weights are arguments
    finally:
        engine.close()


def test_disk_cache_hits_keys_on_versions_and_turns_off(cache, monkeypatch):
    from xla_gym_datasets.generator import cache as disk
    from xla_gym_datasets.generator import core, generate

    recipe = Recipe(2, SMALL)
    made = generate(recipe)
    key = disk.cache_key()
    assert key.startswith("v2-jaxlib0.10.2-engine") and (cache / key / "2-ops50-250.hlo.gz").is_file()
    metadata = json.loads((cache / key / "2-ops50-250.json").read_text())
    assert metadata == generator_metadata(f"{DATASET}/2?ops=50-250") == made.metadata
    assert {"program", "op_count", "dtypes", "opcodes", "parameters", "inputs", "rejected"} <= set(metadata)

    def refuse(*args):
        raise AssertionError("generated again instead of read from the cache")

    monkeypatch.setattr(core, "attempt", refuse)
    assert generate(recipe).text == made.text  # a hit
    assert disk.read(recipe, jaxlib="0.0.1") is None  # another jaxlib never reads it
    (cache / key / "2-ops50-250.hlo.gz").write_bytes(b"corrupt")
    assert disk.read(recipe) is None  # a module not matching its digest is a miss
    monkeypatch.setenv("XLA_GYM_GENERATED", "off")
    assert disk.cache_root() is None and disk.write(recipe, made.text, made.metadata) is None
    with pytest.raises(LookupError, match="XLA_GYM_GENERATED"):
        generator_metadata(2)


def test_a_rejected_draw_is_redrawn_and_recorded(cache, monkeypatch):
    from xla_gym_datasets.generator import core, program

    build = program.build

    def failing_first(plan, declared):
        if plan.attempt == 0:
            raise TypeError("a draw JAX rejects")
        return build(plan, declared)

    monkeypatch.setattr(program, "build", failing_first)
    made = core.generate(Recipe(4, SMALL), use_cache=False)
    assert made.metadata["attempt"] == 1
    assert made.metadata["rejected"] == [[0, "JAX rejected the draw: TypeError: a draw JAX rejects"]]
    reply = core.worker_generate(Recipe(5, SMALL).text, 0, [])
    assert reply[0] == "rejected" and "TypeError" in reply[1]


def test_the_engine_redraws_after_an_xla_abort_and_keeps_a_verdict():
    """``Engine.generate``'s loop against a stand-in pool (no worker processes)."""
    from xla_service.errors import BenchmarkError
    from xla_service.passes.cache import Cache
    from xla_service.passes.engine import Engine
    from xla_service.passes.workers import WorkerDied

    calls: list[tuple] = []

    class Pool:
        def call(self, method, recipe, attempt, rejected, timeout=None):
            calls.append((recipe, attempt, list(rejected)))
            if recipe.endswith("seed=1"):
                raise WorkerDied("aborted", exit_code=-6)  # SIGABRT: XLA's own abort
            if attempt == 0:
                raise WorkerDied("aborted", exit_code=-6)
            return "ok", "HloModule m", "{}"

    engine = object.__new__(Engine)
    engine._pool, engine.cache, engine.step_timeout = Pool(), Cache(), 10.0
    assert engine.generate("xla-gym-generator v2 seed=0") == ("HloModule m", "{}")
    assert calls[1] == ("xla-gym-generator v2 seed=0", 1, [[0, "XLA aborted: aborted"]])
    for _ in range(2):  # the second time from the cache: a deterministic verdict
        with pytest.raises(BenchmarkError, match="No valid program"):
            engine.generate("xla-gym-generator v2 seed=1")
    assert sum(c[0].endswith("seed=1") for c in calls) == 8
    assert DEFAULT_OPS == (50, 5000)


def test_the_readme_quotes_the_blocks_table_of_the_code():
    from pathlib import Path

    from xla_gym_datasets.generator.__main__ import blocks_table

    readme = (Path(__file__).resolve().parents[2] / "datasets" / "README.md").read_text()
    assert blocks_table() in readme, "run: python -m xla_gym_datasets.generator --blocks"
