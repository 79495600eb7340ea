"""Fast checks of the benchmark suites in datasets/ (models, splits, shipped files)."""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
from pathlib import Path

import pytest
from xla_gym_datasets import splits
from xla_gym_datasets.build import benchmark_uri, gzip_bytes, suite_name
from xla_gym_datasets.models import FAMILIES, get_family

REPO = Path(__file__).resolve().parents[2]

DATA = REPO / "datasets"


def _smallest(family):
    """The cheapest configuration of a family: an inference graph if any, fewest layers."""

    def size(c):
        numbers = [v for v in dataclasses.asdict(c).values() if isinstance(v, int) and not isinstance(v, bool)]
        return (c.mode != "infer", sum(numbers))

    return min(get_family(family).configs(), key=size)


def _manifest(family):
    path = DATA / suite_name(family) / "manifest.json"
    if not path.exists():
        pytest.skip(f"{path} not generated")
    with open(path) as f:
        return json.load(f)


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_smallest_config_builds_and_lowers(family):
    from xla_gym_datasets import engine

    config = _smallest(family)
    fn, args = get_family(family).build(config)
    text = fn.lower(*args).compiler_ir("hlo").as_hlo_text()
    assert text.startswith("HloModule")
    assert engine.op_count(text) > 10
    # Parameters are arguments, not baked-in literals: one entry parameter per leaf.
    import jax

    assert len(engine.parameter_shapes(text)) == len(jax.tree_util.tree_leaves(args))


@pytest.mark.parametrize("family", FAMILIES)
def test_config_names_are_unique_and_encode_the_config(family):
    configs = get_family(family).configs()
    names = [c.name for c in configs]
    assert len(set(names)) == len(names)
    assert len(set(configs)) == len(configs)
    for c in configs:
        assert c.name == c.name.strip() and "/" not in c.name and " " not in c.name


# ---------------------------------------------------------------------------
# Splits
# ---------------------------------------------------------------------------


TRAINING_FAMILIES = [f for f in FAMILIES if f not in splits.HELD_OUT_FAMILIES]


@pytest.mark.parametrize("family", TRAINING_FAMILIES)
def test_split_holds_out_whole_axis_values(family):
    configs = get_family(family).configs()
    axis = splits.split_axis(family)
    values: dict[str, set] = {s: set() for s in splits.SPLITS}
    for c in configs:
        values[splits.split(family, c)].add(getattr(c, axis))
    for s in ("train", "validation", "test"):
        assert values[s], f"{family}: empty {s} split"
    assert not values["heldout"], f"{family} is a training family: nothing is held out whole"
    assert not values["train"] & values["test"]
    assert not values["train"] & values["validation"]
    assert not values["validation"] & values["test"]
    # No test configuration appears in training, even up to the held-out axis.
    train = {c for c in configs if splits.split(family, c) == "train"}
    test = {c for c in configs if splits.split(family, c) == "test"}
    assert not train & test


@pytest.mark.parametrize("family", splits.HELD_OUT_FAMILIES)
def test_heldout_family_is_held_out_whole(family):
    assert family in FAMILIES and family not in splits.RULES
    assert {splits.split(family, c) for c in get_family(family).configs()} == {"heldout"}


def test_split_is_deterministic():
    for family in FAMILIES:
        configs = get_family(family).configs()
        assert [splits.split(family, c) for c in configs] == [
            splits.split(family, c) for c in get_family(family).configs()
        ]


# ---------------------------------------------------------------------------
# Shipped data
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_manifest_matches_files_and_grid(family):
    manifest = _manifest(family)
    suite = DATA / suite_name(family)
    by_name = {c.name: c for c in get_family(family).configs()}
    names = [e["name"] for e in manifest["benchmarks"]]
    assert names == sorted(names) and len(set(names)) == len(names)
    failed = {f["name"] for f in manifest["failures"]}
    assert not failed & set(names)
    counts = {s: 0 for s in splits.SPLITS}
    for e in manifest["benchmarks"]:
        assert e["name"] in by_name
        assert e["uri"] == benchmark_uri(family, e["name"])
        assert e["family"] == family
        assert e["split"] == splits.split(family, by_name[e["name"]])
        assert e["config"]["model"] == e["model"]
        for key in ("jax_version", "jaxlib_version", "initial_op_count", "default_op_count", "cost_analysis"):
            assert key in e, key
        data = (suite / e["file"]).read_bytes()
        text = gzip.decompress(data).decode()
        assert hashlib.sha256(text.encode()).hexdigest() == e["sha256"]
        assert len(data) == e["gz_bytes"]
        counts[e["split"]] += 1
    assert manifest["counts"] == counts
    on_disk = {p.name for p in suite.glob("*.hlo.gz")}
    assert on_disk == {e["file"] for e in manifest["benchmarks"]}


def _default_benchmark():
    path = DATA / "DEFAULT_BENCHMARK"
    if not path.exists():
        pytest.skip("datasets/DEFAULT_BENCHMARK not written")
    uri = path.read_text().strip()
    assert uri.startswith("benchmark://xla-") and "/" in uri[len("benchmark://") :]
    suite, name = uri[len("benchmark://") :].split("/", 1)
    return uri, DATA / suite, name


def test_default_benchmark_is_normalized_and_consistent():
    from xla_gym_datasets import engine

    uri, suite, name = _default_benchmark()
    data = (suite / f"{name}.hlo.gz").read_bytes()
    text = gzip.decompress(data).decode()
    assert engine.normalize(text) == text  # stored text is a normalization fixpoint
    assert gzip_bytes(text) == data  # compression is reproducible
    with open(suite / "manifest.json") as f:
        entry = {e["name"]: e for e in json.load(f)["benchmarks"]}[name]
    assert entry["uri"] == uri
    assert engine.op_count(text) == entry["initial_op_count"]
    assert 700 <= entry["initial_op_count"] <= 1200


def test_gzip_is_reproducible():
    text = "HloModule m\n" * 100
    assert gzip_bytes(text) == gzip_bytes(text)
    assert gzip.decompress(gzip_bytes(text)).decode() == text


def test_fast_compile_gives_xla_default_pipeline():
    """The generator's one cheap compile finds the same default-pipeline module
    as xla_service.passes.xla.default_pipeline (full dumps, default codegen)."""
    from xla_gym_datasets import engine
    from xla_gym_datasets.models import gpt2

    fn, args = gpt2.build(gpt2.Config(1, 64, 2, 32, 2, "adam", "f32", "train"))
    text = engine.normalize(fn.lower(*args).compiler_ir("hlo").as_hlo_text())
    _, fast = engine.compile_with_default(text)
    assert fast == engine.default_pipeline(text)
    assert engine.op_count(fast) < engine.op_count(text)
