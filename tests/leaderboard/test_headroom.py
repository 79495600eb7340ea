"""leaderboard.report.headroom: the best validated result per benchmark, over the baseline."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from compiler_gym.compiler_env_state import CompilerEnvState, CompilerEnvStateWriter

from leaderboard.report.headroom import best_op_counts, headroom, main, validated_results
from leaderboard.report.summary import op_counts
from xla_service.catalog.schema import OP_COUNT_RULE


@pytest.fixture(scope="module")
def uris() -> list[str]:
    counts = op_counts()
    gpt2 = sorted(u for u in counts if "/xla-gpt2-v0/" in u)[:2]
    bert = sorted(u for u in counts if "/xla-bert-v0/" in u)[:1]
    return gpt2 + bert


def _write(path: Path, ops: dict[str, float]) -> Path:
    """A results CSV whose results reach ``ops`` (URI -> op count)."""
    counts = op_counts()
    with open(path, "w") as f, CompilerEnvStateWriter(f) as writer:
        for uri, n in ops.items():
            writer.write_state(CompilerEnvState(benchmark=uri, reward=counts[uri][0] - n, walltime=1.0, commandline="cse"))
    return path


def _summary(csv: Path, validated: int, n: int, rule: int = OP_COUNT_RULE) -> None:
    rows = [{"name": "xla-gpt2-v0", "n": n, "validated": validated}, {"name": "overall", "n": n, "validated": validated}]
    csv.with_suffix(".summary.json").write_text(json.dumps({"op_count_rule": rule, "rows": rows}))


def test_the_best_is_the_fewest_ops_of_any_file_and_ties_count_for_each(tmp_path: Path, uris: list[str]) -> None:
    a = _write(tmp_path / "a-test.csv", {uris[0]: 90, uris[1]: 200, uris[2]: 50})
    b = _write(tmp_path / "b-test.csv", {uris[0]: 100, uris[1]: 150, uris[2]: 50})
    c = _write(tmp_path / "c-test.csv", {uris[0]: 95, uris[1]: 160})
    best, holders = best_op_counts([a, b, c])
    assert best == {uris[0]: 90, uris[1]: 150, uris[2]: 50}
    assert holders == {a: (2, 1), b: (2, 1), c: (0, 0)}  # (at the best, alone there): both tie on uris[2]


def test_headroom_is_the_geomean_ratio_over_the_baseline_per_family(uris: list[str]) -> None:
    baseline = {uris[0]: 100.0, uris[1]: 200.0, uris[2]: 60.0}
    best = {uris[0]: 90.0, uris[1]: 150.0, uris[2]: 50.0}
    rows = headroom(best, baseline)
    assert list(rows) == ["xla-bert-v0", "xla-gpt2-v0", "overall"]
    assert rows["xla-gpt2-v0"].value == pytest.approx(math.sqrt(100 / 90 * 200 / 150))
    assert rows["xla-bert-v0"].value == pytest.approx(60 / 50)
    assert rows["overall"].n == 3
    assert rows["overall"].value == pytest.approx((100 / 90 * 200 / 150 * 60 / 50) ** (1 / 3))
    with pytest.raises(LookupError, match="Expected a result for every benchmark"):
        headroom({uris[0]: 90.0}, baseline)


def test_only_files_whose_summary_says_all_validated_under_the_rule_are_used(tmp_path: Path, uris: list[str]) -> None:
    (tmp_path / "x").mkdir()
    full = _write(tmp_path / "x" / "full-test.csv", {uris[0]: 90})
    partial = _write(tmp_path / "x" / "partial-test.csv", {uris[0]: 80})
    bare = _write(tmp_path / "bare-test.csv", {uris[0]: 70})
    old_rule = _write(tmp_path / "old-rule-test.csv", {uris[0]: 65})
    _write(tmp_path / "other-heldout.csv", {uris[0]: 60})
    _summary(full, 1, 1)
    _summary(partial, 0, 1)
    _summary(old_rule, 1, 1, rule=OP_COUNT_RULE - 1)
    used, left_out = validated_results(tmp_path, "test")
    assert used == [full]
    assert sorted(left_out) == sorted([partial, bare, old_rule])


def test_main_prints_the_table_and_refuses_a_missing_file(
    tmp_path: Path, uris: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = _write(tmp_path / "default-test.csv", {uris[0]: 100, uris[1]: 200})
    agent = _write(tmp_path / "agent-test.csv", {uris[0]: 50, uris[1]: 200})
    assert main([str(agent), "--baseline", str(baseline)]) == 0
    out = capsys.readouterr().out
    assert "best of 2 results files" in out
    assert "| xla-gpt2-v0 | 2 | 1.414x" in out
    assert f"2  alone on   1  {agent}" in out  # the baseline ties it on uris[1]
    assert f"alone at the best on 1 benchmarks in all: {agent} 1" in out
    with pytest.raises(SystemExit):
        main([str(agent), "--baseline", str(baseline), str(tmp_path / "missing-test.csv")])
    assert "No such results file" in capsys.readouterr().err


@pytest.mark.parametrize("split", ["test", "heldout"])
def test_the_readme_shows_the_committed_headroom(split: str, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/experiments/op-count-track.md's "How much room is left" is the output of today's committed results."""
    readme = (Path(__file__).parents[2] / "docs" / "experiments" / "op-count-track.md").read_text()
    assert main(["--split", split]) == 0
    out = capsys.readouterr().out
    assert out in readme, f"rerun `python -m leaderboard.report.headroom --split {split}` and paste its output into docs/experiments/op-count-track.md"
