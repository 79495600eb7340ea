"""The README's tables come from the summaries that leaderboard.report.summary --json writes."""
from __future__ import annotations

import json

from compiler_gym.compiler_env_state import CompilerEnvState, CompilerEnvStateWriter

from leaderboard.report.summary import main as summary_main
from leaderboard.report.table import main as table_main

GPT2 = "benchmark://xla-gpt2-v0/gpt2-l6-d128-h4-s32-b2-adam-f32-train"
RESNET = "benchmark://xla-resnet-v0/resnet18-w16-i32-b2-adam-train"


def _state(benchmark: str, ratio: float, walltime: float) -> CompilerEnvState:
    """A result that removed ``ratio`` times what XLA's default removes (OpCount reward)."""
    from leaderboard.report.summary import op_counts

    initial, default = op_counts()[benchmark]
    return CompilerEnvState(benchmark=benchmark, reward=ratio * (initial - default), walltime=walltime, commandline="cse")


def test_table_from_summary_json(tmp_path, capsys):
    results = tmp_path / "results-x.csv"
    with open(results, "w") as f, CompilerEnvStateWriter(f) as writer:
        for benchmark, reward in [(GPT2, 1.21), (RESNET, 1.0)]:
            writer.write_state(_state(benchmark, reward, 2.0))
    assert summary_main([str(results), "--json", str(tmp_path / "results-x.summary.json")]) == 0
    data = json.loads((tmp_path / "results-x.summary.json").read_text())
    assert [r["name"] for r in data["rows"]] == ["xla-gpt2-v0", "xla-resnet-v0", "paper mix (gpt2+bert+resnet)", "overall"]
    overall = data["rows"][-1]
    assert overall["small_sample"] and overall["aggregates"]["vs_default"]["n"] == 2
    capsys.readouterr()

    assert table_main(["--results", f"My agent={results}"]) == 0
    out = capsys.readouterr().out
    row = [line for line in out.splitlines() if line.startswith("| xla-gym | My agent")][0]
    assert "| +10.0% |" in row  # sqrt(1.21 * 1.0) - 1
    assert "| 2.0 s |" in row and "| 100% |" in row
    families = [line for line in out.splitlines() if line.startswith("| My agent")]
    # the op-count ratio table first (with intervals), then the paper's metric
    assert families[0] == "| My agent | - | - | - | - |"  # no --baseline in this summary
    assert "| My agent | +21.0% | +0.0% | +10.0% | +10.0% |" in families  # gpt2, resnet, paper mix, overall


def test_table_says_how_many_ratios_against_the_baseline_are_left_out(tmp_path, capsys):
    def write(path, rewards):
        with open(path, "w") as f, CompilerEnvStateWriter(f) as writer:
            for benchmark, reward in rewards:
                writer.write_state(_state(benchmark, reward, 1.0))

    write(tmp_path / "baseline.csv", [(GPT2, 1.0), (RESNET, 1.0)])
    write(tmp_path / "results-y.csv", [(GPT2, 1.1), (RESNET, 0.0)])  # removes nothing from ResNet
    summary = ["--baseline", str(tmp_path / "baseline.csv"), "--json", str(tmp_path / "results-y.summary.json")]
    assert summary_main([str(tmp_path / "results-y.csv"), *summary]) == 0
    capsys.readouterr()
    assert table_main(["--results", f"Y={tmp_path / 'results-y.csv'}"]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| xla-gym | Y")][0]
    assert "| +10.0% (1 <= 0 left out, 0 no ratio) |" in row
    assert ", n=2 (small sample) |" in row


def test_the_readme_tables_are_the_committed_summaries(capsys):
    """leaderboard/README.md, and the op-count track page it links for the rest, show leaderboard.report.table's output,
    unedited and current (the page's links rebased: it lives in docs/experiments)."""
    from pathlib import Path

    root = Path(__file__).parents[2]
    readme = (root / "leaderboard" / "README.md").read_text() + (
        root / "docs" / "experiments" / "op-count-track.md").read_text().replace("](../../leaderboard/", "](")
    for flags in ([], ["--full"], ["--heldout"]):
        assert table_main(flags) == 0
        missing = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|") and line not in readme]
        assert not missing, f"README lacks `python -m leaderboard.report.table {' '.join(flags)}` lines: {missing[:3]}"


def test_heldout_results_are_their_own_column(tmp_path, capsys):
    """The held-out families' overall row becomes one more column of an agent's per-family rows."""
    from leaderboard.report.table import HELDOUT, ratio_by_family, rows, with_heldout
    from xla_service.env.datasets import split_benchmark_uris

    unet = split_benchmark_uris("heldout", ["xla-unet-v0"])[0]
    for name, benchmarks in (("results-t.csv", [GPT2, RESNET]), ("results-h.csv", [unet])):
        with open(tmp_path / name, "w") as f, CompilerEnvStateWriter(f) as writer:
            for benchmark in benchmarks:
                writer.write_state(_state(benchmark, 1.0, 1.0))
        summary = tmp_path / name.replace(".csv", ".summary.json")
        assert summary_main([str(tmp_path / name), "--baseline", str(tmp_path / name), "--json", str(summary)]) == 0
    capsys.readouterr()
    table = with_heldout(rows({"A": str(tmp_path / "results-t.csv")}), rows({"A": str(tmp_path / "results-h.csv")}))
    assert table["A"]["rows"][HELDOUT]["n"] == 1
    header, _, row = ratio_by_family(table)
    assert header.endswith("| overall | held-out families |")
    assert row.startswith("| A | 1.000x") and row.count("1.000x") == 5  # gpt2, resnet, mix, overall, held-out
    assert with_heldout(rows({"B": str(tmp_path / "results-t.csv")}), {})["B"]["rows"].keys() == table["A"]["rows"].keys() - {HELDOUT}
    both = with_heldout(rows({"A": str(tmp_path / "results-t.csv"), "B": str(tmp_path / "results-t.csv")}),
                        rows({"A": str(tmp_path / "results-h.csv")}))
    assert ratio_by_family(both)[3].endswith("[1.000, 1.000] | - |")  # B did not run on the held-out families
