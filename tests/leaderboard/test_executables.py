"""leaderboard.agents.runtime.executables: how many executables the proposed pass orders make."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.agents.runtime.executables import Args, main, markdown, parse_args

SMALLEST = "benchmark://xla-rnn-v0/gru-lm-l4-h32-s32-b4-infer"


def test_flags_show_defaults_and_reject_bad_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args([]) == Args()
    assert parse_args(["--candidates", "3", "--mutate", "0"]).candidates == 3
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    assert "(default: 24)" in capsys.readouterr().out  # run.py's flags and defaults (proposals.Proposals)
    for bad in (["--split", "nope"], ["--candidates", "0"], ["--mutate", "1.5"], ["--pipeline", "none"], ["--distinct", "executable"]):
        with pytest.raises(SystemExit):
            parse_args(bad)


def test_markdown_sums_per_suite() -> None:
    rows = [
        {"benchmark": "benchmark://xla-rnn-v0/a", "candidates": 5, "executables": 2, "not_default": 1, "not_start": 1,
         "start_is_default": False},
        {"benchmark": "benchmark://xla-rnn-v0/b", "candidates": 3, "executables": 1, "not_default": 0, "not_start": 0,
         "start_is_default": True},
    ]
    table = markdown(rows)
    assert "| xla-rnn-v0/a | 5 | 2 | 1 | 1 | no |" in table
    assert "| xla-rnn-v0/b | 3 | 1 | 0 | 0 | yes |" in table
    assert "| xla-rnn-v0 | 2 | 8 | 3 | 1 | 1 |" in table


def test_a_tiny_survey_counts_the_executables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "survey.json"
    assert main(["--benchmarks", SMALLEST, "--candidates", "3", "--max-length", "3", "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["benchmark"] == SMALLEST
    assert 1 <= row["candidates"] <= 3
    assert 1 <= row["executables"] <= row["candidates"]
    assert row["not_default"] <= row["executables"] and row["not_start"] <= row["executables"]
    if row["start_is_default"]:
        assert row["not_default"] == row["not_start"]
    assert f"| {SMALLEST.split('://')[1]} | {row['candidates']} | {row['executables']} |" in capsys.readouterr().out


@pytest.mark.parametrize("pipeline", ["full", "agent"])
def test_the_readme_tables_are_the_committed_surveys(pipeline: str) -> None:
    folder = Path(__file__).parents[2] / "leaderboard" / "agents" / "runtime"
    report = json.loads((folder / "results" / f"executables-sample1-{pipeline}.json").read_text())
    assert report["args"]["pipeline"] == pipeline
    experiments = Path(__file__).parents[2] / "docs" / "experiments" / "runtime-agent.md"  # the runtime agent's runs
    assert markdown(report["rows"]) in experiments.read_text()
