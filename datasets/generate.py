"""Generate the ``benchmark://xla-<family>-v0/<name>`` suites from the JAX models.

For every configuration of every requested family this script

1. builds the model (``datasets/models/<family>.py``) and lowers it with
   ``jax.jit(fn).lower(*args).compiler_ir("hlo").as_hlo_text()``;
2. normalizes the text (HLO -> StableHLO -> HLO fixpoint, see
   ``datasets/engine.py``), which is exactly what the environment shows;
3. verifies it: the text parses, normalizing it again changes nothing, it
   compiles and executes on CPU, and two executions on the same seeded inputs
   give bit-identical outputs;
4. measures the op count before and after XLA's default pipeline and XLA's
   cost analysis;
5. writes ``<out>/xla-<family>-v0/<name>.hlo.gz`` (gzip, mtime 0, no file
   name inside, so the bytes only depend on the text) and the family's
   ``manifest.json`` (sorted keys, no timestamps: reproducible).

Steps 1-5 for one configuration (all but the manifest) are ``build.process``,
run in a pool of worker processes; ``manifest.py`` writes and summarizes the
manifests; this
module is the driver (progress, merging partial runs, the command line).
Failures are recorded in the manifest's ``failures`` list, never dropped
silently; the exit status is 1 if any configuration failed.

Example::

    .venv/bin/python -m xla_gym_datasets.generate                   # everything
    .venv/bin/python -m xla_gym_datasets.generate --families gpt2 --match 'l2-d64-h4-s32-b2-adam-f32-train'
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from xla_gym_datasets.build import benchmark_uri, process, suite_name
from xla_gym_datasets.manifest import MANIFEST, load_manifest, summarize, write_manifest
from xla_gym_datasets.models import FAMILIES, get_family
from xla_gym_datasets.splits import split


class Progress:
    """A one-line progress bar on stderr (plain lines when stderr is not a tty)."""

    def __init__(self, label: str, total: int, stream=sys.stderr):
        self.label, self.total, self.stream = label, total, stream
        self.done = 0
        self.failed = 0
        self.start = time.time()
        self.tty = stream.isatty()
        self._last_line = 0.0

    def update(self, name: str, ok: bool) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        elapsed = time.time() - self.start
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        line = (
            f"[{self.label}] [{bar}] {self.done}/{self.total} "
            f"{_fmt(elapsed)} elapsed, eta {_fmt(eta)}"
            f"{f', {self.failed} failed' if self.failed else ''}  {name}"
        )
        if self.tty:
            self.stream.write("\r\x1b[K" + line[:160])
            if self.done == self.total:
                self.stream.write("\n")
        elif self.done == self.total or time.time() - self._last_line > 5 or not ok:
            self.stream.write(line + "\n")
            self._last_line = time.time()
        self.stream.flush()


def _fmt(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s"


def run_family(family: str, args, pool) -> dict[str, Any]:
    module = get_family(family)
    configs = module.configs()
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise SystemExit(f"{family}: duplicate configuration names")
    indices = list(range(len(configs)))
    if args.match:
        rx = re.compile(args.match)
        indices = [i for i in indices if rx.search(names[i])]
    if args.limit is not None:
        indices = indices[: args.limit]
    partial = len(indices) != len(configs)

    out = Path(args.out)
    suite = out / suite_name(family)
    suite.mkdir(parents=True, exist_ok=True)
    manifest_path = suite / MANIFEST

    results: dict[str, dict] = {}
    progress = Progress(family, len(indices))
    t0 = time.time()
    futures = {pool.submit(process, family, i, str(out), args.verify): names[i] for i in indices}
    for fut in cf.as_completed(futures):
        name = futures[fut]
        try:
            r = fut.result()
        except BaseException as e:  # a worker died (e.g. an XLA CHECK failure)
            r = {
                "ok": False,
                "failure": {
                    "name": name,
                    "uri": benchmark_uri(family, name),
                    "stage": "worker",
                    "error": f"{type(e).__name__}: {e}"[:2000],
                },
            }
        results[name] = r
        progress.update(name, r["ok"])
    seconds = time.time() - t0
    cpu = sum(r.get("cpu_seconds", 0.0) for r in results.values())
    stages: dict[str, float] = {}
    for r in results.values():
        for k, v in r.get("times", {}).items():
            stages[k] = stages.get(k, 0.0) + v

    # Merge with the existing manifest when only part of the grid was run.
    entries: dict[str, dict] = {}
    failures: dict[str, dict] = {}
    old = load_manifest(manifest_path) if partial else None
    if old:
        valid = set(names)
        for entry in old.get("benchmarks", []):
            if entry["name"] in valid and (suite / entry["file"]).exists():
                entries[entry["name"]] = entry
        for f in old.get("failures", []):
            if f["name"] in valid:
                failures[f["name"]] = f
    for name, r in results.items():
        entries.pop(name, None)
        failures.pop(name, None)
        if r["ok"]:
            entries[name] = r["entry"]
        else:
            failures[name] = r["failure"]
    if not partial:
        # Remove files of benchmarks that are no longer in the grid or failed.
        keep = {e["file"] for e in entries.values()}
        for p in suite.glob("*.hlo.gz"):
            if p.name not in keep:
                p.unlink()
    write_manifest(manifest_path, family, list(entries.values()), list(failures.values()))
    n_ok = sum(1 for r in results.values() if r["ok"])
    print(
        f"[{family}] {n_ok}/{len(results)} generated, {len(results) - n_ok} failed, "
        f"{_fmt(seconds)} ({seconds:.1f} s wall, {cpu:.1f} s cpu in workers); "
        f"manifest: {len(entries)} benchmarks, "
        f"{len(failures)} failures -> {manifest_path}",
        file=sys.stderr,
    )
    if stages:
        print(
            "  worker time by stage: "
            + ", ".join(f"{k} {v:.0f}s" for k, v in sorted(stages.items(), key=lambda kv: -kv[1])),
            file=sys.stderr,
        )
    for f in failures.values():
        if f["name"] in results:
            print(f"  FAILED {f['name']} at {f['stage']}: {f['error'].splitlines()[0]}", file=sys.stderr)
    return {"family": family, "seconds": seconds, "cpu": cpu, "ok": n_ok, "failed": len(results) - n_ok}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xla_gym_datasets.generate",
        description=(
            "Generate the xla-<family>-v0 benchmark suites: lower every model "
            "configuration to HLO, normalize, verify, and write "
            "<out>/xla-<family>-v0/<name>.hlo.gz plus manifest.json."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--families",
        default=",".join(FAMILIES),
        help="comma-separated families to generate, from: " + ", ".join(FAMILIES),
    )
    parser.add_argument(
        "--out",
        default=str(Path(__file__).resolve().parent),
        help="output directory; each family goes to <out>/xla-<family>-v0/",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="generate at most this many configurations per family (in grid order); "
        "a partial run is merged into the existing manifest",
    )
    parser.add_argument(
        "--match",
        default=None,
        help="only configurations whose name matches this regular expression "
        "(merged into the existing manifest)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes (each compiles one configuration at a time)",
    )
    parser.add_argument(
        "--verify",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="execute each compiled module twice on the same seeded inputs, "
        "requiring bit-identical outputs (with --no-verify every module is still "
        "parsed, normalized and compiled once, for the default-pipeline op count)",
    )
    parser.add_argument(
        "--summary",
        action="store_true",
        help="only summarize the existing manifests (graphs per split, op counts, sizes) and exit",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="only print the configuration names, with their split, and exit",
    )
    args = parser.parse_args(argv)
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    for f in families:
        if f not in FAMILIES:
            parser.error(f"unknown family {f!r}; choose from {', '.join(FAMILIES)}")

    if args.summary:
        summarize(Path(args.out), families)
        return 0

    if args.list:
        for f in families:
            for c in get_family(f).configs():
                print(f"{benchmark_uri(f, c.name)}\t{split(f, c)}")
        return 0

    ctx = multiprocessing.get_context("spawn")
    total_t0 = time.time()
    summaries = []
    with cf.ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=ctx) as pool:
        for f in families:
            summaries.append(run_family(f, args, pool))
    total = time.time() - total_t0
    print("\nfamily     generated  failed   wall s  worker cpu s", file=sys.stderr)
    for s in summaries:
        print(
            f"{s['family']:<10} {s['ok']:>9} {s['failed']:>7} {s['seconds']:>8.1f} {s['cpu']:>13.1f}",
            file=sys.stderr,
        )
    cpu = sum(s["cpu"] for s in summaries)
    print(
        f"total: {_fmt(total)} wall ({total:.1f} s) with --jobs {args.jobs}; "
        f"{cpu:.1f} s cpu in workers; load average at end {os.getloadavg()[0]:.2f}",
        file=sys.stderr,
    )
    return 1 if any(s["failed"] for s in summaries) else 0


if __name__ == "__main__":
    sys.exit(main())
