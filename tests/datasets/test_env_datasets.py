"""The bundled suites through the stock client: listed, sampled end to end."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xla_gym_datasets.check_env import check

from xla_service.env.datasets import SPLITS, split_benchmark_uris

ROOT = Path(__file__).resolve().parents[2] / "datasets"
MANIFESTS = {p.parent.name: json.loads(p.read_text()) for p in sorted(ROOT.glob("xla-*/manifest.json"))}


def test_six_suites_with_at_least_300_graphs():
    assert len(MANIFESTS) >= 6
    assert sum(len(m["benchmarks"]) for m in MANIFESTS.values()) >= 300
    assert len(MANIFESTS["xla-gpt2-v0"]["benchmarks"]) >= 150


def test_heldout_split_is_the_heldout_families_and_nothing_else():
    from xla_gym_datasets.splits import HELD_OUT_FAMILIES

    heldout = split_benchmark_uris("heldout")
    assert heldout, "no held-out benchmarks"
    assert {u.split("/")[2] for u in heldout} == {f"xla-{f}-v0" for f in HELD_OUT_FAMILIES}
    for split in ("train", "validation", "test"):
        suites = {u.split("/")[2] for u in split_benchmark_uris(split)}
        assert not suites & {f"xla-{f}-v0" for f in HELD_OUT_FAMILIES}, split


def test_naming_a_heldout_suite_with_a_training_split_says_which_split_it_has():
    with pytest.raises(LookupError, match="xla-unet-v0 has no 'train' split.*'heldout'"):
        split_benchmark_uris("train", ["xla-unet-v0"])
    assert len(split_benchmark_uris("heldout", ["benchmark://xla-ssm-v0"])) == 16


def test_env_datasets_match_the_manifests():
    import compiler_gym

    with compiler_gym.make("xla-v0") as env:
        for name, manifest in MANIFESTS.items():
            dataset = env.datasets[name]
            assert dataset.size == len(manifest["benchmarks"])
            uris = set(dataset.benchmark_uris())
            assert uris == {b["uri"] for b in manifest["benchmarks"]}
            for split in SPLITS:
                assert len(dataset.split_uris(split)) == manifest["counts"][split]
            benchmark = dataset.random_benchmark(np.random.default_rng(0))
            assert benchmark.uri in uris


def test_service_tool_lists_every_suite():
    out = subprocess.run(
        [sys.executable, "-m", "compiler_gym.bin.service", "--env=xla-v0"],
        capture_output=True, text=True, timeout=300,
    ).stdout
    for name, manifest in MANIFESTS.items():
        row = [ln for ln in out.splitlines() if f"benchmark://{name} " in ln]
        assert row and f" {len(manifest['benchmarks'])} " in row[0], name


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_a_sample_of_each_suite_resets_steps_and_matches(name):
    """The smallest benchmark and one chosen at random (seeded) of each suite."""
    benchmarks = sorted(MANIFESTS[name]["benchmarks"], key=lambda b: b["initial_op_count"])
    rng = np.random.default_rng(len(name))
    sample = [benchmarks[0], benchmarks[int(rng.integers(len(benchmarks) // 2))]]
    problems = check([b["uri"] for b in sample], {b["uri"]: b for b in sample})
    assert problems == []


def test_a_missing_benchmark_names_itself():
    import compiler_gym

    with compiler_gym.make("xla-v0") as env:
        with pytest.raises(LookupError, match="gpt2-l2-d64-h4-s32-b2-adam-f32-trian"):
            env.reset(benchmark="benchmark://xla-gpt2-v0/gpt2-l2-d64-h4-s32-b2-adam-f32-trian")
