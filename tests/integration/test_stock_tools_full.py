"""CompilerGym's stock tools on xla-v0, each in a fresh interpreter: manual_env,
validate on a results CSV, random_search, and the service tool's new spaces."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from integration.test_validation import smallest_gpt2

from xla_service.catalog.passes import PASS_NAMES


def _run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def benchmark(env) -> str:
    return smallest_gpt2(env)


def test_service_tool_lists_every_new_space():
    code, out = _run("-m", "compiler_gym.bin.service", "--env=xla-v0")
    assert code == 0, out[-3000:]
    for name in (
        "CostAnalysis", "CostAnalysisDict", "OpcodeFractions", "HloGraph",
        "HloProto", "Runtime", "RuntimeInitial",
    ):
        assert f"| {name} " in out, name
    for reward in ("OpCountNorm", "OpCountShaped", "Runtime"):
        assert reward in out


def test_manual_env_driven_through_stdin(benchmark):
    commands = [
        f"set_benchmark {benchmark[len('benchmark://'):]}",
        "observation OpCountInitial",
        "observation OpCountDefault",
        "action cse",
        "observation OpCount",
        "reward OpCountNorm",
        "commandline",
        "exit",
    ]
    code, out = _run("-m", "compiler_gym.bin.manual_env", "--env=xla-v0", stdin="\n".join(commands))
    assert code == 0, out[-3000:]
    out = _plain(out)
    initial, default, after = (int(v) for v in re.findall(r"> (\d+)$", out, re.M))
    norm = float(re.search(r"> (\d+\.\d+)$", out, re.M)[1])
    reward = float(re.search(r"Actions cse in .* with reward (-?\d+(?:\.\d+)?)", out)[1])
    assert after < initial and reward == initial - after
    assert norm == pytest.approx((initial - after) / (initial - default), abs=1e-6)
    assert re.search(r"> \$ cse$", out, re.M)


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def test_validate_tool_checks_a_results_csv_with_default_flags(env, benchmark, tmp_path):
    """More rows than cores, default --nproc: CompilerGym's shared thread pool is full of
    validation jobs, and the benchmarks' own validation must not need it (it hung)."""
    states = []
    for passes in (("cse", "algsimp"), ("algsimp",), ("dce", "cse", "reshape-mover")):
        env.reset(benchmark=benchmark)
        for name in passes:
            env.step(env.action_space[name])
        states.append(env.state)
    bad = states[0].copy()
    bad.reward = states[0].reward + 1
    csv = tmp_path / "results.csv"
    csv.write_text(
        "benchmark,reward,walltime,commandline\n"
        + "".join(f"{s.benchmark},{s.reward},{s.walltime},{s.commandline}\n" for s in (*states, bad))
    )
    code, out = _run(
        "-m", "compiler_gym.bin.validate", "--env=xla-v0",
        "--validation_logfile", str(tmp_path / "log.json"), str(csv),
    )
    name = benchmark[len("benchmark://"):]
    for good in states:
        assert re.search(rf"✅  {re.escape(name)}\s+{good.reward:.4f}", out), out[-3000:]
    assert f"❌  {name}  Expected reward {bad.reward}" in out
    assert code == 1  # one state failed


def test_random_search_tool_survives_passes_that_xla_fails_on(tmp_path: Path):
    """On the bundled GPT-2 XLA fails in several passes (simplification, scatter_simplifier):
    with the default xla.pass_errors they are steps without effect, and no agent thread dies."""
    out_dir = tmp_path / "search"
    out_dir.mkdir()
    code, out = _run(
        "-m", "compiler_gym.bin.random_search", "--env=xla-v0",
        "--benchmark=benchmark://xla-gpt2-v0/gpt2-l1-d64-h2-s32-b2-sgd-f32-train",
        "--runtime=20", "--nproc=2", "--patience=8", f"--output_dir={out_dir}",
    )
    assert code == 0, out[-3000:]
    assert "Traceback" not in out and "ValueError" not in out, out[-3000:]
    assert "Replaying actions from best solution found" in out
    best = (out_dir / "random_search_best_actions_commandline.txt").read_text().split()
    assert set(best) <= set(PASS_NAMES)
    steps = [int(m) for m in re.findall(r"Num steps: (\d+)", out)]
    assert steps and max(steps) > 40, out[-2000:]


def test_the_new_client_features_never_import_jax():
    code, out = _run(
        "-c",
        "import sys, compiler_gym\n"
        "from xla_service.env.graph import graph_to_arrays\n"
        "from xla_service.tools import from_jax\n"
        "with compiler_gym.make('xla-v0') as env:\n"
        "    env.reset()\n"
        "    env.step(env.action_space['cse'])\n"
        "    arrays = graph_to_arrays(env.observation['HloGraph'])\n"
        "    assert env.observation['CostAnalysisDict']['flops'] > 0\n"
        "    assert env.validate().okay()\n"
        "assert 'jax' not in sys.modules, 'the client side must not import jax'\n"
        "print(arrays.edge_index.shape[1])\n",
    )
    assert code == 0, out[-3000:]
