"""How well validation catches miscompiles, how fast, and that it raises no false alarms.

1. Mutants: deliberate single-instruction changes to bundled modules of every
   family (normalized HLO text edited, ``OPERATORS``): an opcode swapped
   (``SWAPS``), a scalar constant perturbed (floats times 1.5, 0 made 1,
   integers plus 1), the operands of a non-commutative op swapped, a
   ``select``'s branches swapped, a reduction's init value changed (0 made 1,
   -inf made 0, ...), a broadcast's dimensions mapped elsewhere (sizes
   permitting), a comparison's direction changed, a slice shifted by one, two
   equal-sized dimensions of a transpose swapped. Each is validated against
   its original through the real worker path (``Engine.validate``, seed 0),
   and with ``--old`` also as validation did before. A mutant that
   XLA rejects (the engine cannot load it, or it does not compile or run) is
   left out; so is one that the engine normalizes back to the original. A
   mutant that validation passes is checked by an *oracle*: the same worker
   request with 8 more draws (seeds 1000-1007) and 2 draws of the plain
   uniform inputs validation used before (seeds 2000-2001). If the oracle
   finds a difference the mutant changes the function and *survived*; if not,
   it counts as *equivalent* (no difference beyond tolerance on 13 draws) and
   is left out of the catch rate. Catch rate = caught / (caught + survivors).
2. False alarms: the committed leaderboard results, replayed pass by pass
   through the engine (a pass that fails leaves the state, as in the
   environment), must validate.
3. Before/after: on one module, the validator before this work (default
   compile options, one uniform draw, the original run twice) and now, side
   by side on the same candidates, in this process.

Progress goes to stderr, figures to stdout.

    .venv/bin/python benchmarks/measure_validation.py           # ~35 min
    .venv/bin/python benchmarks/measure_validation.py --quick   # < 1 min
"""
from __future__ import annotations

import argparse
import csv
import glob
import gzip
import json
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from _common import ROOT, Progress, heading, machine_line, median, percentile
from _mutants import sample_mutants

from xla_service.errors import XlaGymError
from xla_service.passes.engine import Engine

FAMILIES = ("gpt2", "bert", "resnet", "rnn", "vit", "moe")
#: The oracle: (first seed, draws, inputs) of the extra worker requests.
ORACLE = ((1000, 8, "use"), (2000, 2, "uniform"))

# --------------------------------------------------------------------- modules


def module_text(uri_or_name: str) -> tuple[str, str]:
    """(``suite/name``, HLO text) of ``benchmark://xla-x-v0/name`` or ``xla-x-v0/name``."""
    name = uri_or_name.replace("benchmark://", "")
    return name, gzip.open(ROOT / "datasets" / f"{name}.hlo.gz", "rt").read()


def pick_modules(per_family: int, smallest: bool = False) -> list[str]:
    """Per family, the smallest module of each (model, mode, precision) group,
    training steps and inference alternately, ``per_family`` of them; with
    ``smallest``, the smallest modules of the family instead."""
    chosen = []
    for family in FAMILIES:
        groups: dict[tuple[str, str, str], list[Path]] = defaultdict(list)
        for path in (ROOT / "datasets" / f"xla-{family}-v0").glob("*.hlo.gz"):
            name = path.name[: -len(".hlo.gz")]
            model = re.sub(r"\d+$", "", name.split("-")[0])
            mode = "train" if name.endswith("train") else "infer"
            groups[(model, mode, "bf16" if "bf16" in name else "f32")].append(path)
        firsts = sorted((min(g, key=lambda p: p.stat().st_size) for g in groups.values()),
                        key=lambda p: p.stat().st_size)
        # interleave training steps and inference so that a small budget gets both
        trains = [p for p in firsts if p.name.endswith("train.hlo.gz")]
        infers = [p for p in firsts if not p.name.endswith("train.hlo.gz")]
        mixed = [p for pair in zip(trains, infers) for p in pair] + trains[len(infers):] + infers[len(trains):]
        if smallest:
            mixed = sorted(mixed, key=lambda p: p.stat().st_size)
        chosen += [f"xla-{family}-v0/{p.name[:-len('.hlo.gz')]}" for p in mixed[:per_family]]
    return chosen


def results_pairs(pattern: str) -> list[tuple[str, str, str]]:
    """Distinct (benchmark, commandline) pairs of the CSVs matching ``pattern``, with a file each."""
    pairs: dict[tuple[str, str], str] = {}
    for path in sorted(glob.glob(str(ROOT / pattern), recursive=True)):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                pairs.setdefault((row["benchmark"], row["commandline"].strip()), str(Path(path).relative_to(ROOT)))
    return [(b, c, f) for (b, c), f in sorted(pairs.items())]


# ------------------------------------------------------------------ measuring


def timed(call: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    reply = call()
    return reply, time.perf_counter() - start


def run_mutants(engine: Engine, modules: list[str], per_module: int, seed: int, old: bool = False) -> dict[str, Any]:
    todo = [(m, module_text(m)[1]) for m in modules]
    plans = [(m, text, sample_mutants(m, text, per_module, seed)) for m, text in todo]
    progress = Progress("mutants", sum(len(p[2]) for p in plans))
    records: list[dict[str, Any]] = []
    for _, text, mutants in plans:
        original = engine.load(text)
        for mutant in mutants:
            record: dict[str, Any] = {**{k: v for k, v in asdict(mutant).items() if k != "text"}}
            try:
                state = engine.load(mutant.text)
            except ValueError as e:
                record.update(outcome="rejected", why=str(e).splitlines()[0][:200])
                records.append(record)
                progress.step(f"{mutant.operator} rejected")
                continue
            if state.digest == original.digest:
                record.update(outcome="unchanged", why="normalizes to the original")
                records.append(record)
                progress.step(f"{mutant.operator} unchanged")
                continue
            try:
                reply, seconds = timed(lambda: engine.validate(original, state, 0))  # noqa: B023
            except XlaGymError as e:  # XLA crashed compiling or running the mutant
                record.update(outcome="rejected", why=f"{type(e).__name__}: {str(e)[:200]}")
                records.append(record)
                progress.step(f"{mutant.operator} rejected")
                continue
            record.update(seconds=seconds, timing=reply.get("timing", {}), status=reply["status"])
            if reply["status"] == "mismatch":
                record.update(outcome="caught", why=reply["errors"][0][:300])
            elif reply["status"] == "current_failed":
                record.update(outcome="rejected", why=reply["errors"][0][:300])
            elif reply["status"] != "ok":
                record.update(outcome="no verdict", why=f"{reply['status']}: {reply['errors'][:1]}")
            else:
                found = ""
                for first, draws, inputs in ORACLE:
                    extra = engine.request("validate", original.text, state.text, first, draws, inputs)
                    if extra["status"] == "mismatch":
                        found = f"oracle ({inputs}, seeds {first}..{first + draws - 1}): {extra['errors'][0][:300]}"
                        break
                record.update(outcome="survived" if found else "equivalent", why=found or "no difference on 13 draws")
            if old and record["outcome"] in ("caught", "survived"):  # the validator before: one uniform draw
                record["old_status"] = engine.request("validate", original.text, state.text, 0, 1, "uniform")["status"]
            records.append(record)
            progress.step(f"{mutant.operator} {record['outcome']}")
    return {"records": records}


def run_results(engine: Engine, pairs: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    progress = Progress("results", len(pairs))
    records = []
    for benchmark, commandline, source in pairs:
        name, text = module_text(benchmark)
        original = engine.load(text)
        state, failed, engine_errors = original, 0, []
        for pass_name in commandline.split():
            try:
                state = engine.apply(state, pass_name)
            except ValueError:  # the pass failed: a step without effect, as in the environment
                failed += 1
            except XlaGymError as e:  # the engine's own failure, not the pass's: noted
                engine_errors.append(f"{pass_name}: {str(e)[:200]}")
        reply, seconds = timed(lambda: engine.validate(original, state, 0))  # noqa: B023
        records.append({
            "benchmark": benchmark, "commandline": commandline, "source": source, "failed_passes": failed,
            "engine_errors": engine_errors,
            "status": reply["status"], "errors": reply["errors"][:2], "seconds": seconds,
            "timing": reply.get("timing", {}),
        })
        progress.step(f"{name.split('/')[1]} {reply['status']}")
    return records


def before_after(module: str, passes: list[str], candidates: int, engine: Engine) -> dict[str, list[float]]:
    """Validation seconds of the old and the new validator on the same candidates
    (distinct states along ``passes``), alternately, in this process."""
    from xla_service.passes import observe, validation
    from xla_service.passes.compare import compare_outputs

    _, text = module_text(module)
    original = engine.load(text)
    states: list[Any] = []
    state = original
    for name in passes:
        try:
            state = engine.apply(state, name)
        except ValueError:
            continue
        if state.digest not in {s.digest for s in states} and state.digest != original.digest:
            states.append(state)
    states = states[:candidates]

    def old(current: str) -> None:  # the validator before this work, step by step
        computation, executable = observe.compiled(original.text)
        inputs = observe.make_inputs(computation, 0)
        expected = observe.outputs(executable, inputs)
        compare_outputs(expected, observe.outputs(executable, inputs))
        compare_outputs(expected, observe.outputs(observe.compiled(current)[1], inputs))

    def new(current: str) -> None:
        assert validation.validate(original.text, current, 0)["status"] == "ok"

    times: dict[str, list[float]] = {"before": [], "after": []}
    old(original.text)  # both start with the original compiled (the old cache kept executables too)
    new(original.text)
    progress = Progress("before/after", len(states))
    for s in states:
        for label, run in (("before", old), ("after", new)):
            start = time.perf_counter()
            run(s.text)
            times[label].append(time.perf_counter() - start)
        progress.step()
    return times


# ------------------------------------------------------------------- figures


def stats(xs: Sequence[float]) -> str:
    if not xs:
        return "n/a"
    return f"median {median(xs):.2f} s, p95 {percentile(xs, 95):.2f} s, max {max(xs):.2f} s (n={len(xs)})"


def report(mutant_records: list[dict[str, Any]], result_records: list[dict[str, Any]],
           sides: dict[str, list[float]] | None, side_module: str) -> bool:
    outcomes = Counter(r["outcome"] for r in mutant_records)
    caught, survived = outcomes["caught"], outcomes["survived"]
    changing = caught + survived
    heading("Mutants")
    print(f"modules: {len(set(r['module'] for r in mutant_records))}, mutants: {len(mutant_records)}; "
          + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    by_family: dict[str, Counter] = defaultdict(Counter)
    by_operator: dict[str, Counter] = defaultdict(Counter)
    for r in mutant_records:
        by_family[r["module"].split("/")[0]][r["outcome"]] += 1
        by_operator[r["operator"]][r["outcome"]] += 1
    print(f"{'':24} {'caught':>7} {'survived':>8} {'equivalent':>10} {'rejected':>8} {'unchanged':>9}")
    for label, table in (("family", by_family), ("operator", by_operator)):
        for key in sorted(table):
            c = table[key]
            print(f"{label + ' ' + key:24} {c['caught']:>7} {c['survived']:>8} {c['equivalent']:>10} "
                  f"{c['rejected']:>8} {c['unchanged']:>9}")
    rate = f"{100 * caught / changing:.1f}%" if changing else "n/a"
    print(f"CATCH RATE: {rate} ({caught} of {changing} mutants that change the function)")
    judged = [r for r in mutant_records if "old_status" in r]
    if judged:
        old_caught = sum(r["old_status"] == "mismatch" for r in judged)
        print(f"CATCH RATE BEFORE (one draw uniform in [0, 1), as validation drew before): "
              f"{100 * old_caught / len(judged):.1f}% ({old_caught} of {len(judged)})")
    for r in mutant_records:
        if r["outcome"] == "survived":
            print(f"  SURVIVOR {r['module']} line {r['line']} [{r['operator']}] {r['what']}: {r['why']}")
    if outcomes["equivalent"]:
        print("  equivalent (no difference on 13 draws): " + "; ".join(
            f"{r['module'].split('/')[1]} {r['what']}" for r in mutant_records if r["outcome"] == "equivalent"))

    heading("False alarms: committed leaderboard results")
    alarms = [r for r in result_records if r["status"] != "ok"]
    print(f"FALSE ALARMS: {len(alarms)} of {len(result_records)} results "
          f"({len({r['benchmark'] for r in result_records})} benchmarks)")
    for r in alarms:
        print(f"  ALARM {r['benchmark']} [{r['commandline']}] {r['status']}: {r['errors'][:1]}")
    broken = [r for r in result_records if r["engine_errors"]]
    if broken:
        print(f"  {len(broken)} replays met engine errors (not the passes'): "
              + "; ".join(f"{r['benchmark']}: {r['engine_errors'][0]}" for r in broken[:3]))

    heading("Validation time (through the worker, seconds per validation)")
    mutant_times = [r["seconds"] for r in mutant_records if "seconds" in r]
    result_times = [r["seconds"] for r in result_records]
    print(f"VALIDATION TIME mutants: {stats(mutant_times)}")
    print(f"VALIDATION TIME results: {stats(result_times)}")
    timings = [r["timing"] for r in mutant_records + result_records if r.get("timing", {}).get("draws_run")]
    per_draw = [t["execute_s"] / t["draws_run"] for t in timings]
    compile_s = [t["compile_s"] for t in timings]
    original = [t["original_s"] for t in timings if not t["original_cached"]]
    print(f"TIME PER DRAW (candidate execution): {stats(per_draw)}")
    print(f"candidate compile: {stats(compile_s)}; original, when not cached: {stats(original)}; "
          f"original cached in {sum(t['original_cached'] for t in timings)} of {len(timings)}")
    if sides:
        heading(f"Before / after on {side_module} (same candidates, this process)")
        print(f"BEFORE (default options, 1 uniform draw): {stats(sides['before'])}")
        print(f"AFTER  (-O0 backend, 3 draws, cached original): {stats(sides['after'])}")
    return not alarms


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--quick", action="store_true",
                        help="a run under a minute: the smallest module of each family, 3 mutants each, "
                             "the cheapest result, 2 candidates before/after on a 1-layer GPT-2")
    parser.add_argument("--per-family", type=int, default=4,
                        help="modules per family (smallest of each model/mode/precision group)")
    parser.add_argument("--modules", default="",
                        help="comma-separated modules (suite/name) instead of --per-family's choice")
    parser.add_argument("--mutants", type=int, default=25, help="mutants per module (spread over the operators)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the choice of mutants")
    parser.add_argument("--results", default="leaderboard/agents/**/results*-sample4.csv",
                        help="glob (under the repository) of the leaderboard CSVs to replay")
    parser.add_argument("--sample", type=int, default=0,
                        help="replay only the N cheapest distinct (benchmark, commandline) pairs "
                             "(module size x passes); 0: all of them")
    parser.add_argument("--side-module", default="xla-gpt2-v0/gpt2-l3-d64-h2-s32-b2-adam-f32-train",
                        help="module of the before/after comparison")
    parser.add_argument("--side-passes", default="cse algsimp dce reshape-mover transpose-folding "
                        "call-inliner algsimp cse dot_decomposer algsimp dce",
                        help="pass sequence whose distinct states are the before/after candidates")
    parser.add_argument("--side-candidates", type=int, default=8, help="before/after candidates (0: skip)")
    parser.add_argument("--old", action="store_true",
                        help="also validate every mutant that changes the function as validation did "
                             "before (one draw, uniform in [0, 1)) and print that catch rate")
    parser.add_argument("--workers", type=int, default=2, help="engine worker processes")
    parser.add_argument("--out", default="", help="write every record as JSON to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.per_family, args.mutants, args.sample, args.side_candidates = 1, 3, 1, 2
        args.side_passes = "cse algsimp dce"
        args.side_module = "xla-gpt2-v0/gpt2-l1-d64-h2-s32-b2-f32-infer"
    modules = [m.strip() for m in args.modules.split(",") if m.strip()] or pick_modules(args.per_family, args.quick)
    pairs = results_pairs(args.results)
    if args.sample:
        def cost(pair: tuple[str, str, str]) -> int:
            size = (ROOT / "datasets" / f"{pair[0].replace('benchmark://', '')}.hlo.gz").stat().st_size
            return size * max(len(pair[1].split()), 1)
        pairs = sorted(pairs, key=cost)[: args.sample]
    print(machine_line())
    print(f"modules: {', '.join(modules)}")
    print(f"mutants per module: {args.mutants}, seed {args.seed}; results: {len(pairs)} distinct pairs "
          f"of {args.results}; validation seed 0 (draws: seeds 0, 1, 2)")
    sys.stdout.flush()
    start = time.perf_counter()
    engine = Engine(workers=args.workers)
    try:
        mutants = run_mutants(engine, modules, args.mutants, args.seed, args.old)["records"]
        results = run_results(engine, pairs)
        sides = None
        if args.side_candidates:
            sides = before_after(args.side_module, args.side_passes.split(), args.side_candidates, engine)
    finally:
        engine.close()
    ok = report(mutants, results, sides, args.side_module)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps({"mutants": mutants, "results": results, "before_after": sides}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
