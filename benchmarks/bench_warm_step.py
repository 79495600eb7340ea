"""Warm steps: what an env step costs when the experience store already knows it, layer by layer.

1. **fill**: ``--episodes`` seeded random episodes of ``--steps`` steps
   (``reset(seed=SEED+i)``, actions drawn uniformly from the 64 passes by
   ``numpy.random.default_rng([SEED, i])``) through the Gymnasium env
   (``xla_service.gym:xla-v0`` with its defaults: ``OpcodeCounts``, ``OpCount``,
   ``mask="episode"``) on ``--benchmarks``, into a private store (a new file,
   or ``--store``);
2. **replay**: the same episodes in a fresh process (so a fresh service)
   sharing that store: (a) the Gymnasium env with its defaults, (b) the stock
   client ``compiler_gym.make("xla-v0")`` (reset to the same benchmarks, the
   same actions). Env steps/s after the first reset (resets included), the
   median step and reset; *store* is the first replay in the process (every
   step read from the store by the fresh service), *memory* the second (the
   service's memory cache). Each run prints a digest of every observation,
   reward, flag and action mask: it must equal the fill's (results unchanged);
3. **profile** of a warm step (memory cache): the same step timed through
   each layer, from the Gymnasium wrappers down to an empty gRPC round trip;
   the service's own layers timed in this process without gRPC (the servicer's
   ``Step``, the session's step and observations, the engine's lookup from
   memory and from the store, the reply's (de)serialization); and a cProfile
   of the client's warm steps, by package.

``--compare TREE`` also replays and profiles with the code of TREE (a checkout
of the code before a change, e.g. ``git archive main | tar -x -C /tmp/before``)
first on ``PYTHONPATH`` (its service too), taking turns with this tree,
``--rounds`` each; the profiles side by side.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, heading, median, print_header, print_rows, script_parser

#: The issue's target for the Gymnasium env's warm replay (store), env steps/s.
TARGET_STEPS_PER_SECOND = 1000.0
_HERE = Path(__file__).resolve()


# ------------------------------------------------------------------ episodes


def _actions(seed: int, episode: int, steps: int) -> list[int]:
    import numpy as np

    return [int(a) for a in np.random.default_rng([seed, episode]).integers(64, size=steps)]


class _Digest:
    """A running SHA-256 of what an env returned."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def add(self, *values: Any) -> None:
        import numpy as np

        for value in values:
            if isinstance(value, np.ndarray):
                self._hash.update(str(value.dtype).encode() + value.tobytes())
            else:
                self._hash.update(repr(value).encode())

    def hexdigest(self) -> str:
        return self._hash.hexdigest()[:16]


def _gym_env(args: Any) -> Any:
    import gymnasium

    return gymnasium.make("xla_service.gym:xla-v0", benchmarks=args.benchmarks, max_episode_steps=args.steps)


def _gym_pass(env: Any, args: Any) -> dict[str, Any]:
    """The episodes once through the Gymnasium env: times, benchmarks, digest."""
    digest, steps, resets, uris = _Digest(), [], [], []
    start = time.perf_counter()
    for i in range(args.episodes):
        t = time.perf_counter()
        observation, info = env.reset(seed=args.seed + i)
        resets.append(time.perf_counter() - t)
        uris.append(info["benchmark"])
        digest.add(observation, info["action_mask"])
        for action in _actions(args.seed, i, args.steps):
            t = time.perf_counter()
            observation, reward, terminated, truncated, info = env.step(action)
            steps.append(time.perf_counter() - t)
            digest.add(observation, reward, terminated, truncated, info["action_mask"], info["changed"], info["pass_error"])
            if terminated or truncated:
                break
    return {"seconds": time.perf_counter() - start, "steps": steps, "resets": resets, "uris": uris, "digest": digest.hexdigest()}


def _stock_pass(env: Any, uris: list[str], args: Any) -> dict[str, Any]:
    """The episodes once through the stock CompilerGym client."""
    digest, steps, resets = _Digest(), [], []
    start = time.perf_counter()
    for i, uri in enumerate(uris):
        t = time.perf_counter()
        observation = env.reset(benchmark=uri)
        resets.append(time.perf_counter() - t)
        digest.add(observation)
        for action in _actions(args.seed, i, args.steps):
            t = time.perf_counter()
            observation, reward, done, info = env.step(action)
            steps.append(time.perf_counter() - t)
            digest.add(observation, reward, done, info.get("action_had_no_effect"))
    return {"seconds": time.perf_counter() - start, "steps": steps, "resets": resets, "digest": digest.hexdigest()}


# --------------------------------------------------------------------- roles


def role_fill(args: Any) -> dict[str, Any]:
    import xla_service.gym  # noqa: F401  (registers xla-v0)

    env = _gym_env(args)
    try:
        result = _gym_pass(env, args)
    finally:
        env.close()
    return {"uris": result["uris"], "digest": result["digest"], "seconds": result["seconds"]}


def role_gym(args: Any) -> dict[str, Any]:
    import xla_service.gym  # noqa: F401

    env = _gym_env(args)
    try:
        env.reset(seed=args.seed)  # the first reset (service start) is not counted
        return {"store": _gym_pass(env, args), "memory": _gym_pass(env, args)}
    finally:
        env.close()


def role_stock(args: Any) -> dict[str, Any]:
    import compiler_gym

    uris = json.loads(args.uris)
    env = compiler_gym.make("xla-v0")
    try:
        env.reset(benchmark=uris[0])
        return {"store": _stock_pass(env, uris, args), "memory": _stock_pass(env, uris, args)}
    finally:
        env.close()


def role_profile(args: Any) -> dict[str, Any]:
    from _warm_layers import profile_layers

    return profile_layers(args, _gym_env, _actions)


ROLES = {"fill": role_fill, "gym": role_gym, "stock": role_stock, "profile": role_profile}


def _run_role(role: str, args: Any, tree: Path | None = None, uris: list[str] | None = None) -> dict[str, Any]:
    """``role`` in a fresh interpreter (and so a fresh service), with ``tree`` first on the path."""
    env = {**os.environ, "XLA_GYM_STORE": str(args.store)}
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    command = [sys.executable, str(_HERE), "--role", role, "--store", str(args.store), "--episodes", str(args.episodes),
               "--steps", str(args.steps), "--seed", str(args.seed), "--benchmarks", args.benchmarks,
               "--uris", json.dumps(uris or [])]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600, cwd=tree or ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{role} ({tree or 'this tree'}) failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# -------------------------------------------------------------------- report


def _rate(run: dict[str, Any]) -> float:
    return len(run["steps"]) / run["seconds"] if run["seconds"] > 0 else float("nan")


def _row(label: str, runs: list[dict[str, Any]], expected: str) -> list[str]:
    rates = [_rate(r) for r in runs]
    steps = [median(r["steps"]) for r in runs]
    resets = [median(r["resets"]) for r in runs]
    same = all(r["digest"] == expected for r in runs)
    return [label, f"{median(rates):.0f}", f"{min(rates):.0f}-{max(rates):.0f}", f"{median(steps) * 1000:.3f}",
            f"{median(resets) * 1000:.2f}", "yes" if same else f"NO ({runs[0]['digest']})"]


def report_replays(results: dict[str, dict[str, list[dict[str, Any]]]], fill: dict[str, Any], stock_digest: str) -> None:
    heading("replay in a fresh process: env steps/s after the first reset (resets included), medians over rounds")
    rows = []
    for tree, kinds in results.items():
        for kind in ("gym", "stock"):
            for cache in ("store", "memory"):
                runs = [r[cache] for r in kinds[kind]]
                expected = fill["digest"] if kind == "gym" else stock_digest
                rows.append(_row(f"{tree}: {'Gymnasium env' if kind == 'gym' else 'stock client'}, {cache}", runs, expected))
    print_rows(rows, ["run", "steps/s", "range", "step ms (median)", "reset ms (median)", "results as the fill"])
    print(f"SAME RESULTS every replay as the fill (stock: as the first): {all(r[-1] == 'yes' for r in rows)}")
    if len(results) == 2:
        before, after = results.values()
        for kind in ("gym", "stock"):
            for cache in ("store", "memory"):
                a = median([_rate(r[cache]) for r in before[kind]])
                b = median([_rate(r[cache]) for r in after[kind]])
                print(f"  {kind} {cache}: after/before {b / a:.2f}x")
    gym_store = median([_rate(r["store"]) for r in list(results.values())[-1]["gym"]])
    verdict = "MET" if gym_store >= TARGET_STEPS_PER_SECOND else "NOT MET"
    print(f"TARGET Gymnasium env warm replay (store) >= {TARGET_STEPS_PER_SECOND:.0f} steps/s: {gym_store:.0f} {verdict}")


def report_profile(profiles: dict[str, dict[str, Any]]) -> None:
    """The profiles of each tree, side by side (the last one's cProfile)."""
    names = list(profiles)
    heading("one warm step (memory cache), layer by layer: median ms per step")
    first = profiles[names[0]]
    rows = [[name, *(f"{p['layers'][i][1]:.3f}" for p in profiles.values()), note]
            for i, (name, _, note) in enumerate(first["layers"])]
    print_rows(rows, ["layer", *names, "what"])
    heading("where a warm Gymnasium step's milliseconds go (differences of the medians above)")
    rows = [[name, *(f"{p['split'][i][1]:.3f}" for p in profiles.values())] for i, (name, _) in enumerate(first["split"])]
    print_rows(rows, ["part", *names])
    last = profiles[names[-1]]
    heading(f"cProfile of the client ({names[-1]}) over {last['profiled_steps']} warm Gymnasium steps: own time by package")
    print_rows([[name, f"{ms:.3f}"] for name, ms in last["packages"]], ["package", "ms per step"])
    print("  top functions (own time, ms per step):")
    for name, ms in last["functions"]:
        print(f"    {ms:7.3f}  {name}")


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--episodes", type=int, default=10, help="seeded random episodes (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=20, help="steps per episode (max_episode_steps; default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the benchmark draws and actions (default: %(default)s)")
    parser.add_argument("--benchmarks", default="xla-gpt2-v0:train", help="the env's benchmarks= (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh-process replays per tree (default: %(default)s)")
    parser.add_argument("--store", type=Path, default=None, help="the store to fill and replay from (default: a new temporary file)")
    parser.add_argument("--compare", type=Path, default=None, metavar="TREE", help="also replay with the code of TREE (before a change)")
    parser.add_argument("--no-profile", action="store_true", help="leave out the layer-by-layer profile")
    parser.add_argument("--quick", action="store_true", help="3 episodes of 10 steps, 1 round (< 1 min once the store is filled)")
    parser.add_argument("--role", choices=sorted(ROLES), help=argparse_hidden())
    parser.add_argument("--uris", default="[]", help=argparse_hidden())
    args = parser.parse_args(argv)
    if args.role:
        print(json.dumps(ROLES[args.role](args)))
        return 0
    if args.quick:
        args.episodes, args.steps, args.rounds = 3, 10, 1
    print_header(argv)
    workdir = Path(tempfile.mkdtemp(prefix="xla-gym-bench-warm-"))
    try:
        args.store = (args.store or workdir / "store.sqlite").resolve()
        start = time.perf_counter()
        fill = _run_role("fill", args)
        print(f"fill: {args.episodes} episodes of {args.steps} steps into {args.store} in {time.perf_counter() - start:.0f} s "
              f"(results digest {fill['digest']})")
        trees: dict[str, Path | None] = {"this tree": None}
        if args.compare is not None:
            trees = {f"before ({args.compare})": args.compare.resolve(), "after (this tree)": None}
        results: dict[str, dict[str, list[dict[str, Any]]]] = {name: {"gym": [], "stock": []} for name in trees}
        for _ in range(args.rounds):  # taking turns: the machine's load falls on both alike
            for name, tree in trees.items():
                results[name]["gym"].append(_run_role("gym", args, tree))
                results[name]["stock"].append(_run_role("stock", args, tree, fill["uris"]))
        stock_digest = results[list(trees)[0]]["stock"][0]["store"]["digest"]
        report_replays(results, fill, stock_digest)
        if not args.no_profile:
            report_profile({name: _run_role("profile", args, tree) for name, tree in trees.items()})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
