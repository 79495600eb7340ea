"""The figures of the benchmark generator ``generator://xla-random-v0`` (datasets/README.md).

1. Validity: every seed of ``--first`` .. ``--first + --seeds - 1`` generated
   through the engine (``Engine.generate``: a worker, as the service does),
   loaded, run through XLA's default pipeline, and validated (both executed on
   seeded inputs and compared, ``Engine.validate``); every failure is listed
   with its stage and XLA's or JAX's reason, and so are re-drawn draws.
2. Generation time in this (warm) process: a fresh seed (``--timing-seeds``
   of them, a cache of their own) and the same seed from the disk cache.
3. Variety beside the six bundled families: opcodes covered, the share of
   structurally distinct modules (``xla_gym_datasets.generator.structure``),
   op count distributions, which blocks, modes and precisions were drawn.
4. Headroom: N0 / N_default (initial over XLA's default op count) per seed,
   and what ``Greedy(lazy=True)`` reaches through the stock client on the
   first ``--greedy-seeds`` valid seeds.

Progress goes to stderr, figures to stdout. ``--records FILE`` keeps each
seed's result (JSON lines) and skips seeds already there, so a long run can
be resumed.

    .venv/bin/python benchmarks/measure_generator.py            # the full run: hours on 2 cores
    .venv/bin/python benchmarks/measure_generator.py --quick    # < 60 s
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Progress, heading, machine_line  # noqa: E402
from xla_gym_datasets.generator.structure import opcode_histogram, structural_hash  # noqa: E402

from xla_service.catalog.generator import DEFAULT_OPS, Recipe, parse_ops  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(int(q / 100 * len(xs)), len(xs) - 1)] if xs else float("nan")


def _dist(xs: list[float], fmt: str = "{:.0f}") -> str:
    if not xs:
        return "n/a"
    parts = [("min", min(xs)), ("p10", _pct(xs, 10)), ("median", statistics.median(xs)),
             ("p90", _pct(xs, 90)), ("max", max(xs))]
    return ", ".join(f"{k} {fmt.format(v)}" for k, v in parts) + f" (n={len(xs)})"


def _records(path: str | None, kind: str) -> dict[int, dict[str, Any]]:
    if not path or not os.path.exists(path):
        return {}
    found = {}
    for line in Path(path).read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == kind:
            found[record["seed"]] = record
    return found


def _append(path: str | None, record: dict[str, Any]) -> None:
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")


# ------------------------------------------------------------------ 1. validity


def check_seed(engine: Any, recipe: Recipe) -> dict[str, Any]:
    record: dict[str, Any] = {"kind": "seed", "seed": recipe.seed, "valid": False}
    stage, started = "generate", time.perf_counter()
    try:
        text, meta_json = engine.generate(recipe.text)
        meta = json.loads(meta_json)
        record.update(generate_s=time.perf_counter() - started, rejected=meta["rejected"],
                      mode=meta["program"]["mode"], precision=meta["program"]["precision"],
                      stem=meta["program"]["stem"]["block"], head=meta["program"]["head"]["block"],
                      blocks=[b["block"] for b in meta["program"]["blocks"]],
                      opcodes=dict(opcode_histogram(text)), structure=structural_hash(text))
        stage = "load"
        state = engine.load(text)
        record["initial"] = state.op_count
        stage = "default pipeline"
        default = engine.default_pipeline(state)
        record["default"] = default.op_count
        stage = "validate"
        verdict = engine.validate(state, default, 0)
        record.update(status=verdict["status"], valid=verdict["status"] == "ok")
        if not record["valid"]:
            record["error"] = f"validation {verdict['status']}: {'; '.join(verdict.get('errors', []))[:500]}"
    except Exception as e:  # noqa: BLE001 - every failure is a figure
        record["error"] = f"{stage}: {type(e).__name__}: {' '.join(str(e).split())[:500]}"
    record["seconds"] = time.perf_counter() - started
    return record


def sweep(seeds: list[int], ops: tuple[int, int], workers: int, path: str | None) -> list[dict[str, Any]]:
    from xla_service.passes.engine import Engine

    done = _records(path, "seed")
    todo = [s for s in seeds if s not in done]
    progress = Progress("validity", len(todo))
    engine = Engine(workers=workers)
    try:
        with cf.ThreadPoolExecutor(workers) as pool:
            futures = [pool.submit(check_seed, engine, Recipe(s, ops)) for s in todo]
            for future in cf.as_completed(futures):
                record = future.result()
                _append(path, record)
                done[record["seed"]] = record
                progress.step(f"seed {record['seed']}: {'ok' if record['valid'] else 'FAILED'}")
    finally:
        engine.close()
    return [done[s] for s in seeds]


def report_validity(records: list[dict[str, Any]]) -> None:
    heading(f"Validity: {len(records)} consecutive seeds")
    valid = [r for r in records if r["valid"]]
    print(f"valid (generated, loaded, XLA's default pipeline, executed and validated): "
          f"{len(valid)} of {len(records)} = {100 * len(valid) / max(len(records), 1):.2f}%")
    for r in records:
        if not r["valid"]:
            print(f"  FAILED seed {r['seed']}: {r.get('error')}")
    redrawn = [r for r in records if r.get("rejected")]
    print(f"seeds served by a re-draw: {len(redrawn)}")
    reasons = Counter(why.split(":")[0] for r in redrawn for _, why in r["rejected"])
    for why, n in reasons.most_common():
        print(f"  {n:4d} draws rejected: {why}")


# ---------------------------------------------------------------- 2. timing


def timing(seeds: list[int], ops: tuple[int, int]) -> None:
    from xla_gym_datasets.generator import generate

    heading(f"Generation time in a warm process ({len(seeds)} fresh seeds, then each from the disk cache)")
    with tempfile.TemporaryDirectory(prefix="xla-gym-generated-") as folder:
        os.environ["XLA_GYM_GENERATED"] = folder
        generate(Recipe(2**32 - 1, ops))  # warm-up: imports, jax's caches
        fresh, cached = [], []
        progress = Progress("timing", len(seeds))
        for seed in seeds:
            started = time.perf_counter()
            generate(Recipe(seed, ops))
            fresh.append(time.perf_counter() - started)
            started = time.perf_counter()
            generate(Recipe(seed, ops))
            cached.append(time.perf_counter() - started)
            progress.step()
    print(f"fresh seed (plan, lower, XLA parse and normalize, cache write): median {statistics.median(fresh):.3f} s, "
          f"p95 {_pct(fresh, 95):.3f} s")
    print(f"from the disk cache: median {1000 * statistics.median(cached):.1f} ms, p95 {1000 * _pct(cached, 95):.1f} ms")


# ---------------------------------------------------------------- 3. variety


def families(limit: int = 0) -> dict[str, dict[str, Any]]:
    """Opcodes, structures, op counts of the bundled suites (``limit`` > 0: the first of each)."""
    out: dict[str, dict[str, Any]] = {}
    for manifest in sorted(ROOT.glob("datasets/xla-*-v0/manifest.json")):
        entries = json.loads(manifest.read_text())["benchmarks"][: limit or None]
        opcodes: set[str] = set()
        structures = set()
        for e in entries:
            text = gzip.decompress((manifest.parent / e["file"]).read_bytes()).decode()
            opcodes |= set(opcode_histogram(text))
            structures.add(structural_hash(text))
        out[manifest.parent.name] = {
            "opcodes": opcodes, "structures": len(structures), "n": len(entries),
            "initial": [e["initial_op_count"] for e in entries],
            "ratio": [e["initial_op_count"] / max(e["default_op_count"], 1) for e in entries],
        }
    return out


def report_variety(records: list[dict[str, Any]], fams: dict[str, dict[str, Any]]) -> None:
    made = [r for r in records if "opcodes" in r]
    heading(f"Variety: {len(made)} generated modules beside the six families ({sum(f['n'] for f in fams.values())} modules)")
    generated = set().union(*(set(r["opcodes"]) for r in made)) if made else set()
    family_ops = set().union(*(f["opcodes"] for f in fams.values()))
    print(f"opcodes: generated {len(generated)}, families {len(family_ops)}")
    print(f"  families' opcodes the generator never emits: {sorted(family_ops - generated) or 'none'}")
    new = sorted(generated - family_ops)
    print(f"  opcodes only the generator emits ({len(new)}): {' '.join(new)}")
    structures = {r["structure"] for r in made}
    print(f"structurally distinct: {len(structures)} of {len(made)} = {100 * len(structures) / max(len(made), 1):.1f}%"
          f" (families: {sum(f['structures'] for f in fams.values())} of {sum(f['n'] for f in fams.values())})")
    print(f"op count (as loaded), generated: {_dist([r['initial'] for r in made if 'initial' in r])}")
    for name, f in fams.items():
        print(f"  {name}: {_dist(f['initial'])}")
    for key in ("mode", "precision", "stem", "head"):
        print(f"{key}: " + ", ".join(f"{k} {v}" for k, v in Counter(r[key] for r in made).most_common()))
    blocks = Counter(b for r in made for b in r["blocks"])
    print(f"body blocks ({sum(blocks.values())}, {statistics.mean(len(r['blocks']) for r in made):.1f} per module): "
          + ", ".join(f"{k} {v}" for k, v in blocks.most_common()) if made else "body blocks: none")


# ---------------------------------------------------------------- 4. headroom


def greedy(seeds: list[int], ops: tuple[int, int], max_steps: int, path: str | None) -> list[dict[str, Any]]:
    import compiler_gym

    from leaderboard.agents.greedy.policy import Greedy

    done = _records(path, "greedy")
    todo = [s for s in seeds if s not in done]
    progress = Progress("greedy", len(todo))
    if todo:
        with compiler_gym.make("xla-v0") as env:
            for seed in todo:
                started = time.perf_counter()
                env.reset(benchmark=Recipe(seed, ops).uri)
                record = {"kind": "greedy", "seed": seed, "initial": int(env.observation["OpCountInitial"]),
                          "default": int(env.observation["OpCountDefault"])}
                Greedy(max_steps=max_steps, lazy=True)(env)
                record.update(final=int(env.observation["OpCount"]), steps=len(env.actions),
                              seconds=time.perf_counter() - started)
                _append(path, record)
                done[seed] = record
                progress.step(f"seed {seed}: {record['initial']} -> {record['final']} (default {record['default']})")
    return [done[s] for s in seeds]


def report_headroom(records: list[dict[str, Any]], runs: list[dict[str, Any]], fams: dict[str, Any]) -> None:
    heading("Headroom")
    ratio = [r["initial"] / max(r["default"], 1) for r in records if "default" in r]
    print(f"N0 / N_default, generated: {_dist(ratio, '{:.3f}')}; "
          f"default lowers the count on {sum(x > 1 for x in ratio)} of {len(ratio)}")
    for name, f in fams.items():
        print(f"  {name}: {_dist(f['ratio'], '{:.3f}')}")
    if not runs:
        return
    print(f"Greedy(lazy=True) on {len(runs)} seeds, through compiler_gym.make('xla-v0'):")
    print(f"  final / N_default: {_dist([r['final'] / max(r['default'], 1) for r in runs], '{:.3f}')}")
    print(f"  final / N0: {_dist([r['final'] / max(r['initial'], 1) for r in runs], '{:.3f}')}")
    print(f"  greedy below XLA's default on {sum(r['final'] < r['default'] for r in runs)}, equal on "
          f"{sum(r['final'] == r['default'] for r in runs)}, above on {sum(r['final'] > r['default'] for r in runs)}; "
          f"steps {_dist([r['steps'] for r in runs])}; seconds per seed {_dist([r['seconds'] for r in runs])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--seeds", type=int, default=1000, help="consecutive seeds of the validity and variety sweep")
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--ops", default=f"{DEFAULT_OPS[0]}-{DEFAULT_OPS[1]}", help="op count range MIN-MAX of the modules")
    parser.add_argument("--workers", type=int, default=2, help="engine worker processes (and threads) of the sweep")
    parser.add_argument("--timing-seeds", type=int, default=100, help="fresh seeds timed in this process (0: skip)")
    parser.add_argument("--greedy-seeds", type=int, default=1000,
                        help="valid seeds (the first ones) that Greedy(lazy=True) runs on (0: skip)")
    parser.add_argument("--greedy-max-steps", type=int, default=50, help="Greedy's max_steps")
    parser.add_argument("--cache", default="", help="the generator's disk cache for the sweep "
                        "(default: a new temporary folder, so every seed is generated)")
    parser.add_argument("--records", default="", help="JSON lines file of per-seed results, resumed if it exists")
    parser.add_argument("--quick", action="store_true", help="a smoke run under 60 s: 8 seeds of 50-200 ops, "
                        "4 timed, greedy on 1 seed for 3 steps, 5 modules of each family")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.ops, args.timing_seeds, args.greedy_seeds, args.greedy_max_steps = 8, "50-200", 4, 1, 3
    ops = parse_ops(args.ops)
    os.environ.setdefault("XLA_GYM_STORE", "off")
    cache = args.cache or tempfile.mkdtemp(prefix="xla-gym-generated-sweep-")
    os.environ["XLA_GYM_GENERATED"] = cache
    print(machine_line())
    print(f"command: {' '.join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])}")
    seeds = list(range(args.first, args.first + args.seeds))
    started = time.perf_counter()
    records = sweep(seeds, ops, args.workers, args.records or None)
    report_validity(records)
    fams = families(5 if args.quick else 0)
    report_variety(records, fams)
    valid = [r["seed"] for r in records if r["valid"]][: args.greedy_seeds]
    runs = greedy(valid, ops, args.greedy_max_steps, args.records or None) if valid else []
    report_headroom(records, runs, fams)
    if args.timing_seeds > 0:
        timing(seeds[: args.timing_seeds], ops)
    print(f"\nwall time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
