"""The figure of a runtime comparison: exhaustive (a) against adaptive (b), per benchmark.

``python -m leaderboard.agents.runtime.plot RESULTS.json [--out FIGURE.png] [--markdown]``

Reads the JSON that ``run.py`` writes. Left: each mode's final speedup over
its baseline (re-measured apart from the search), with the 95% interval as an
error bar and a hollow marker where it is within noise. Right: the real
measurements each mode spent (candidates measured, plus baseline and
finalist observations). ``--markdown`` prints the README's table of the
same report instead (:func:`table`).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["main", "plot", "table"]

_MODES = {"exhaustive": ("(a) exhaustive", "tab:blue"), "adaptive": ("(b) adaptive", "tab:orange")}


def _short(uri: str) -> str:
    suite, _, name = uri.removeprefix("benchmark://").partition("/")
    return f"{suite.removeprefix('xla-').removesuffix('-v0')}/{name}"


def plot(report: dict[str, Any], out: Path) -> Path:
    """Draw ``report`` (``run.py``'s JSON) into ``out``; returns ``out``."""
    rows = report["rows"]
    benchmarks = list(dict.fromkeys(r["benchmark"] for r in rows))
    if not benchmarks:
        raise ValueError("Expected a run.py report with rows, got none")
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 0.6 * len(benchmarks) + 2), sharey=True)
    for offset, (mode, (label, colour)) in zip((-0.15, 0.15), _MODES.items()):
        by_benchmark = {r["benchmark"]: r for r in rows if r["mode"] == mode}
        ys, speedups, low, high, spent, noisy = [], [], [], [], [], []
        for i, uri in enumerate(benchmarks):
            if uri not in by_benchmark:
                continue
            r = by_benchmark[uri]
            ys.append(i + offset)
            speedups.append(r["speedup"])
            low.append(r["speedup"] - r["low"])
            high.append(r["high"] - r["speedup"])
            spent.append(r["measurements"] + r["baseline_observations"] + r["finalist_observations"])
            noisy.append(bool(r["within_noise"]))
        left.errorbar(speedups, ys, xerr=[low, high], fmt="none", ecolor=colour, capsize=3)
        for y, s, within in zip(ys, speedups, noisy):
            left.plot(s, y, "o", color=colour, markerfacecolor="white" if within else colour)
        left.plot([], [], "o", color=colour, label=label)
        right.barh(ys, spent, height=0.3, color=colour, label=label)
    left.axvline(1.0, color="grey", linewidth=0.8)
    left.set_yticks(range(len(benchmarks)), [_short(b) for b in benchmarks], fontsize=8)
    left.invert_yaxis()
    baseline = report.get("args", {}).get("baseline", "initial")
    left.set_xlabel(f"final speedup over the {baseline} module (95% interval; hollow: within noise)")
    right.set_xlabel("real measurements (candidates + baseline + finalists)")
    left.legend(loc="lower right", fontsize=8)
    right.legend(loc="lower right", fontsize=8)
    figure.suptitle("Runtime search: every candidate measured (a) against a cost model and adaptive sampling (b)")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return out


def _verdict(row: dict[str, Any]) -> str:
    if row["within_noise"]:
        return "yes"
    return "**no: faster**" if row["speedup"] > 1 else "**no: slower**"


def table(report: dict[str, Any]) -> list[str]:
    """The README's markdown table of ``report``: a row per benchmark and mode, then
    the measurements each mode spent in all and how many winners beat the baseline beyond noise."""
    rows = report["rows"]
    if not rows:
        raise ValueError("Expected a run.py report with rows, got none")
    baseline = {"default": "XLA's default", "initial": "the start module"}[report.get("args", {}).get("baseline", "initial")]
    lines = [
        f"| benchmark | mode | measured / candidates | baseline observations | final speedup over {baseline} "
        "[95% interval] | within noise | search's own speedup | search s | held-out Spearman (5-fold) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    previous = ""
    for r in rows:
        name = _short(r["benchmark"]) if r["benchmark"] != previous else ""
        rho = f"{r['heldout_spearman']:.2f}" if name and r["heldout_spearman"] == r["heldout_spearman"] else ""
        lines.append(
            f"| {name} | {r['mode']} | {r['measurements']} / {r['candidates']} | {r['baseline_observations']} | "
            f"{r['speedup']:.3f} [{r['low']:.3f}, {r['high']:.3f}] | {_verdict(r)} | {r['search_speedup']:.3f} | "
            f"{r['search_seconds']:.0f} | {rho} |"
        )
        previous = r["benchmark"]
    lines.append("")
    for mode in _MODES:
        mine = [r for r in rows if r["mode"] == mode]
        spent = sum(r["measurements"] for r in mine)
        observations = sum(r["measurements"] + r["baseline_observations"] for r in mine)
        faster = sum(1 for r in mine if not r["within_noise"] and r["speedup"] > 1)
        lines.append(
            f"- {mode}: {spent} candidates measured ({observations} Runtime observations with the baseline's) "
            f"on {len(mine)} benchmarks; {faster} final speedups above 1.0 beyond noise"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("results", type=Path, help="the JSON report that run.py --out wrote")
    parser.add_argument("--out", type=Path, default=None, help="the PNG to write (default: RESULTS with .png)")
    parser.add_argument("--markdown", action="store_true", help="print the README's table of RESULTS instead of drawing")
    args = parser.parse_args(argv)
    if not args.results.is_file():
        parser.error(f"expected a run.py JSON report, got {args.results} (no such file)")
    if args.markdown:
        print("\n".join(table(json.loads(args.results.read_text()))))
        return 0
    out = plot(json.loads(args.results.read_text()), args.out or args.results.with_suffix(".png"))
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
