"""The demo episode: ``python -m xla_service.demo`` (``make demo``).

Runs a fixed pass sequence on a bundled benchmark through the stock
``compiler_gym`` client (real gRPC, real XLA passes), printing the op count
after each pass, then the op count that XLA's own default pipeline reaches.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from xla_service.catalog.pipelines import DEMO_SEQUENCE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument(
        "--benchmark",
        default=None,
        help="benchmark URI (default: the bundled default, datasets/DEFAULT_BENCHMARK)",
    )
    parser.add_argument(
        "--passes",
        default=",".join(DEMO_SEQUENCE),
        help="comma-separated XLA pass names to apply, in order "
        "(default: the CPU pipeline's main passes)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    import compiler_gym  # noqa: F401  (registers xla-v0 through the gym plugin)

    passes: list[str] = [p for p in args.passes.split(",") if p]
    with compiler_gym.make("xla-v0", benchmark=args.benchmark) as env:
        env.reset()
        initial = env.observation["OpCount"]
        print(f"benchmark: {env.benchmark}")
        print(f"compiler:  {env.compiler_version}")
        print(f"{'step':>4}  {'pass':<34} {'op count':>8}  {'reward':>7}")
        print(f"{0:>4}  {'(normalized input)':<34} {initial:>8}")
        count = initial
        for i, name in enumerate(passes, 1):
            _, reward, _, info = env.step(env.action_space[name])
            count = env.observation["OpCount"]
            note = "  (no change)" if info.get("action_had_no_effect") else ""
            if info.get("pass_error"):  # XLA failed on this module: a step without effect
                note = f"  (XLA failed: {info['pass_error'].splitlines()[0][:80]})"
            print(f"{i:>4}  {name:<34} {count:>8}  {reward:>7.0f}{note}")
        final = count
        default = env.observation["OpCountDefault"]
        print(f"XLA default pipeline reaches {default} ops; this sequence reached {final}.")
        if initial != default:
            ratio = (initial - final) / (initial - default)
            print(f"Op-count reduction relative to the default pipeline: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
