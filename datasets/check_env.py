"""Reset and step every bundled benchmark through ``compiler_gym.make("xla-v0")``.

``.venv/bin/python -m xla_gym_datasets.check_env [--families gpt2,bert] [--limit N] [--min-ops N]``

For each benchmark: ``reset`` (the service loads and normalizes it), compare
``OpCountInitial`` and ``OpCountDefault`` with the manifest, and step
``cse``. Prints one line per mismatch or error and a summary; exits 1 if
any. ``--help`` explains every flag.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

__all__ = ["check", "main"]


def check(uris: Sequence[str], entries: dict) -> list[tuple[str, str]]:
    """(uri, problem) for every benchmark that does not reset, step or match."""
    import compiler_gym

    problems: list[tuple[str, str]] = []
    started = time.monotonic()
    with compiler_gym.make("xla-v0") as env:
        for i, uri in enumerate(uris, 1):
            try:
                env.reset(benchmark=uri)
                initial = env.observation["OpCountInitial"]
                default = env.observation["OpCountDefault"]
                entry = entries[uri]
                if (initial, default) != (entry["initial_op_count"], entry["default_op_count"]):
                    problems.append(
                        (uri, f"expected op counts {entry['initial_op_count']}/"
                              f"{entry['default_op_count']}, got {initial}/{default}")
                    )
                env.step(env.action_space["cse"])
            except Exception as e:  # report every failure, go on
                problems.append((uri, f"{type(e).__name__}: {e}"))
            elapsed = time.monotonic() - started
            print(f"\r[{i}/{len(uris)}] {elapsed:5.0f}s, {len(problems)} problems",
                  end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--families", default="", help="comma-separated families (default: all)")
    parser.add_argument("--limit", type=int, default=0, help="if > 0, the first N benchmarks of each suite")
    parser.add_argument("--min-ops", type=int, default=0,
                        help="only benchmarks of more than this many instructions (their manifest's initial_op_count)")
    args = parser.parse_args(argv)
    from xla_service.env.datasets import get_xla_datasets

    wanted = {f for f in args.families.split(",") if f}
    uris: list[str] = []
    entries = {}
    for dataset in get_xla_datasets():
        family = dataset.name.split("xla-")[-1].rsplit("-v", 1)[0]
        if wanted and family not in wanted:
            continue
        names = [n for n in sorted(dataset.entries) if dataset.entries[n]["initial_op_count"] > args.min_ops]
        names = names[: args.limit or None]
        for name in names:
            uri = f"{dataset.name}/{name}"
            uris.append(uri)
            entries[uri] = dataset.entries[name]
    problems = check(uris, entries)
    for uri, problem in problems:
        print(f"{uri}: {problem}")
    print(f"{len(uris) - len(problems)} of {len(uris)} benchmarks reset, step and match their manifest")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
