"""Prove that the engine's results do not change: byte-identical states on fixed pass sequences.

Runs, through the pass engine (its worker processes, real XLA), on each benchmark:
the load (normalized input), XLA's default pipeline, a fixed mixed walk of
passes, and every one of the catalog's passes on several states of that walk
(a fan-out). Every outcome is recorded as the SHA-256 of the resulting
normalized HLO text and its op count, or the error type if XLA failed.

``--record`` writes them to ``benchmarks/reference_results.json`` (done once,
with the code before the speed-ups); without it, the run is compared with that
file and any difference is printed (exit status 1). Results depend only on the
input, the pass and jaxlib, so they must match exactly.

Op counts also depend on the op count rule (``schema.OP_COUNT_RULE``), which
the reference records. Under another rule only the digests are compared;
``--update-counts`` then rewrites the reference's op counts for the current
rule, provided that every digest still matches (the states are unchanged).
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _common import (
    Progress,
    add_benchmarks_flag,
    benchmark_names,
    hlo_bytes,
    hlo_text,
    mixed_sequence,
    print_header,
    script_parser,
)

from xla_service.catalog.passes import PASS_NAMES
from xla_service.catalog.schema import OP_COUNT_RULE
from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import Engine

REFERENCE = Path(__file__).resolve().parent / "reference_results.json"


def _outcome(engine: Engine, state: Analysis, name: str) -> tuple[Analysis | None, str]:
    try:
        result = engine.apply(state, name)
    except ValueError as e:  # PassCrashedError and friends: deterministic XLA failures
        return None, f"error:{type(e).__name__}"
    return result, f"{result.digest}:{result.op_count}"


def run_benchmark(
    engine: Engine, threads: ThreadPoolExecutor, name: str, walk_length: int, fanout_states: int
) -> dict[str, Any]:
    state = engine.load(hlo_text(name))
    default = engine.default_pipeline(state)
    record: dict[str, Any] = {
        "input_sha256": hashlib.sha256(hlo_bytes(name)).hexdigest(),
        "initial": f"{state.digest}:{state.op_count}",
        "default": f"{default.digest}:{default.op_count}",
    }
    sequence = mixed_sequence(walk_length, seed=sum(map(ord, name)))
    fanout_at = {round(i * walk_length / max(fanout_states - 1, 1)) for i in range(fanout_states)}
    walk: list[list[str]] = []
    fanout: dict[str, dict[str, str]] = {}
    progress = Progress(name, walk_length + len(fanout_at) * len(PASS_NAMES))
    for i in range(walk_length + 1):
        if i in fanout_at:
            outcomes = threads.map(lambda p, s=state: _outcome(engine, s, p)[1], PASS_NAMES)
            fanout[str(i)] = dict(zip(PASS_NAMES, outcomes))
            for _ in PASS_NAMES:
                progress.step("fan-out")
        if i == walk_length:
            break
        result, outcome = _outcome(engine, state, sequence[i])
        walk.append([sequence[i], outcome])
        state = result or state
        progress.step(sequence[i])
    record["walk"] = walk
    record["fanout"] = fanout
    return record


def _same(expected: str, actual: str, counts: bool) -> bool:
    """Outcomes ``digest:count`` (or ``error:...``) agree: digests always, counts if asked."""
    if counts or expected.startswith("error:") or actual.startswith("error:"):
        return expected == actual
    return expected.split(":")[0] == actual.split(":")[0]


def compare(expected: dict[str, Any], actual: dict[str, Any], name: str, counts: bool = True) -> list[str]:
    problems = []
    if expected["input_sha256"] != actual["input_sha256"]:
        return [f"{name}: the input file changed; re-record the reference"]
    for key in ("initial", "default"):
        if not _same(expected[key], actual[key], counts):
            problems.append(f"{name} {key}: expected {expected[key]}, got {actual[key]}")
    for i, (e, a) in enumerate(zip(expected["walk"], actual["walk"])):
        if e[0] != a[0] or not _same(e[1], a[1], counts):
            problems.append(f"{name} walk step {i} ({e[0]}): expected {e[1]}, got {a[1]}")
            break  # later steps start from a different state
    if len(expected["walk"]) != len(actual["walk"]):
        problems.append(f"{name}: walk lengths differ; use the recorded --walk/--fanout")
    for at, passes in expected["fanout"].items():
        got = actual["fanout"].get(at, {})
        for p, outcome in passes.items():
            if p in got and not _same(outcome, got[p], counts):
                problems.append(f"{name} fan-out at step {at}, {p}: expected {outcome}, got {got[p]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_benchmarks_flag(parser)
    parser.add_argument("--walk", type=int, default=40, help="passes in each fixed mixed walk (default: %(default)s)")
    parser.add_argument("--fanout", type=int, default=3, help="states of the walk (first, ..., last) on which every pass is run (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2, help="engine worker processes (default: %(default)s)")
    parser.add_argument("--record", action="store_true", help=f"write the outcomes to {REFERENCE.name} instead of comparing")
    parser.add_argument(
        "--update-counts",
        action="store_true",
        help="if every state digest matches the reference, rewrite its op counts for the current "
        "op count rule (after a change of the rule)",
    )
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="reference file (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="small and gpt2, a 12-pass walk, fan-out on the first state only (< 60 s)")
    args = parser.parse_args(argv)
    if args.quick:
        args.benchmarks, args.walk, args.fanout = "small,gpt2", 12, 1
    names = benchmark_names(args.benchmarks)
    print_header(argv)
    engine = Engine(workers=args.workers)
    # One long-lived pool of threads: workers replaced from a thread must outlive it.
    threads = ThreadPoolExecutor(max_workers=args.workers)
    start = time.perf_counter()
    try:
        results = {n: run_benchmark(engine, threads, n, args.walk, args.fanout) for n in names}
    finally:
        replaced = engine.workers_replaced
        engine.close()
        threads.shutdown()
    steps = sum(len(r["walk"]) + sum(len(f) for f in r["fanout"].values()) for r in results.values())
    print(f"{steps} pass outcomes on {names} in {time.perf_counter() - start:.0f} s; {replaced} workers replaced")
    if args.record:
        _write(args.reference, {"walk": args.walk, "fanout": args.fanout, "op_count_rule": OP_COUNT_RULE, "results": results})
        print(f"recorded {args.reference}")
        return 0
    reference = json.loads(args.reference.read_text())
    rule = reference.get("op_count_rule", 1)
    counts = rule == OP_COUNT_RULE and not args.update_counts
    if rule != OP_COUNT_RULE:
        print(f"the reference counts ops under rule {rule}, this code under rule {OP_COUNT_RULE}: digests compared")
    problems: list[str] = []
    compared = 0
    for n in names:
        if n not in reference["results"]:
            problems.append(f"{n}: not in the reference")
            continue
        if args.walk != reference["walk"] or args.fanout != reference["fanout"]:
            # Compare the common prefix of the walk and the fan-outs at the same steps.
            reference["results"][n]["walk"] = reference["results"][n]["walk"][: args.walk]
            results[n]["walk"] = results[n]["walk"][: len(reference["results"][n]["walk"])]
        problems += compare(reference["results"][n], results[n], n, counts)
        compared += len(results[n]["walk"]) + sum(
            len(f) for at, f in results[n]["fanout"].items() if at in reference["results"][n]["fanout"]
        ) + 2
    for p in problems:
        print("MISMATCH", p)
    if problems:
        print(f"RESULT: {len(problems)} differences from {args.reference.name}")
        return 1
    what = "state digests and op counts" if counts else "state digests"
    print(f"RESULT: identical: {compared} outcomes ({what}) match {args.reference.name}")
    if args.update_counts:
        if set(names) != set(reference["results"]) or args.walk != reference["walk"] or args.fanout != reference["fanout"]:
            print("--update-counts needs the full recorded run (default --benchmarks, --walk, --fanout)")
            return 1
        _write(args.reference, {**reference, "op_count_rule": OP_COUNT_RULE, "results": results})
        print(f"op counts of {args.reference.name} rewritten under rule {OP_COUNT_RULE}")
    return 0


def _write(path: Path, content: dict[str, Any]) -> None:
    path.write_text(json.dumps(content, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
