"""The harness end to end: results CSV, CompilerGym's validate tool, the summary."""
from __future__ import annotations

import subprocess
import sys

from leaderboard.eval import main as eval_main

FLAGS = ["--split=train", "--test_dataset=xla-moe-v0", "--max_benchmarks=1"]


def test_eval_writes_a_csv_that_compiler_gym_validates(tmp_path, capsys):
    results = tmp_path / "results.csv"
    code = eval_main(
        [
            "--policy=leaderboard.agents.default_pipeline.policy:policy",
            f"--leaderboard_results={results}",
            f"--leaderboard_logfile={tmp_path / 'log'}",
            *FLAGS,
        ]
    )
    assert code == 0
    lines = results.read_text().splitlines()
    assert lines[0] == "benchmark,reward,walltime,commandline"
    assert len(lines) == 2 and lines[1].startswith("benchmark://xla-moe-v0/")
    reward = float(lines[1].split(",")[1])
    assert reward > 0  # the replayed default pipeline removes ops
    assert "overall" in capsys.readouterr().out

    validated = subprocess.run(
        [sys.executable, "-m", "compiler_gym.bin.validate", "--env=xla-v0", "--reward=OpCountNorm", str(results)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,  # it writes validation.log.json there
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr

    # Validation by execution and runtime against the default pipeline's module.
    from leaderboard.summary import main as summary_main

    capsys.readouterr()
    assert summary_main([str(results), "--validate", "--runtime"]) == 0
    overall = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("overall")][0]
    assert " 1/1 " in overall and " nan " not in overall

    # --resume finds nothing left to do.
    eval_main(
        [
            "--policy=leaderboard.agents.default_pipeline.policy:policy",
            f"--leaderboard_results={results}",
            f"--leaderboard_logfile={tmp_path / 'log'}",
            "--resume",
            *FLAGS,
        ]
    )
    assert len(results.read_text().splitlines()) == 2


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
