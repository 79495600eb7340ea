"""The harness end to end: results CSV, CompilerGym's validate tool, the summary."""
from __future__ import annotations

import subprocess
import sys

import pytest

from leaderboard.eval import main as eval_main

FLAGS = ["--split=train", "--test_dataset=xla-moe-v0", "--max_benchmarks=3"]


def test_eval_writes_a_csv_that_compiler_gym_validates(tmp_path, capsys):
    results = tmp_path / "results.csv"
    code = eval_main(
        [
            "--policy=leaderboard.agents.default_pipeline.policy:policy",
            f"--leaderboard_results={results}",
            f"--leaderboard_logfile={tmp_path / 'log'}",
            "--shared-store",  # the tests share one store (conftest)
            *FLAGS,
        ]
    )
    assert code == 0
    lines = results.read_text().splitlines()
    assert lines[0] == "benchmark,reward,walltime,commandline"
    assert len(lines) == 4 and all(ln.startswith("benchmark://xla-moe-v0/") for ln in lines[1:])
    assert all(float(ln.split(",")[1]) > 0 for ln in lines[1:])  # the replayed default removes ops
    assert "overall" in capsys.readouterr().out

    # CompilerGym's documented flow: no flag but the env, default --nproc, more rows than cores.
    validated = subprocess.run(
        [sys.executable, "-m", "compiler_gym.bin.validate", "--env=xla-v0", str(results)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,  # it writes validation.log.json there
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr

    # Validation by execution and runtime against the default pipeline's module.
    from leaderboard.report.summary import main as summary_main

    capsys.readouterr()
    assert summary_main([str(results), "--validate", "--runtime"]) == 0
    overall = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("overall")][-1]  # the metrics table, after the ratios
    assert " 3/3 " in overall and " nan " not in overall

    # --resume finds nothing left to do.
    eval_main(
        [
            "--policy=leaderboard.agents.default_pipeline.policy:policy",
            f"--leaderboard_results={results}",
            f"--leaderboard_logfile={tmp_path / 'log'}",
            "--resume",
            "--shared-store",  # the tests share one store (conftest)
            *FLAGS,
        ]
    )
    assert len(results.read_text().splitlines()) == 4

    # A result whose reward its replay does not reproduce is named, with why.
    benchmark, reward_text, walltime, commandline = lines[1].split(",")
    reward = float(reward_text)
    wrong = tmp_path / "wrong.csv"
    wrong.write_text(f"{lines[0]}\n{benchmark},{reward + 1},{walltime},{commandline}\n")
    capsys.readouterr()
    assert summary_main([str(wrong), "--validate"]) == 0
    out, err = capsys.readouterr()
    assert f"not validated: {benchmark}: " in err
    assert " 0/1 " in [ln for ln in out.splitlines() if ln.startswith("overall")][-1]

    # Two envs side by side check the same results: the wrong one among them still named.
    assert summary_main([str(results), str(wrong), "--validate", "--jobs=2"]) == 0
    out, err = capsys.readouterr()
    assert f"not validated: {benchmark}: " in err and "checked 4/4" in err
    assert " 3/4 " in [ln for ln in out.splitlines() if ln.startswith("overall")][-1]
    with pytest.raises(SystemExit):  # timings need a quiet machine: one env
        summary_main([str(results), "--runtime", "--jobs=2"])
    assert "expected --jobs 1, got 2" in capsys.readouterr().err


def test_sample_takes_n_per_suite_deterministically():
    from leaderboard.harness import sample_per_suite

    uris = [f"benchmark://xla-{s}-v0/b{i}" for s in ("gpt2", "bert") for i in range(5)] + ["benchmark://xla-vit-v0/only"]
    sample = sample_per_suite(uris, 2, seed=0)
    assert sample == sorted(sample) and set(sample) <= set(uris)
    assert [u.split("/")[2] for u in sample].count("xla-gpt2-v0") == 2
    assert [u.split("/")[2] for u in sample].count("xla-bert-v0") == 2
    assert "benchmark://xla-vit-v0/only" in sample  # fewer than n: all of them
    assert sample_per_suite(list(reversed(uris)), 2, seed=0) == sample
    assert any(sample_per_suite(uris, 2, seed=s) != sample for s in range(1, 10))


@pytest.mark.parametrize("suites, sample, max_benchmarks", [(["xla-vit-v0"], 0, 0), (None, 1, 0), (["xla-gpt2-v0"], 2, 1)])
def test_select_benchmarks_is_the_split_of_the_suites_sampled_then_cut(suites, sample, max_benchmarks):
    from leaderboard.harness import sample_per_suite, select_benchmarks
    from xla_service.env.datasets import split_benchmark_uris

    chosen = select_benchmarks("test", suites, sample, 0, max_benchmarks)
    split = sorted(split_benchmark_uris("test", suites))
    expected = sample_per_suite(split, sample, 0) if sample else split
    assert chosen == (expected[:max_benchmarks] if max_benchmarks else expected) and chosen
    if suites:
        assert all(u.split("/")[2] == suites[0] for u in chosen)


def test_shards_split_the_benchmarks_between_them():
    import argparse

    from leaderboard.harness import _benchmarks, add_flags

    parser = add_flags(argparse.ArgumentParser())
    whole = _benchmarks(parser.parse_args(["--sample=4"]))
    shards = [_benchmarks(parser.parse_args(["--sample=4", f"--shard={i}/3"])) for i in range(3)]
    assert sorted(sum(shards, [])) == sorted(whole) and len(whole) == 24
    assert all(shards) and not set(shards[0]) & set(shards[1])


@pytest.mark.parametrize("shard", ["2/2", "1", "a/b", "-1/2"])
def test_a_bad_shard_is_a_usage_error(shard, capsys):
    import argparse

    from leaderboard.harness import add_flags

    with pytest.raises(SystemExit):
        add_flags(argparse.ArgumentParser()).parse_args([f"--shard={shard}"])
    assert "expected" in capsys.readouterr().err
