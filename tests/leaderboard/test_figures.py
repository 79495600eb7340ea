"""The figures script draws every figure from results files and run folders."""
from __future__ import annotations

import pytest
from compiler_gym.compiler_env_state import CompilerEnvState, CompilerEnvStateWriter

from leaderboard.report.figures import main

GPT2 = "benchmark://xla-gpt2-v0/gpt2-l6-d128-h4-s32-b2-adam-f32-train"
RESNET = "benchmark://xla-resnet-v0/resnet18-w16-i32-b2-adam-train"


def _results(path, rewards):
    with open(path, "w") as f, CompilerEnvStateWriter(f) as writer:
        for benchmark, reward in rewards:
            writer.write_state(CompilerEnvState(benchmark=benchmark, reward=reward, walltime=1.0, commandline="cse"))
    return path


def test_figures_from_results_and_runs(tmp_path):
    run = tmp_path / "ppo-OpCount-seed0"
    run.mkdir()
    (run / "monitor-0.monitor.csv").write_text('#{"t_start": 0}\nr,l,t\n0.1,20,1.0\n0.2,20,2.0\n')
    (run / "monitor-1.monitor.csv").write_text('#{"t_start": 0}\nr,l,t\n-0.1,20,1.5\n')
    ppo = _results(tmp_path / "ppo.csv", [(GPT2, 1.1), (RESNET, 0.9)])
    shaped = _results(tmp_path / "shaped.csv", [(GPT2, 1.3), (RESNET, 1.0)])
    flags = ["--results", f"PPO={ppo}", "--results", f"PPO + shaping={shaped}", "--runs", str(run)]
    out, again = tmp_path / "figures", tmp_path / "again"
    assert main([*flags, "--out", str(out)]) == 0
    assert main([*flags, "--out", str(again)]) == 0
    for name in ("algorithms", "ppo_enhancements", "per_benchmark", "training"):
        png = (out / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n", name
        assert png == (again / f"{name}.png").read_bytes(), f"{name}: the same figure, other bytes"  # no stamp
        assert b"Software" not in png, name


def test_results_must_be_labelled(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--results", str(tmp_path / "x.csv"), "--out", str(tmp_path)])
    assert "expected LABEL=PATH" in capsys.readouterr().err
