"""``python -m leaderboard.report.backend_reference``: XLA's own backend costs of every benchmark.

For each benchmark of the selected splits and each pipeline mode, the
``BackendCost`` vector of the benchmark as loaded (``Initial``) and of XLA's
default pipeline's result (``Default``), read through the stock client: the
reference that a backend track's results are divided by
(``leaderboard.report.backend_summary``), as the manifests' ``default_op_count`` is
the op count track's. Written as JSON, keyed by benchmark URI; ``--resume``
keeps what the file has.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from leaderboard.harness import select_benchmarks
from leaderboard.runs import runs_dir
from xla_service.catalog import JAXLIB_VERSION
from xla_service.catalog.backend import BACKEND_KEYS, BACKEND_SEMANTICS_VERSION
from xla_service.env.datasets import SPLITS

__all__ = ["DEFAULT_PATH", "PIPELINES", "load_reference", "main"]

DEFAULT_PATH = Path(__file__).parents[1] / "results" / "backend_reference.json"
PIPELINES = {"full": "BackendCost", "agent": "BackendCostAgent"}


def load_reference(path: Path = DEFAULT_PATH) -> dict[str, dict[str, dict[str, list[float]]]]:
    """``{uri: {pipeline: {"initial": [...], "default": [...]}}}`` (``BACKEND_KEYS`` order);
    raises ValueError if the file was made under other keys or semantics."""
    data = json.loads(path.read_text())
    if data.get("keys") != list(BACKEND_KEYS) or data.get("backend_semantics") != BACKEND_SEMANTICS_VERSION:
        raise ValueError(
            f"{path} was made with keys {data.get('keys')} and backend semantics "
            f"{data.get('backend_semantics')}, expected {list(BACKEND_KEYS)} and {BACKEND_SEMANTICS_VERSION}: "
            "run python -m leaderboard.report.backend_reference again"
        )
    return dict(data["benchmarks"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--split", action="append", choices=SPLITS, help="splits to cover (repeatable; default: test and heldout)")
    parser.add_argument("--out", type=Path, default=runs_dir("backend_reference.json"),
                        help=f"the JSON file to write (reproduce.sh writes the committed {DEFAULT_PATH.relative_to(DEFAULT_PATH.parents[2])})")
    parser.add_argument("--sample", type=int, default=0, help="if > 0, N benchmarks of each suite (the harness's --sample)")
    parser.add_argument("--benchmark", action="append", metavar="URI", help="only these benchmarks (repeatable; overrides --split)")
    parser.add_argument("--resume", action="store_true", help="keep the benchmarks --out already has")
    args = parser.parse_args(argv)
    import compiler_gym

    uris = args.benchmark or [u for split in args.split or ["test", "heldout"] for u in select_benchmarks(split, sample=args.sample)]
    benchmarks: dict[str, dict[str, dict[str, list[float]]]] = {}
    if args.resume and args.out.is_file():
        benchmarks = load_reference(args.out)
    todo = [u for u in uris if u not in benchmarks]
    failed: dict[str, str] = {}
    with compiler_gym.make("xla-v0") as env:
        for i, uri in enumerate(todo):
            try:
                env.reset(benchmark=uri)
                benchmarks[uri] = {
                    pipeline: {
                        "initial": [float(v) for v in env.observation[f"{space}Initial"]],
                        "default": [float(v) for v in env.observation[f"{space}Default"]],
                    }
                    for pipeline, space in PIPELINES.items()
                }
            except ValueError as e:  # XLA cannot compile it, or a timeout: said, and left for --resume
                failed[uri] = str(e).splitlines()[0] if str(e) else type(e).__name__
            print(f"[{i + 1}/{len(todo)}] {uri}{' FAILED: ' + failed[uri] if uri in failed else ''}", file=sys.stderr, flush=True)
            _write(args.out, benchmarks)
    _write(args.out, benchmarks)
    for uri, why in failed.items():
        print(f"no reference for {uri}: {why}", file=sys.stderr)
    return 1 if failed else 0


def _write(path: Path, benchmarks: dict[str, dict[str, dict[str, list[float]]]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "keys": list(BACKEND_KEYS),
        "backend_semantics": BACKEND_SEMANTICS_VERSION,
        "jaxlib": JAXLIB_VERSION,
        "benchmarks": dict(sorted(benchmarks.items())),
    }
    path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
