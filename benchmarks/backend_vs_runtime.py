"""Does the estimated time rank (module, pass order) pairs as measured runtime does?

Draws modules from every bundled family (train and test splits), the held-out
families and the generator; for each, its states as loaded, after XLA's
default pipeline and after random pass orders (seeded), each a distinct
module. Every pair is compiled as ``Runtime`` compiles it (``--pipelines``),
its ``estimated_seconds`` read as ``BackendCost`` computes it
(``passes/roofline.py``, the fixed ``catalog.backend.ROOFLINE``), and its
runtime measured in this process (``--clock``: the process's CPU seconds by
default, which other jobs on the machine do not inflate; wall seconds are
recorded too), a module at a time, its pairs interleaved: rounds visit
each of its pairs in a new random order, ``--reps`` executions each, until every pair's median is
known to within ``--precision`` (a 95% interval from the order statistics)
or ``--max-rounds`` pass. Then, per pipeline: Spearman's rank correlation of
estimate and runtime, overall and per family; the same within each module
(orders of one module only, the harder question); the same for XLA's
``bytes accessed``, ``flops`` and the kernel count alone; and the roofline's
constants fitted to this machine on the train-split pairs (least squares in
log space), scored on the other pairs. Writes every pair to ``--out`` (JSON).
"""
from __future__ import annotations

import gzip
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
from _common import Progress, heading, print_header, print_rows, script_parser
from scipy import optimize, stats

from xla_service.catalog.backend import ROOFLINE, Roofline
from xla_service.catalog.generator import Recipe
from xla_service.catalog.passes import PASS_NAMES
from xla_service.env.datasets import datasets_root, split_benchmark_uris
from xla_service.passes.engine import Engine
from xla_service.passes.roofline import Kernel, estimate, kernels
from xla_service.store import open_store

FAMILIES = ("gpt2", "bert", "resnet", "rnn", "vit", "moe", "unet", "ssm")
HELD_OUT = ("unet", "ssm")


@dataclass
class Pair:
    family: str
    module: str
    split: str
    order: list[str]
    pipeline: str
    estimate: float = 0.0
    bytes_accessed: float = 0.0
    flops: float = 0.0
    kernels: int = 0
    #: Wall seconds per execution.
    wall: list[float] = field(default_factory=list)
    #: The process's CPU seconds per execution (not counting other processes' time on the CPU).
    cpu: list[float] = field(default_factory=list)
    clock: str = "cpu"

    @property
    def times(self) -> list[float]:
        return self.cpu if self.clock == "cpu" else self.wall

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    def interval(self) -> tuple[float, float]:
        """A 95% interval of the median from the order statistics of the measurements."""
        x, n = sorted(self.times), len(self.times)
        half = 1.96 * math.sqrt(n) / 2
        lo, hi = max(int(n / 2 - half), 0), min(int(math.ceil(n / 2 + half)), n - 1)
        return x[lo], x[hi]

    def precise(self, precision: float) -> bool:
        lo, hi = self.interval()
        return len(self.times) >= 10 and (hi - lo) / 2 <= precision * self.median


def _modules(per_family: int, generator: int, seed: int) -> list[tuple[str, str, str, str]]:
    """(family, name, split, HLO-or-recipe) of the drawn modules."""
    rng = random.Random(seed)
    chosen = []
    for family in FAMILIES:
        held_out = family in HELD_OUT
        for split in ("heldout",) if held_out else ("train", "test"):
            uris = sorted(split_benchmark_uris(split, [f"xla-{family}-v0"]))
            count = per_family if held_out else per_family // 2
            for uri in rng.sample(uris, min(count, len(uris))):
                name = uri.rsplit("/", 1)[1]
                path = datasets_root() / f"xla-{family}-v0" / f"{name}.hlo.gz"
                chosen.append((family, name, split, gzip.decompress(path.read_bytes()).decode()))
    for s in rng.sample(range(10_000), generator):
        chosen.append(("generator", str(s), "generator", Recipe(seed=s).text))
    return chosen


def _states(engine: Engine, text: str, orders: int, rng: random.Random) -> list[tuple[list[str], str]]:
    """(order, module text) of distinct states: as loaded, XLA's default, random orders."""
    initial = engine.load(text)
    found: dict[str, tuple[list[str], str]] = {initial.digest: ([], initial.text)}
    default = engine.default_pipeline(initial)
    found.setdefault(default.digest, (["<default>"], default.text))
    for _ in range(orders):
        order = [rng.choice(PASS_NAMES) for _ in range(rng.randint(3, 15))]
        state = initial
        for name in order:
            try:
                state = engine.apply(state, name)
            except ValueError:
                pass
        found.setdefault(state.digest, (order, state.text))
    return list(found.values())


def _measure(pairs: list[Pair], runs: dict[int, tuple], reps: int, rounds: tuple[int, int], precision: float,
             first: int) -> None:
    """Measure ``pairs[first:]`` (whose executables are in ``runs``) in interleaved rounds."""
    from xla_service.passes import observe

    rng = random.Random(first)
    order = list(range(first, len(pairs)))
    for r in range(rounds[1]):
        rng.shuffle(order)
        todo = [i for i in order if r < rounds[0] or not pairs[i].precise(precision)]
        if not todo:
            break
        for i in todo:
            executable, inputs = runs[i]
            observe.execute(executable, inputs)  # warm-up
            for _ in range(reps):
                _, wall, cpu = observe.execute(executable, inputs)
                pairs[i].wall.append(wall)
                pairs[i].cpu.append(cpu)


def _spearman(a: Sequence[float], b: Sequence[float]) -> float:
    return float(stats.spearmanr(a, b).statistic) if len(a) >= 3 and len(set(a)) > 1 and len(set(b)) > 1 else float("nan")


def _interval(a: Sequence[float], b: Sequence[float]) -> str:
    """Spearman's rho with a 95% interval (Fisher's z, standard error sqrt(1.06 / (n - 3)): Fieller et al. 1957)."""
    rho = _spearman(a, b)
    if math.isnan(rho) or len(a) < 5:
        return f"{rho:.3f}"
    half = 1.96 * math.sqrt(1.06 / (len(a) - 3))
    z = math.atanh(min(max(rho, -0.999999), 0.999999))
    return f"{rho:.3f} [{math.tanh(z - half):.2f}, {math.tanh(z + half):.2f}]"


def _fit(train: list[tuple[list[Kernel], float]]) -> Roofline:
    """The roofline constants that best predict log runtime on ``train``."""
    def loss(logs: np.ndarray) -> float:
        roofline = Roofline(*np.exp(logs))
        return float(np.mean([(math.log(estimate(k, roofline)) - math.log(t)) ** 2 for k, t in train]))

    start = np.log([ROOFLINE.overhead, ROOFLINE.flops_per_second, ROOFLINE.transcendentals_per_second, ROOFLINE.bytes_per_second])
    return Roofline(*np.exp(optimize.minimize(loss, start, method="Nelder-Mead", options={"maxiter": 2000}).x))


def main(argv: Sequence[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--per-family", type=int, default=6, help="modules per family (half train, half test; the held-out families all from heldout) (default: %(default)s)")
    parser.add_argument("--generator", type=int, default=6, help="generator programs (seeds drawn from 0-9999) (default: %(default)s)")
    parser.add_argument("--orders", type=int, default=4, help="random pass orders per module, 3-15 passes each (default: %(default)s)")
    parser.add_argument("--pipelines", default="full,agent", help="compile pipelines, comma-separated (default: %(default)s)")
    parser.add_argument("--reps", type=int, default=3, help="executions per pair per round (default: %(default)s)")
    parser.add_argument("--min-rounds", type=int, default=5, help="rounds every pair is measured in (default: %(default)s)")
    parser.add_argument("--max-rounds", type=int, default=40, help="most rounds (default: %(default)s)")
    parser.add_argument("--precision", type=float, default=0.05, help="target half-width of each median's 95%% interval, relative (default: %(default)s)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="the runtime compared and made precise: the process's CPU seconds (robust to other jobs on the machine) or wall seconds; both are written (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the module and order draws (default: %(default)s)")
    parser.add_argument("--store", default="default", help="experience store for the steps: a path, default or off (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path("backend_vs_runtime.json"), help="where every pair goes (default: %(default)s)")
    parser.add_argument("--report", type=Path, default=None, help="only print the report of a JSON this script wrote (without the roofline fit, which needs the modules) (default: %(default)s)")
    args = parser.parse_args(argv)
    print_header(argv)
    if args.report:
        fields = {f for f in Pair.__dataclass_fields__}
        saved = [Pair(**{k: v for k, v in row.items() if k in fields}) for row in json.loads(args.report.read_text())]
        report(saved, {}, args.precision)
        return 0
    from xla_service.passes import observe
    from xla_service.passes.backend import optimized_text

    engine = Engine(workers=1, backing=open_store(args.store))
    rng = random.Random(args.seed)
    pairs: list[Pair] = []
    runs: dict[int, tuple] = {}
    found: dict[int, list[Kernel]] = {}
    modules = _modules(args.per_family, args.generator, args.seed)
    progress = Progress("modules", len(modules))
    started = time.perf_counter()
    try:
        for family, name, split, text in modules:
            if family == "generator":
                text = engine.generate(text)[0]
            first = len(pairs)
            for order, state in _states(engine, text, args.orders, rng):
                for pipeline in args.pipelines.split(","):
                    try:
                        computation, executable = observe.compiled(state, observe.mode_of(pipeline))
                    except ValueError:
                        continue
                    pair = Pair(family, name, split, order, pipeline, clock=args.clock)
                    found[len(pairs)] = kernels(optimized_text(executable))
                    pair.estimate = estimate(found[len(pairs)], ROOFLINE)
                    analysis = executable.cost_analysis()
                    pair.bytes_accessed, pair.flops = analysis.get("bytes accessed", 0.0), analysis.get("flops", 0.0)
                    pair.kernels = len(found[len(pairs)])
                    runs[len(pairs)] = (executable, observe.make_inputs(computation, 0))
                    pairs.append(pair)
            # A module's pairs are measured together, then their executables freed: each holds JIT
            # code mappings, and a process holding hundreds runs out of them (LLVM "Cannot allocate memory").
            _measure(pairs, runs, args.reps, (args.min_rounds, args.max_rounds), args.precision, first)
            runs.clear()
            _write(pairs, args.out)
            progress.step(f"{family}/{name}: {len(pairs)} pairs")
    finally:
        engine.close()
    print(f"{len(modules)} modules, {len(pairs)} pairs, measured in {time.perf_counter() - started:.0f} s", flush=True)
    report(pairs, found, args.precision)
    print(f"\nwrote {args.out}")
    return 0


def _write(pairs: list[Pair], path: Path) -> None:
    rows = [{**asdict(p), "median": p.median, "interval": p.interval(), "wall_median": float(np.median(p.wall))} for p in pairs]
    path.write_text(json.dumps(rows, indent=0) + "\n")


def report(pairs: list[Pair], found: dict[int, list[Kernel]], precision: float) -> None:
    precise = sum(p.precise(precision) for p in pairs)
    print(f"{precise} of {len(pairs)} medians known to within {precision:.0%} (95% interval)")
    for pipeline in sorted({p.pipeline for p in pairs}):
        chosen = [i for i, p in enumerate(pairs) if p.pipeline == pipeline]
        heading(f"pipeline {pipeline}: {len(chosen)} pairs, {len({(pairs[i].family, pairs[i].module) for i in chosen})} modules")
        rows = []
        for family in (*FAMILIES, "generator", "all"):
            sel = [i for i in chosen if family in ("all", pairs[i].family)]
            if not sel:
                continue
            runtime = [pairs[i].median for i in sel]
            wall = [float(np.median(pairs[i].wall)) for i in sel]
            estimates = [pairs[i].estimate for i in sel]
            rows.append((family, len(sel), _interval(estimates, runtime),
                         *(f"{_spearman([getattr(pairs[i], a) for i in sel], runtime):.3f}"
                           for a in ("bytes_accessed", "flops", "kernels")),
                         f"{_spearman([pairs[i].estimate for i in sel], wall):.3f}"))
        clock = pairs[chosen[0]].clock
        print(f"Spearman's rank correlation with the measured runtime ({clock} seconds; last column: the estimate against wall seconds)")
        print_rows(rows, ("family", "pairs", "estimate [95% interval]", "bytes accessed", "flops", "kernels", "estimate vs wall"))
        within = []
        for module in sorted({(pairs[i].family, pairs[i].module) for i in chosen}):
            sel = [i for i in chosen if (pairs[i].family, pairs[i].module) == module]
            rho = _spearman([pairs[i].estimate for i in sel], [pairs[i].median for i in sel])
            if not math.isnan(rho):
                within.append(rho)
        if within:
            print(f"within one module (orders of the same module, >= 3 distinct estimates): mean Spearman "
                  f"{np.mean(within):.3f} over {len(within)} modules")
        train = [(found[i], pairs[i].median) for i in chosen if pairs[i].split == "train" and i in found]
        if len(train) >= 10:
            fitted = _fit(train)
            scored = [i for i in chosen if pairs[i].split != "train"]
            rho = _spearman([estimate(found[i], fitted) for i in scored], [pairs[i].median for i in scored])
            fixed = _spearman([pairs[i].estimate for i in scored], [pairs[i].median for i in scored])
            print(f"fitted on {len(train)} train pairs: {replace(fitted)}")
            print(f"scored on {len(scored)} other pairs: Spearman {rho:.3f} fitted, {fixed:.3f} fixed constants")


if __name__ == "__main__":
    sys.exit(main())
