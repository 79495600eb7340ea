"""The figures behind the bf16 rule of validation (README, ``Validation``).

Runs a pass sequence on a bundled bf16 module with the pass engine, then
prints, for the agent's module and for deliberately altered copies of it:
the largest output difference from the original module (what the bf16
tolerance sees), and, with both modules widened to float32, the largest
difference as a multiple of the float32 tolerance (what the second look
sees: below 1 passes).

    .venv/bin/python benchmarks/measure_bf16_validation.py   # ~1 min
"""
from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import numpy as np

from xla_service.catalog.schema import tolerance
from xla_service.passes import observe
from xla_service.passes.compare import is_inexact, widen
from xla_service.passes.engine import Engine

ROOT = Path(__file__).resolve().parents[1]
#: (label, text replaced, replacement): one instruction made wrong
ALTERATIONS = [("one multiply made an add", " multiply(", " add("), ("one exponential made a tanh", " exponential(", " tanh(")]


def _outputs(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return [o.astype(np.float64) for o in observe.outputs(observe.compiled(text)[1], inputs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--suite", default="xla-gpt2-v0", help="bundled suite of the module (default: %(default)s)")
    parser.add_argument("--module", default="gpt2-l6-d64-h2-s32-b2-bf16-infer", help="module name in the suite (default: %(default)s)")
    parser.add_argument(
        "--passes", default="cse reshape-mover algsimp call-inliner algsimp", help="the agent's pass sequence (default: PPO's there)"
    )
    args = parser.parse_args()
    engine = Engine(workers=1)
    try:
        original = engine.load(gzip.open(ROOT / "datasets" / args.suite / f"{args.module}.hlo.gz", "rt").read())
        state = original
        for name in args.passes.split():
            state = engine.apply(state, name)
        inputs = observe.make_inputs(observe.compiled(original.text)[0], seed=0)
        wide = [x.astype(np.float32) if x.dtype.itemsize < 4 and is_inexact(x.dtype) else x for x in inputs]
        expected, reference = _outputs(original.text, inputs), _outputs(widen(original.text), wide)
        rtol, atol = tolerance("float32")
        print(f"{args.module}: {original.op_count} ops; after `{args.passes}`: {state.op_count}")
        print(f"{'module':<30} {'largest diff from original':>27} {'widened: x float32 tolerance':>29}")
        modules = [("agent", state.text)] + [(label, state.text.replace(old, new, 1)) for label, old, new in ALTERATIONS]
        for label, text in modules:
            diff = max(float(np.abs(a - e).max()) for a, e in zip(_outputs(text, inputs), expected))
            ratio = max(
                float((np.abs(a - r) / (atol + rtol * np.abs(r))).max())
                for a, r in zip(_outputs(widen(text), wide), reference)
            )
            print(f"{label:<30} {diff:>27.4g} {ratio:>29.3g}")
    finally:
        engine.close()


if __name__ == "__main__":
    main()
