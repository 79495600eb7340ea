"""leaderboard.report.seeds: scores across training seeds, per column, with partial seeds left out."""
from __future__ import annotations

import json
import math

import pytest

from leaderboard.report.seeds import (
    HELDOUT,
    TEST,
    across_seeds,
    columns,
    main,
    run_of,
    score_table,
    seed_of,
    validated,
)
from leaderboard.report.summary import final_op_counts, read_results
from tests.leaderboard.results_files import GPT2, RESNET, write_results


def _heldout() -> str:
    from xla_service.env.datasets import split_benchmark_uris

    return split_benchmark_uris("heldout", ["xla-unet-v0"])[0]


def test_across_seeds_is_a_student_t_interval():
    m, low, high = across_seeds([1.0, 1.2])
    assert m == pytest.approx(1.1)
    assert high - m == pytest.approx(12.706 * math.sqrt(0.02) / math.sqrt(2), rel=1e-4)  # t(1 df) * sd / sqrt(n)
    assert low == pytest.approx(2 * m - high)
    one = across_seeds([1.05])
    assert one[0] == 1.05 and math.isnan(one[1]) and math.isnan(one[2])


def test_seed_of_reads_the_file_name():
    assert seed_of("results/generalize/six-ppo-seed12-test.csv") == 12
    with pytest.raises(ValueError, match="expected 'seed<k>'"):
        seed_of("results-test.csv")
    assert run_of("greedy/results-test.csv", 1) == 0  # a deterministic search: one run
    assert run_of("rl/ppo-seed3-test.csv", 2) == 3
    with pytest.raises(ValueError, match="expected 'seed<k>'"):
        run_of("greedy/results-test.csv", 2)  # two files of a row need their seeds


def test_the_overall_column_is_named_by_the_split_of_its_benchmarks():
    from xla_service.env.datasets import split_benchmark_uris

    validation = split_benchmark_uris("validation", ["xla-gpt2-v0"])[:2]
    assert list(columns(validation)) == ["xla-gpt2-v0", "validation split"]
    assert list(columns([GPT2, _heldout()]))[1] == TEST


def test_a_seed_missing_benchmarks_of_a_column_is_partial_not_counted(tmp_path):
    unet = _heldout()
    base = {GPT2: 100, RESNET: 200, unet: 300}
    baseline = final_op_counts(read_results([write_results(tmp_path / "base.csv", base)]))
    assert baseline == {b: float(n) for b, n in base.items()}
    seed0 = [write_results(tmp_path / "a-seed0-test.csv", {GPT2: 80, RESNET: 200}), write_results(tmp_path / "a-seed0-heldout.csv", {unet: 250})]
    seed1 = [write_results(tmp_path / "a-seed1-test.csv", {GPT2: 100})]  # ResNet and held-out not evaluated yet
    row = score_table({"A": seed0 + seed1}, baseline)["A"]
    assert list(row) == ["xla-gpt2-v0", "xla-resnet-v0", TEST, "xla-unet-v0", HELDOUT]
    assert row["xla-gpt2-v0"].seeds == 2 and row["xla-gpt2-v0"].mean == pytest.approx((1.25 + 1.0) / 2)
    assert row["xla-resnet-v0"].seeds == 1 and row["xla-resnet-v0"].partial == 0  # seed 1 has none of it: absent
    assert row[TEST].seeds == 1 and row[TEST].partial == 1 and row[TEST].mean == pytest.approx(math.sqrt(1.25))
    assert str(row["xla-resnet-v0"]) == "1.000x (1 seed)"
    search = score_table({"S": [write_results(tmp_path / "results-test.csv", {GPT2: 80})]}, baseline)["S"]
    assert str(search["xla-gpt2-v0"]) == "1.250x (1 run)"  # a search without seeds: one run, not one seed
    assert row[HELDOUT].mean == pytest.approx(1.2) and math.isnan(row[HELDOUT].low)
    assert str(row[TEST]) == f"{math.sqrt(1.25):.3f}x (1 seed, +1 partial)"


def test_main_prints_the_table_and_draws_the_figure(tmp_path, capsys):
    base = write_results(tmp_path / "base.csv", {GPT2: 100})
    for seed, ops in enumerate([90, 95, 100]):
        write_results(tmp_path / f"b-seed{seed}-test.csv", {GPT2: ops})
    figure = tmp_path / "seeds.png"
    assert main(["--baseline", base, f"B={tmp_path}/b-seed0*.csv,{tmp_path}/b-seed[12]*.csv", "--figure", str(figure)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| Trained on | gpt2 | test split | validated |"
    assert lines[2].startswith("| B | 1.055x [")  # (100/90 + 100/95 + 1) / 3
    assert lines[2].endswith("(3 seeds) | 0/3 |")  # no summaries: nothing validated
    assert figure.stat().st_size > 0
    with pytest.raises(SystemExit):
        main(["--baseline", base, "no-equals-sign"])
    assert "expected LABEL=GLOB" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([f"B={tmp_path}/b-seed0*.csv"])  # rows without a baseline
    assert "or --preset" in capsys.readouterr().err


@pytest.mark.parametrize(
    "preset, readme",
    [("generalize", "docs/experiments/training-sets-and-budget.md"), ("rl", "leaderboard/README.md"),
     ("budget", "docs/experiments/training-sets-and-budget.md"), ("gnn", "leaderboard/agents/gnn/README.md"),
     ("world_model", "leaderboard/agents/world_model/README.md")],
)
def test_the_readme_tables_are_the_presets(preset, readme, capsys):
    """The READMEs' (and docs/experiments pages') across-seed tables are the committed results', unedited."""
    from pathlib import Path

    from leaderboard.report.presets import PRESETS

    readme = (Path(__file__).parents[2] / readme).read_text()
    assert main(["--preset", preset]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert lines[0].startswith("| Trained on |") and len(lines) == 2 + len(PRESETS[preset].rows)  # header, rule, rows
    missing = [line for line in lines if line not in readme]
    assert not missing, f"README lacks `python -m leaderboard.report.seeds --preset {preset}` lines: {missing[:2]}"


def test_a_result_outside_the_baselines_is_named(tmp_path):
    baseline = final_op_counts(read_results([write_results(tmp_path / "base.csv", {GPT2: 100})]))
    with pytest.raises(LookupError, match="resnet.*no baseline file"):
        score_table({"A": [write_results(tmp_path / "a-seed0.csv", {RESNET: 10})]}, baseline)


def test_validated_counts_only_summaries_of_whole_files(tmp_path):
    paths = [write_results(tmp_path / f"c-seed{k}.csv", {GPT2: 90, RESNET: 190}) for k in range(3)]
    (tmp_path / "c-seed0.summary.json").write_text(json.dumps({"rows": [{"n": 2, "validated": 2}]}))
    (tmp_path / "c-seed1.summary.json").write_text(json.dumps({"rows": [{"n": 1, "validated": 1}]}))  # of a partial file
    assert validated(paths) == "2/6"
