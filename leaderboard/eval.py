"""``python -m leaderboard.eval --policy MODULE:FUNCTION [flags]``.

Loads a policy (a ``Callable[[CompilerEnv], None]``, or a zero-argument
factory returning one when FUNCTION is a call such as ``Beam(width=2)``) and runs the
leaderboard harness on it; then prints the summary (``leaderboard.report.summary``).
"""
from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Sequence

from leaderboard.harness import add_flags, eval_xla_opcount_policy, load_policy

__all__ = ["load_policy", "main"]  # load_policy: harness.load_policy, re-exported


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--policy", required=True, help="the policy, as MODULE:FUNCTION")
    add_flags(parser)
    args, rest = parser.parse_known_args(argv)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    policy = load_policy(args.policy)
    forwarded: list[str] = [a for a in (argv if argv is not None else sys.argv[1:])]
    forwarded = _without_policy(forwarded)
    remote = None
    if args.ray is not None:
        from leaderboard.distributed import run_on_ray

        remote = functools.partial(run_on_ray, args.policy, address=args.ray, reward=args.reward)
    eval_xla_opcount_policy(policy, forwarded, remote=remote)
    if args.reward != "OpCount":
        from leaderboard.report.backend_summary import main as backend_summary

        return backend_summary([args.leaderboard_results, "--reward", args.reward])
    from leaderboard.report.summary import main as summary

    return summary([args.leaderboard_results])


def _without_policy(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--policy":
            skip = True
        elif not a.startswith("--policy="):
            out.append(a)
    return out


if __name__ == "__main__":
    sys.exit(main())
