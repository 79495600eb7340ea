"""The across-seed tables of the READMEs and docs/experiments: for each ``--preset NAME`` of ``leaderboard.report.seeds`` (also taken by
``leaderboard.report.improvement`` and ``leaderboard.report.efficiency``), its baselines, its rows and its figure
title, each beside the ``reproduce.sh`` stage that fills it; ``leaderboard.report.against_paper`` takes its
default rows from them. A new table is one entry of ``PRESETS``.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

__all__ = ["PRESETS", "Preset"]


class Preset(NamedTuple):
    """A table of the docs: its baselines, its rows (label, comma-separated globs), its figure title."""

    baselines: tuple[str, ...]
    rows: tuple[tuple[str, str], ...]
    title: str

    def items(self) -> list[str]:
        """Its rows as ``LABEL=GLOB`` items, as the command line takes them."""
        return [f"{label}={pattern}" for label, pattern in self.rows]


_AGENTS = Path(__file__).parents[1] / "agents"
_RESULTS, _GENERALIZE, _GNN = _AGENTS / "rl" / "results", _AGENTS / "rl" / "results" / "generalize", _AGENTS / "gnn" / "results"
_BASELINES = (f"{_AGENTS}/default_pipeline/results-test.csv", f"{_AGENTS}/default_pipeline/results-heldout.csv")
_WM = _AGENTS / "world_model" / "results"
_GNN_GPT2 = f"{_GNN}/gnn-gpt2-seed*.csv"  # the graph agent at 4,000 steps on GPT-2, test and held-out
_GNN_GPT2_STORE_OFF = f"{_GNN}/store-off/gnn-gpt2-seed*-test.csv"  # the same runs with the store off (gnn_store_off)


def _rl(run: str, folder: Path = _RESULTS) -> str:
    """An agents/rl run's seeds, on the test split and the held-out families."""
    return f"{folder}/{run}-seed*-test.csv,{folder}/{run}-seed*-heldout.csv"


def _world_model(label: str, tag: str) -> tuple[tuple[str, str], ...]:
    """A world-model run's rows: its checkpoints (reproduce.sh world_model), then its final model."""
    checkpoints = tuple((f"{label}, {n:,} real steps", f"{_WM}/{tag}-steps{n}-seed*-test.csv") for n in (750, 1000, 2000))
    return (*checkpoints, (f"{label}, 4,000 real steps", f"{_WM}/{tag}-seed*-test.csv"))


#: The across-seed tables of the READMEs and docs/experiments (``--preset NAME``), each beside the reproduce.sh stage that fills it.
PRESETS: dict[str, Preset] = {
    "generalize": Preset(  # reproduce.sh generalize: PPO by training set
        _BASELINES,
        (
            ("GPT-2", _rl("ppo-OpCount")),
            ("six families", f"{_GENERALIZE}/six-ppo-seed*.csv"),
            ("generator", f"{_GENERALIZE}/generator-ppo-seed*.csv"),
            ("six families + generator", f"{_GENERALIZE}/mixed-ppo-seed*.csv"),
        ),
        "PPO by training set, on the test split and the held-out families",
    ),
    "rl": Preset(  # reproduce.sh seeds: every RL agent of agents/rl, trained on GPT-2
        _BASELINES,
        (
            ("PPO", _rl("ppo-OpCount")), ("PPO + shaping", _rl("ppo-OpCountShaped")), ("TRPO", _rl("trpo-OpCount")),
            ("A2C", _rl("a2c-OpCount")), ("DQN", _rl("dqn-OpCount")), ("PPO + cost in value", _rl("ppo-OpCount-costvf")),
        ),
        "The RL agents across training seeds (GPT-2 train split, 4,000 env steps)",
    ),
    "gnn": Preset(  # reproduce.sh gnn, gnn_lr, gnn_episodes5: the graph agent beside the MLP PPO, same budget, seeds and training sets
        _BASELINES,
        (
            ("MLP PPO, GPT-2", _rl("ppo-OpCount")),
            ("GNN PPO, GPT-2", _GNN_GPT2),
            ("GNN PPO, GPT-2, store off", _GNN_GPT2_STORE_OFF),
            ("GNN PPO, GPT-2, learning rate 1e-3", f"{_GNN}/lr/gnn-gpt2-seed*.csv"),  # reproduce.sh gnn_lr
            ("GNN PPO, GPT-2, episodes of 5, store off", f"{_GNN}/episodes5/gnn-gpt2-seed*.csv"),  # reproduce.sh gnn_episodes5
            ("MLP PPO, GPT-2, episodes of 5", _rl("ppo-OpCount", _RESULTS / "episodes5")),  # reproduce.sh gnn_episodes5
            # reproduce.sh gnn_seeds: the rows "MLP PPO, GPT-2" (episodes of 20) and "GNN PPO, GPT-2, episodes of 5, store
            # off", each with gnn_seeds' seeds (3, 4, ...) added to its seeds 0-2
            ("MLP PPO, GPT-2, more seeds", f"{_rl('ppo-OpCount')},{_rl('ppo-OpCount', _RESULTS / 'seeds')}"),
            ("GNN PPO, GPT-2, episodes of 5, store off, more seeds",
             f"{_GNN}/episodes5/gnn-gpt2-seed*.csv,{_GNN}/episodes5/seeds/gnn-gpt2-seed*.csv"),
            ("MLP PPO, six families", f"{_GENERALIZE}/six-ppo-seed*.csv"),
            ("GNN PPO, six families", f"{_GNN}/gnn-mixed-seed*.csv"),
            ("GNN PPO, six families, store off", f"{_GNN}/store-off/gnn-mixed-seed*-test.csv"),  # reproduce.sh gnn_store_off
        ),
        "The graph agent beside the MLP PPO (4,000 env steps, by training set)",
    ),
    "budget": Preset(  # reproduce.sh budget: PPO, PPO + shaping and the GNN at 5x the env steps
        _BASELINES,
        (
            ("PPO, 4,000 steps", _rl("ppo-OpCount")),
            ("PPO, 20,000 steps", _rl("ppo-OpCount", _RESULTS / "budget")),
            ("PPO + shaping, 4,000 steps", _rl("ppo-OpCountShaped")),
            ("PPO + shaping, 20,000 steps", _rl("ppo-OpCountShaped", _RESULTS / "budget")),
            ("GNN PPO, 4,000 steps", _GNN_GPT2),
            ("GNN PPO, 4,000 steps, store off", _GNN_GPT2_STORE_OFF),
            ("GNN PPO, 20,000 steps", f"{_GNN}/budget/gnn-gpt2-seed*.csv"),
            ("GNN PPO, 20,000 steps, store off", f"{_GNN}/budget/store-off/gnn-gpt2-seed*-test.csv"),  # reproduce.sh gnn_store_off
        ),
        "PPO, PPO + shaping and the GNN by training budget (GPT-2 train split)",
    ),
    "world_model": Preset(  # reproduce.sh world_model, ppo_steps, world_model_six_rerun, world_model_episodes5: score against real env steps
        _BASELINES,
        (
            *_world_model("world model", "wm-xla-gpt2-v0"),
            *_world_model("world model + lookahead", "wm-xla-gpt2-v0-lookahead"),
            *(
                (f"world model + {plan} plan, {n:,} real steps", f"{_WM}/wm-xla-gpt2-v0-{plan}-steps{n}-seed*-test.csv")
                for plan in ("score", "tiered")
                for n in (750, 1000, 2000)
            ),
            *((f"MLP PPO, {n:,} steps", f"{_RESULTS}/steps/ppo-OpCount-steps{n}-seed*-test.csv") for n in (1000, 2000)),
            ("MLP PPO, 4,000 steps", f"{_RESULTS}/ppo-OpCount-seed*-test.csv"),
            ("six families: world model + score plan, 750 real steps", f"{_WM}/wm-six-score-steps750-seed*.csv"),
            ("six families: world model + tiered plan, 750 real steps", f"{_WM}/wm-six-tiered-steps750-seed*-test.csv"),
            *(
                (f"six families, new runs: world model + {plan} plan, {n} real steps",
                 f"{_WM}/rerun/wm-six-{plan}-steps{n}-seed*-test.csv")
                for plan in ("score", "tiered")
                for n in (500, 750)
            ),
            *(  # reproduce.sh world_model_episodes5: the same recipe collecting in real episodes of 5 passes
                (f"six families, episodes of 5: world model + tiered plan, {n} real steps",
                 f"{_WM}/episodes5/wm-six-tiered-steps{n}-seed*-test.csv")
                for n in (500, 750)
            ),
            *(
                (f"six families: MLP PPO, {n:,} steps", f"{_RESULTS}/steps/six-ppo-steps{n}-seed*-test.csv")
                for n in (1000, 2000, 2500, 3000)
            ),
            ("six families: MLP PPO, 4,000 steps", f"{_GENERALIZE}/six-ppo-seed*.csv"),
        ),
        "The world model by real env steps, beside the MLP PPO (GPT-2 train split, or the six where named)",
    ),
}
