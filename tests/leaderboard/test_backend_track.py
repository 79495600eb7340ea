"""A backend track end to end: the harness with --reward, the searches minimizing the
track's objective, CompilerGym's validate tool, the reference and the summary."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from compiler_gym.compiler_env_state import CompilerEnvState

from leaderboard.agents.objective import OBJECTIVE_NAMES, objective_of
from leaderboard.report.backend_summary import Track, parse_track, scores
from xla_service.catalog.backend import BACKEND_KEYS

BENCHMARK = "benchmark://xla-rnn-v0/lstm-lm-l4-h32-s32-b4-infer"
REWARD = "EstimatedTimeAgentNorm"


@pytest.mark.parametrize(
    "reward, space, key",
    [("OpCount", "OpCount", None), ("OpCountNorm", "OpCount", None), ("EstimatedTime", "BackendCost", "estimated_seconds"),
     ("TempBytesAgentNorm", "BackendCostAgent", "temp_bytes"), ("BytesAccessedAgent", "BackendCostAgent", "bytes_accessed")],
)
def test_every_reward_names_its_objective(reward, space, key):
    objective = objective_of(reward)
    assert objective.space == space
    assert objective.index == (None if key is None else BACKEND_KEYS.index(key))


def test_a_reward_without_a_deterministic_objective_is_refused():
    assert "Runtime" not in OBJECTIVE_NAMES
    with pytest.raises(ValueError, match="Expected a reward space with a deterministic objective.*got 'Runtime'"):
        objective_of("Runtime")
    with pytest.raises(ValueError, match="Expected a backend reward space"):
        parse_track("OpCount")


def test_scores_are_default_over_final():
    reference = {"b://x/1": {"agent": {"initial": [4.0] + [0] * 6, "default": [2.0] + [0] * 6}}}
    track = parse_track(REWARD)
    assert track == Track("EstimatedTime", "agent", True)
    # Norm return 1.5: final = 4 - 1.5 * 2 = 1, score 2 / 1.
    assert scores([CompilerEnvState(benchmark="b://x/1", reward=1.5, walltime=0, commandline="")], track, reference) == {
        "b://x/1": 2.0
    }
    raw = parse_track("EstimatedTimeAgent")
    assert scores([CompilerEnvState(benchmark="b://x/1", reward=1.0, walltime=0, commandline="")], raw, reference) == {
        "b://x/1": pytest.approx(2 / 3)
    }


@pytest.mark.slow
def test_greedy_on_a_backend_track_validates_and_is_summarized(tmp_path, capsys):
    from leaderboard.harness import eval_xla_opcount_policy, load_policy
    from leaderboard.report.backend_reference import main as reference_main
    from leaderboard.report.backend_summary import main as summary_main

    results, reference = tmp_path / "results.csv", tmp_path / "reference.json"
    assert reference_main(["--benchmark", BENCHMARK, "--out", str(reference)]) == 0
    values = json.loads(reference.read_text())["benchmarks"][BENCHMARK]
    assert set(values) == {"full", "agent"} and len(values["agent"]["default"]) == len(BACKEND_KEYS)

    greedy = load_policy("leaderboard.agents.greedy.policy:Greedy(lazy=True, max_steps=2)")
    (state,) = eval_xla_opcount_policy(greedy, ["--reward", REWARD, "--benchmark", BENCHMARK,
                                                f"--leaderboard_results={results}", "--shared-store"])
    # Greedy only takes a pass that lowers the track's objective: the return is positive.
    assert state.reward > 0 and state.commandline

    validated = subprocess.run(
        [sys.executable, "-m", "compiler_gym.bin.validate", "--env=xla-v0", f"--reward={REWARD}", str(results)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr

    capsys.readouterr()
    assert summary_main([str(results), "--reward", REWARD, "--reference", str(reference), "--validate"]) == 0
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("| all |")]
    initial, default = values["agent"]["initial"][0], values["agent"]["default"][0]
    expected = default / (initial - state.reward * default)
    assert f"{expected:.3f}x" in row and "1/1" in row


def _reference(tmp_path, times: dict[str, tuple[float, float]]):
    """A reference JSON whose benchmarks have these (initial, default) estimated times, agent pipeline."""
    from xla_service.catalog.backend import BACKEND_SEMANTICS_VERSION

    def vector(time: float) -> list[float]:
        return [time] + [0.0] * (len(BACKEND_KEYS) - 1)

    path = tmp_path / "reference.json"
    benchmarks = {b: {"agent": {"initial": vector(i), "default": vector(d)}} for b, (i, d) in times.items()}
    path.write_text(json.dumps({"keys": list(BACKEND_KEYS), "backend_semantics": BACKEND_SEMANTICS_VERSION,
                                "jaxlib": "x", "benchmarks": benchmarks}))
    return path


def test_headroom_takes_the_best_validated_result_or_the_empty_order(tmp_path, capsys):
    from leaderboard.report.backend_headroom import main as headroom_main

    reference = _reference(tmp_path, {"benchmark://xla-gpt2-v0/a": (4.0, 2.0), "benchmark://xla-gpt2-v0/b": (1.0, 2.0)})
    task = tmp_path / "results" / REWARD
    task.mkdir(parents=True)
    rows = ["benchmark,reward,walltime,commandline"]
    # a: final 4 - 1.5 * 2 = 1 (score 2), validated; b: final 1 - 0 = 1, but it failed validation.
    (task / "s-test.csv").write_text("\n".join(rows + ["benchmark://xla-gpt2-v0/a,1.5,1,cse", "benchmark://xla-gpt2-v0/b,0.0,1,cse"]) + "\n")
    (task / "s-test.summary.json").write_text(json.dumps({"validated": {"benchmark://xla-gpt2-v0/a": True,
                                                                        "benchmark://xla-gpt2-v0/b": False}}))
    # a worse result of another search, without a verdict: counted, not better.
    (task / "t-test.csv").write_text("\n".join(rows + ["benchmark://xla-gpt2-v0/a,0.5,1,dce"]) + "\n")
    assert headroom_main(["--results", str(tmp_path / "results"), "--reference", str(reference)]) == 0
    out = capsys.readouterr().out
    # b keeps the empty order's 2 / 1: the geomean of 2 and 2.
    assert f"| {REWARD} | 2.000x (2) | 2.000x" in out
    assert "failing validation: 1; used without a verdict: 1" in out
    assert f"most headroom: {REWARD}, 2.000x" in out


def test_summary_by_seed_averages_each_seeds_geomean_and_names_the_empty_order(tmp_path, capsys):
    from leaderboard.report.backend_summary import main as summary_main

    reference = _reference(tmp_path, {"benchmark://xla-gpt2-v0/a": (4.0, 2.0), "benchmark://xla-unet-v0/b": (1.0, 2.0)})
    header = "benchmark,reward,walltime,commandline\n"
    # seed 0: a final 1 (score 2) on test, b final 1 (score 2) held out; seed 1: a final 2 (score 1), b final 4 (0.5).
    (tmp_path / "ppo-seed0-test.csv").write_text(header + "benchmark://xla-gpt2-v0/a,1.5,1,cse\n")
    (tmp_path / "ppo-seed0-heldout.csv").write_text(header + "benchmark://xla-unet-v0/b,0.0,1,cse\n")
    (tmp_path / "ppo-seed1-test.csv").write_text(header + "benchmark://xla-gpt2-v0/a,1.0,1,cse\n")
    (tmp_path / "ppo-seed1-heldout.csv").write_text(header + "benchmark://xla-unet-v0/b,-1.5,1,cse\n")
    files = sorted(str(p) for p in tmp_path.glob("ppo-*.csv"))
    assert summary_main([*files, "--reward", REWARD, "--reference", str(reference), "--by-seed"]) == 0
    out = capsys.readouterr().out
    assert "| xla-gpt2-v0 | 2 | 1.500x" in out and "0: 2.000, 1: 1.000" in out
    assert "| all | 2 | 1.354x" in out  # the mean of geomean(2, 2) = 2 and geomean(1, 0.5) = 0.707
    # the empty order: a 2 / 4, b 2 / 1, geomean 1.
    assert "the empty order (each module as loaded) on the same 2 benchmarks: 1.000x" in out
