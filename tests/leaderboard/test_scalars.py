"""``leaderboard.report.scalars``: a run's TensorBoard scalars, summarized."""
from __future__ import annotations

import pytest

from leaderboard.report.scalars import main, read_scalars, summarize


def _log(run, scalars):
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(run / "tb"))
    for tag, values in scalars.items():
        for step, value in enumerate(values):
            writer.add_scalar(tag, value, step * 10)
    writer.close()


def test_summarize():
    row = summarize([0.0, 0.2, 0.1, 0.3, -0.1, 0.5, 0.4, 0.6])
    assert row["points"] == 8 and row["first"] == 0.0 and row["last"] == 0.6
    assert row["median"] == pytest.approx(0.25) and row["max"] == 0.6 and row["> 0"] == 6
    assert row["mean of last quarter"] == pytest.approx(0.5)  # the last 2 of 8
    assert summarize([2.0])["mean of last quarter"] == 2.0
    with pytest.raises(ValueError, match="expected at least one value"):
        summarize([])


def test_a_runs_rows_and_a_missing_tag(tmp_path, capsys):
    for seed, scale in ((0, 1.0), (1, 2.0)):
        _log(tmp_path / f"run-seed{seed}", {"losses/entropy": [4.0 * scale, 3.0 * scale], "losses/clipfrac": [0.0, 0.1]})
    assert read_scalars(tmp_path / "run-seed1")["losses/entropy"] == [8.0, 6.0]
    assert main([str(tmp_path / "run-seed*"), "--tag", "losses/entropy", "--tag", "charts/episodic_return"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| run | tag | points |") and len(lines) == 2 + 4
    assert lines[2] == f"| {tmp_path}/run-seed0 | losses/entropy | 2 | 4 | 3 | 3.5 | 4 | 2 | 3 |"
    assert lines[3].endswith("| charts/episodic_return | - | - | - | - | - | - | - |")
    assert "| 8 | 6 | 7 | 8 |" in lines[4]


def test_no_events_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit):
        main([str(tmp_path / "empty")])
    assert "expected TensorBoard event files" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(tmp_path / "nothing-*")])
    assert "expected run folders matching" in capsys.readouterr().err
