"""The results tables of ``leaderboard/README.md``, from the committed summaries.

``python -m leaderboard.report.table`` prints Markdown tables: the leaderboard (one
row per agent, CompilerGym's columns then ours: first the op-count ratio over
the replayed default pipeline, which covers every benchmark, with its 95%
interval and coverage, then over XLA's default, the mean reduction and the
paper's metric), that ratio per test family, and the paper's metric per test
family (against XLA's default, and against the replayed default pipeline). Each row comes from ``<results>.summary.json``, written by
``leaderboard.report.summary --json`` (``leaderboard/reproduce.sh summary``); an
agent whose summary is missing is left out. ``--full``: the agents run on the
full test split instead of the test sample, with a column for the families held
out from all training (split ``heldout``: ``datasets/splits.py``) where the agent
ran on them; ``--heldout``: the tables of those runs alone.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from leaderboard.report.figures import (
    DEFAULT_RESULTS,
    FULL_RESULTS,
    HELDOUT_RESULTS,
    HERE,
    labelled_results,
)
from leaderboard.report.summary import PAPER_MIX

__all__ = ["HELDOUT", "main", "rows", "with_heldout"]

AUTHOR = "xla-gym"
DATE = "2026-11"
#: The column of the held-out families' overall row in the full-split tables.
HELDOUT = "held-out families"


def rows(results: dict[str, str]) -> dict[str, dict[str, Any]]:
    """label -> {"csv": path, "rows": {family: metrics}} for every summarized result."""
    out = {}
    for label, csv in results.items():
        summary = Path(csv).with_suffix(".summary.json")
        if summary.is_file():
            data = json.loads(summary.read_text())
            out[label] = {"csv": csv, "rows": {r["name"]: r for r in data["rows"]}}
    return out


def with_heldout(table: dict[str, dict[str, Any]], heldout: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``table`` with each agent's held-out overall row (if it ran there) as the group ``HELDOUT``."""
    for label, entry in table.items():
        if label in heldout:
            entry["rows"][HELDOUT] = heldout[label]["rows"]["overall"]
    return table


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:+.1%}"


def _ratio(aggregate: dict[str, Any] | None) -> str:
    if not aggregate or math.isnan(aggregate["value"]):
        return "-"
    interval = "" if math.isnan(aggregate["low"]) else f" [{aggregate['low']:.3f}, {aggregate['high']:.3f}]"
    return f"{aggregate['value']:.3f}x{interval}"


def _share(aggregate: dict[str, Any] | None) -> str:
    if not aggregate or math.isnan(aggregate["value"]):
        return "-"
    interval = "" if math.isnan(aggregate["low"]) else f" [{aggregate['low']:+.1%}, {aggregate['high']:+.1%}]"
    return f"{aggregate['value']:+.1%}{interval}"


def leaderboard(table: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| Author | Algorithm | Links | Date | Walltime (mean) | Op count vs replayed default "
        "(geomean N_replay/N, 95% CI) | vs XLA default (geomean N_default/N) | Mean reduction (N0-N)/N0 "
        "| Paper metric (improvement over XLA default) | >= default | Validated | Speedup (geomean) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, entry in table.items():
        r = entry["rows"]["overall"]
        a = r.get("aggregates", {})
        link = f"[results]({os.path.relpath(entry['csv'], HERE)})"
        left_out = f" ({r['nonpositive']} <= 0 left out, {r['no_ratio']} no ratio)" if r["nonpositive"] or r["no_ratio"] else ""
        validated = f"{r['validated']}/{r['checked']}" if r["checked"] else "not run"
        speedup = "-" if math.isnan(r["speedup"]) else f"{r['speedup']:.3f}x"
        n = f", n={r['n']}" + (" (small sample)" if r.get("small_sample") else "")
        lines.append(
            f"| {AUTHOR} | {label} | {link} | {DATE} | {r['walltime']:,.1f} s "
            f"| {_ratio(a.get('vs_baseline_ratio'))}{n} | {_ratio(a.get('vs_default'))} "
            f"| {_share(a.get('mean_reduction'))} | {_pct(r['improvement'])}{left_out} "
            f"| {r['at_least_default']:.0%} | {validated} | {speedup} |"
        )
    return lines


def ratio_by_family(table: dict[str, dict[str, Any]], key: str = "vs_baseline_ratio") -> list[str]:
    """One row per agent, one column per group: the op-count ratio ``key`` with its interval."""
    groups = sorted({f for e in table.values() for f in e["rows"] if f.startswith("xla-")})
    groups += [g for g in (PAPER_MIX, "overall", HELDOUT) if any(g in e["rows"] for e in table.values())]
    short = [g.removeprefix("xla-").removesuffix("-v0") for g in groups]
    lines = ["| Algorithm | " + " | ".join(short) + " |", "|---" * (len(groups) + 1) + "|"]
    for label, entry in table.items():
        cells = [_ratio(entry["rows"][g].get("aggregates", {}).get(key)) if g in entry["rows"] else "-" for g in groups]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def by_family(table: dict[str, dict[str, Any]], metric: str = "improvement") -> list[str]:
    """One row per agent, one column per family: ``metric`` of each."""
    families = sorted({f for e in table.values() for f in e["rows"] if f.startswith("xla-")})
    families += [g for g in (PAPER_MIX, "overall", HELDOUT) if any(g in e["rows"] for e in table.values())]
    short = [f.removeprefix("xla-").removesuffix("-v0") for f in families]
    lines = ["| Algorithm | " + " | ".join(short) + " |", "|---" * (len(families) + 1) + "|"]
    for label, entry in table.items():
        cells = [_pct(entry["rows"][f][metric]) if f in entry["rows"] else "-" for f in families]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--results", action="append", default=None, metavar="LABEL=PATH", help="a results CSV (whose .summary.json is read) and its label (repeatable; default: the committed results)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--full", action="store_true", help="the committed results on the full test split instead of the test sample, with a held-out families column")
    which.add_argument("--heldout", action="store_true", help="the committed results on the families held out from all training (split heldout)")
    args = parser.parse_args(argv)
    defaults = FULL_RESULTS if args.full else HELDOUT_RESULTS if args.heldout else DEFAULT_RESULTS
    table = rows(labelled_results(parser, args.results, defaults))
    if not table:
        parser.error("no summaries found: run leaderboard/reproduce.sh summary first")
    if args.full and not args.results:
        table = with_heldout(table, rows(labelled_results(parser, None, HELDOUT_RESULTS)))
    print("\n".join(leaderboard(table)))
    print("\nOp count against the replayed default pipeline (geomean N_replay / N_agent, 95% CI), by test family:\n")
    print("\n".join(ratio_by_family(table)))
    print("\nThe paper's metric over XLA's default, by test family:\n")
    print("\n".join(by_family(table)))
    print("\nThe paper's metric over the replayed default pipeline, by test family:\n")
    print("\n".join(by_family(table, "vs_baseline")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
