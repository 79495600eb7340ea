"""The README's tables come from the summaries that leaderboard.summary --json writes."""
from __future__ import annotations

import json

from compiler_gym.compiler_env_state import CompilerEnvState, CompilerEnvStateWriter

from leaderboard.summary import main as summary_main
from leaderboard.table import main as table_main

GPT2 = "benchmark://xla-gpt2-v0/gpt2-l6-d128-h4-s32-b2-adam-f32-train"
RESNET = "benchmark://xla-resnet-v0/resnet18-w16-i32-b2-adam-train"


def test_table_from_summary_json(tmp_path, capsys):
    results = tmp_path / "results-x.csv"
    with open(results, "w") as f, CompilerEnvStateWriter(f) as writer:
        for benchmark, reward in [(GPT2, 1.21), (RESNET, 1.0)]:
            writer.write_state(CompilerEnvState(benchmark=benchmark, reward=reward, walltime=2.0, commandline="cse"))
    assert summary_main([str(results), "--json", str(tmp_path / "results-x.summary.json")]) == 0
    data = json.loads((tmp_path / "results-x.summary.json").read_text())
    assert [r["name"] for r in data["rows"]] == ["xla-gpt2-v0", "xla-resnet-v0", "overall"]
    capsys.readouterr()

    assert table_main(["--results", f"My agent={results}"]) == 0
    out = capsys.readouterr().out
    row = [line for line in out.splitlines() if line.startswith("| xla-gym | My agent")][0]
    assert "| +10.0% |" in row  # sqrt(1.21 * 1.0) - 1
    assert "| 2.0 s |" in row and "| 100% |" in row
    family = [line for line in out.splitlines() if line.startswith("| My agent")][0]
    assert family == "| My agent | +21.0% | +0.0% | +10.0% |"
