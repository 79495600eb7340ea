"""leaderboard.report.curves: learning curves read at common steps, mean and interval across seeds."""
from __future__ import annotations

import json
import math

import pytest

from leaderboard.report.curves import curve, main


def _run(folder, episodes: list[tuple[float, float]], reward: str = "OpCount") -> None:
    """A run folder whose one monitor file holds ``(return, seconds)`` episodes of 10 steps."""
    folder.mkdir()
    (folder / "args.json").write_text(json.dumps({"args": {"reward_space": reward}}))
    (folder / "model.zip").write_bytes(b"")
    lines = ['#{"t_start": 0, "env_id": "xla-v0"}', "r,l,t"] + [f"{r},10,{t}" for r, t in episodes]
    (folder / "monitor-0.monitor.csv").write_text("\n".join(lines) + "\n")


def test_curves_are_read_at_common_steps_up_to_the_shortest_run(tmp_path):
    _run(tmp_path / "seed0", [(0.0, 1), (0.2, 2), (0.4, 3)])
    _run(tmp_path / "seed1", [(0.2, 1), (0.4, 2)])  # stopped after 20 steps
    steps, stats = curve([tmp_path / "seed0", tmp_path / "seed1"], points=3, window=1)
    assert steps == [10, 15, 20]
    assert [m for m, _, _ in stats] == pytest.approx([0.1, 0.1, 0.3])
    low, high = stats[0][1:]
    assert high - 0.1 == pytest.approx(12.706 * math.sqrt(0.02) / math.sqrt(2), rel=1e-4)
    assert low == pytest.approx(0.2 - high)
    one = curve([tmp_path / "seed0"], points=2, window=2)
    assert one[0] == [10, 30] and one[1][1][0] == pytest.approx(0.3) and math.isnan(one[1][1][1])


def test_a_run_without_episodes_is_named(tmp_path):
    _run(tmp_path / "empty", [])
    with pytest.raises(ValueError, match="expected runs with episodes"):
        curve([tmp_path / "empty"])


def test_main_draws_every_configuration_and_skips_unmatched_ones(tmp_path, capsys):
    _run(tmp_path / "a-seed0", [(0.1, 1), (0.3, 2)])
    _run(tmp_path / "a-seed1", [(0.2, 1), (0.2, 2)])
    out = tmp_path / "curves.png"
    _run(tmp_path / "c-seed0", [(0.1, 1)])
    (tmp_path / "c-seed0" / "model.zip").unlink()  # still training
    assert main([f"A={tmp_path}/a-seed*", f"B={tmp_path}/none*", f"C={tmp_path}/c-*", "--out", str(out), "--points", "5"]) == 0
    assert out.stat().st_size > 0 and b"Software" not in out.read_bytes()  # no stamp: the same curves, the same bytes
    err = capsys.readouterr().err
    assert "B: no finished run folders match" in err and "C: no finished run folders match" in err


def test_resumed_pieces_stay_in_order_and_runs_missing_steps_are_left_out(tmp_path, capsys):
    from leaderboard.report.figures import rolling_returns

    # a resumed run appended a piece whose times start again from 0
    _run(tmp_path / "resumed", [(0.1, 5), (0.2, 9), (0.9, 1), (1.0, 2)])
    assert rolling_returns(tmp_path / "resumed", window=1)[1] == pytest.approx([0.1, 0.2, 0.9, 1.0])
    _run(tmp_path / "lost", [(0.5, 1)])  # 10 of 40 steps: its monitors were overwritten by a resume
    (tmp_path / "lost" / "result.json").write_text(json.dumps({"timesteps": 40}))
    (tmp_path / "resumed" / "result.json").write_text(json.dumps({"timesteps": 40}))
    _run(tmp_path / "shaped", [(300.0, 1), (500.0, 2)], reward="OpCountShaped")
    out = tmp_path / "curves.png"
    assert main([f"A={tmp_path}/resumed,{tmp_path}/lost", f"S={tmp_path}/shaped", "--out", str(out)]) == 0
    assert "lost: its episode files hold 10 of its 40 env steps" in capsys.readouterr().err
    from PIL import Image

    width, height = Image.open(out).size
    assert width > 1.5 * height  # two panels: OpCount and OpCountShaped returns have different scales


def test_gnn_runs_are_read_from_episodes_csv_at_their_env_steps(tmp_path, capsys):
    gnn = tmp_path / "gnn-seed0"
    gnn.mkdir()
    # two envs: episodes end at the same global step, in the order the envs were stepped
    rows = ["step,benchmark,return,length,stopped", "40,a,0.1,20,0", "40,b,0.3,20,0", "60,a,0.5,10,1"]
    (gnn / "episodes.csv").write_text("\n".join(rows) + "\n")
    (gnn / "args.json").write_text(json.dumps({"args": {"seed": 0}}))  # no reward_space: OpCount
    steps, stats = curve([gnn], points=2, window=2)
    assert steps == [40, 60]
    assert [m for m, _, _ in stats] == pytest.approx([0.2, 0.4])
    out = tmp_path / "curves.png"
    assert main([f"GNN={gnn}", "--out", str(out)]) == 0
    assert "GNN: no finished run folders match" in capsys.readouterr().err  # no model.pt yet: still training
    (gnn / "model.pt").write_bytes(b"")
    _run(tmp_path / "ppo-seed0", [(0.1, 1), (0.2, 2)])
    assert main([f"GNN={gnn}", f"PPO={tmp_path}/ppo-seed0", "--out", str(out)]) == 0
    assert "no finished run folders" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "name, text, where",
    [
        ("monitor-0.monitor.csv", '#{"t_start": 0}\nr,l,t\n0.1,10,1\n0.2,ten,2\n', "monitor-0.monitor.csv:4"),
        ("monitor-0.monitor.csv", '#{"t_start": 0}\nreturn,length\n0.1,10\n', "monitor-0.monitor.csv:3"),
        ("episodes.csv", "step,return\n20,0.1\n40\n", "episodes.csv:3"),
    ],
)
def test_a_malformed_episode_file_is_named_with_its_line(tmp_path, capsys, name, text, where):
    run = tmp_path / "run-seed0"
    run.mkdir()
    (run / "model.zip").write_bytes(b"")
    (run / "result.json").write_text(json.dumps({"timesteps": 40}))
    (run / name).write_text(text)
    with pytest.raises(ValueError, match=f"{where}: expected"):
        curve([run])
    with pytest.raises(SystemExit):
        main([f"R={run}", "--out", str(tmp_path / "curves.png")])
    assert where in capsys.readouterr().err
