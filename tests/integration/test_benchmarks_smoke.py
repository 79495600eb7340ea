"""The benchmark scripts of benchmarks/ run (--quick) and print their key lines.

Not timed tests: figures are not checked, only that each script works end to
end (real service, real XLA) and reports what benchmarks/README.md quotes.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

SCRIPTS = {
    "bench_floor.py": ["FLOOR small:", "FLOOR gpt2:", "worker aborts:"],
    "bench_env.py": [
        "env.reset, seen benchmark:",
        "STEP gpt2:",
        "FLOOR gpt2:",
        "RATIO gpt2:",
        "CACHED gpt2:",
        "env.fork:",
        "OpCountDefault",
        "floor worker and service reached the same states: True",
        "TARGET step/floor on gpt2",
        "TARGET cached step",
    ],
    "bench_throughput.py": [
        "THROUGHPUT uncached 1 sessions:",
        "THROUGHPUT uncached 2 sessions:",
        "THROUGHPUT cached 2 sessions:",
    ],
    "bench_memory.py": [
        "PER SESSION gpt2: same benchmark",
        "LEAK uncached phase",
        "LEAK cached phase",
        "LEAK workers",
    ],
    "bench_warm_step.py": ["this tree: Gymnasium env, store", "this tree: stock client, memory", "gRPC GetVersion",
                           "SAME RESULTS every replay as the fill (stock: as the first): True",
                           "TARGET Gymnasium env warm replay", "cProfile of the client"],
    "check_identical.py": ["RESULT: identical:"],
    "measure_gnn.py": ["network: hidden 64", "whole graph): act", "update", "peak RSS",
                       "ACTING network every choice:", "ACTING per-graph logits:", "ACTING same commandlines: True",
                       "THREADS forward passes on 1 graphs"],
    "measure_mask.py": ["MASK known, new store:", "MASK episode, store knowing the first time:",
                        "REPEATS episode: 2 of 2 episodes"],
    "measure_runtime_noise.py": ["twin: the module after", "two services", "one worker, one executable",
                                 "NOISE RATIO median, one service, one worker / two services:",
                                 "NOISE RATIO minimum / median, two services:"],
    "measure_generator.py": [
        "valid (generated, loaded, XLA's default pipeline, executed and validated):",
        "structurally distinct:",
        "opcodes only the generator emits",
        "N0 / N_default, generated:",
        "final / N_default:",
        "fresh seed (plan, lower, XLA parse and normalize, cache write): median",
        "from the disk cache: median",
    ],
    "measure_validation.py": [
        "CATCH RATE:",
        "FALSE ALARMS: 0 of",
        "VALIDATION TIME mutants:",
        "TIME PER DRAW",
        "BEFORE (default options",
        "AFTER  (-O0 backend",
    ],
}


def _run(script: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(BENCHMARKS.parent),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help_explains_every_flag(script):
    result = _run(script, "--help", timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "--quick" in result.stdout
    lines = result.stdout.splitlines()
    options = [i for i, ln in enumerate(lines) if ln.startswith("  -")]
    assert len(options) >= 3
    for i in options:  # help text beside the option, or on the next, deeper line
        beside = "  " in lines[i].strip()
        below = i + 1 < len(lines) and lines[i + 1].startswith("        ") and lines[i + 1].strip()
        assert beside or below, f"{script}: no help for {lines[i].strip()!r}"


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_quick_run_prints_its_figures(script):
    result = _run(script, "--quick", timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    for key in SCRIPTS[script]:
        assert key in result.stdout, f"{key!r} missing from {script} --quick:\n{result.stdout[-3000:]}"
