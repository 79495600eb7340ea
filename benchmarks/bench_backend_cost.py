"""What ``BackendCost`` costs a new state, against module size, beside a cold step.

For modules of growing size (the bundled families' largest training steps and
a size ladder of GPT-2 steps), measured inside a warm worker (its own clock,
no pipes): a cold step (``cse``, as the engine runs it, pipes included), the backend cost as
served (``backend_cost``: replies when XLA's dumps hold the optimized module
and its buffer assignment), and the whole compile it stands for (the finished
executable at LLVM -O0, ``executable_cost``), in both pipeline modes; ms and
ms per instruction. Each figure is the median of ``--repeats`` runs on
renamed copies of the module (nothing cached).
"""
from __future__ import annotations

import gzip
import re
import statistics
import sys
import time
from collections.abc import Sequence

from _common import ROOT, print_header, print_rows, script_parser

from xla_service.passes.engine import Engine

MODULES = (
    "xla-gpt2-v0/gpt2-l1-d64-h4-s32-b2-f32-infer",
    "xla-gpt2-v0/gpt2-l2-d64-h4-s32-b2-adam-f32-train",
    "xla-gpt2-v0/gpt2-l6-d128-h4-s64-b1-adam-f32-train",
    "xla-bert-v0/bert-l6-d128-h4-s64-b1-adamw-bf16-train",
    "xla-resnet-v0/resnet50-w16-i32-b2-sgd-train",
    "xla-moe-v0/moe-l4-d96-h2-s32-b2-e8-k2-adam-train",
    "xla-rnn-v0/lstm-bicls-l4-h64-s32-b4-adam-train",
)


def _timed(engine: Engine, method: str, *args: object) -> float:
    """Seconds of one request inside the worker (its tail, if any, not counted)."""
    seconds, _, error = engine.request("timed", method, *args)
    if error:
        raise RuntimeError(f"{method}: {error}")
    return float(seconds)


def main(argv: Sequence[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (default: %(default)s)")
    parser.add_argument("--modules", default=",".join(MODULES), help="SUITE/NAME of bundled modules, comma-separated (default: a size ladder)")
    args = parser.parse_args(argv)
    print_header(argv)
    engine = Engine(workers=1)
    rows = []
    try:
        for spec in args.modules.split(","):
            base = gzip.open(ROOT / "datasets" / f"{spec}.hlo.gz", "rt").read()
            figures: dict[str, list[float]] = {}
            size = 0
            for r in range(args.repeats):
                state = engine.load(re.sub(r"^HloModule ([^,\s]+)", rf"HloModule \1_b{r}", base, count=1))
                size = state.op_count
                start = time.perf_counter()
                engine.apply(state, "cse")  # as the engine runs a step: pipes included
                figures.setdefault("step", []).append(time.perf_counter() - start)
                for pipeline in ("full", "agent"):
                    figures.setdefault(f"served {pipeline}", []).append(_timed(engine, "backend_cost", state.text, pipeline))
                    figures.setdefault(f"whole {pipeline}", []).append(_timed(engine, "executable_cost", state.text, pipeline))
            medians = {k: statistics.median(v) * 1000 for k, v in figures.items()}
            rows.append((spec.split("/")[1][:40], size, *(f"{medians[k]:.0f} ({medians[k] / size:.2f})" for k in figures)))
            print(f"  {spec}: {size} ops", file=sys.stderr, flush=True)
    finally:
        engine.close()
    print("\nms (ms per op), median of", args.repeats)
    print_rows(rows, ("module", "ops", "cold step", "served full", "whole full", "served agent", "whole agent"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
