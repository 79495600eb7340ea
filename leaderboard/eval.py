"""``python -m leaderboard.eval --policy MODULE:FUNCTION [flags]``.

Loads a policy (a ``Callable[[CompilerEnv], None]``, or a zero-argument
factory returning one when FUNCTION is a call such as ``Beam(width=2)``) and runs the
leaderboard harness on it; then prints the summary (``leaderboard.summary``).
"""
from __future__ import annotations

import argparse
import ast
import importlib
import sys
from collections.abc import Sequence

from leaderboard.harness import Policy, add_flags, eval_xla_opcount_policy

__all__ = ["load_policy", "main"]


def load_policy(spec: str) -> Policy:
    """``"package.module:function"`` -> the function.

    ``"...:Factory()"`` calls the factory, and ``"...:Factory(width=2)"`` calls
    it with literal arguments (numbers, strings, ...: ``ast.literal_eval``).
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not attr:
        raise ValueError(f"Expected --policy MODULE:FUNCTION, got {spec!r}")
    name, paren, call = attr.partition("(")
    module = importlib.import_module(module_name)
    try:
        target = getattr(module, name)
    except AttributeError:
        raise ValueError(f"Module {module_name!r} has no attribute {name!r}") from None
    if not paren:
        return target
    try:
        node = ast.parse(f"f({call}", mode="eval").body
        if not isinstance(node, ast.Call):
            raise SyntaxError
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    except (SyntaxError, ValueError):
        raise ValueError(f"Expected literal arguments in --policy {spec!r}, e.g. {name}(width=2)") from None
    return target(*args, **kwargs)


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
    eval_xla_opcount_policy(policy, forwarded, policy_spec=args.policy)
    from leaderboard.summary import main as summary

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
