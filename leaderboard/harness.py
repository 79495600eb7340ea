"""Evaluate a policy on the test split, CompilerGym-leaderboard style.

A policy is a stock CompilerGym policy, ``Callable[[CompilerEnv], None]``: it
is handed an env reset to a benchmark and steps it in place. It may change
the observation space, never the benchmark or the reward space. Results go
to a CSV with CompilerGym's header (``benchmark,reward,walltime,commandline``)
that ``python -m compiler_gym.bin.validate --env=xla-v0 results.csv`` replays
and validates with no other flag: the reward is the episode's return in
the track's reward space (``--reward``): by default xla-v0's ``OpCount``
(initial - final op count, under the op count rule of
``schema.OP_COUNT_RULE``), whose metric ``leaderboard.report.summary`` computes from
it and the manifests; a backend track's (e.g. ``EstimatedTimeAgentNorm``) is
summarized by ``leaderboard.report.backend_summary``.

The experience store the evaluation uses must be its own (``leaderboard.protocol``,
``leaderboard/PROTOCOL.md``): a shared one is refused unless ``--shared-store``, and
the verdict is recorded next to the results (``RESULTS.store.json``).
"""
from __future__ import annotations

import argparse
import ast
import importlib
import logging
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from compiler_gym.compiler_env_state import (
    CompilerEnvState,
    CompilerEnvStateReader,
    CompilerEnvStateWriter,
)
from compiler_gym.envs import CompilerEnv

from leaderboard.protocol import MIN_BENCHMARKS, check_store, write_store_record
from xla_service.env.datasets import SPLITS, split_benchmark_uris

__all__ = ["Policy", "REWARD_SPACE", "Remote", "add_flags", "eval_xla_opcount_policy", "load_policy", "op_counts", "sample_per_suite",
           "select_benchmarks"]

Policy = Callable[[CompilerEnv], None]
#: The op count track's reward space (the default ``--reward``).
REWARD_SPACE = "OpCount"
logger = logging.getLogger(__name__)


def add_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The flags of CompilerGym's leaderboard harness, under the same names."""
    parser.add_argument(
        "--leaderboard_results",
        default="xla_opcount-results.csv",
        help="path of the results CSV to write (appended to with --resume)",
    )
    parser.add_argument(
        "--leaderboard_logfile",
        default="",
        help="path of a file to stream CompilerGym's logs to (empty: none)",
    )
    parser.add_argument(
        "--max_benchmarks",
        type=int,
        default=0,
        help="if > 0, use only the first N test benchmarks (alphabetical by URI)",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=0,
        help="if > 0, use N benchmarks of each suite, drawn without replacement "
        "with --sample_seed (a fixed, cheaper subset of the split)",
    )
    parser.add_argument(
        "--sample_seed", type=int, default=0, help="seed of --sample's draw"
    )
    parser.add_argument(
        "--n", type=int, default=1, help="repetitions of the policy per benchmark"
    )
    parser.add_argument(
        "--test_dataset",
        action="append",
        default=None,
        help="suite whose split (--split) to evaluate, e.g. xla-gpt2-v0 (repeatable; "
        "default: every suite)",
    )
    parser.add_argument(
        "--benchmark",
        action="append",
        default=None,
        metavar="URI",
        help="evaluate only these benchmarks (repeatable; each must belong to --split); overrides --sample "
        "and --max_benchmarks",
    )
    parser.add_argument(
        "--split",
        default="test",
        choices=SPLITS,
        help="which split to evaluate (the leaderboard uses test; heldout is the families "
        "no agent trains on)",
    )
    parser.add_argument(
        "--shard",
        type=_shard,
        default=(0, 1),
        metavar="I/N",
        help="run only every N-th benchmark, starting at the I-th (0-based), e.g. 0/2 "
        "and 1/2 side by side with two results files; their rows together are the whole run",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="spread the benchmarks over Ray tasks (one xla-gym service each): a local Ray instance, "
        "or the cluster at ADDRESS (e.g. auto, ray://head:10001); results as a serial run's",
    )
    parser.add_argument(
        "--reward",
        default=REWARD_SPACE,
        help="the track's reward space, whose return each result records: OpCount (the op count "
        "track) or a backend objective such as EstimatedTimeAgentNorm (docs/spaces.md)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="read --leaderboard_results first and run only what it lacks",
    )
    parser.add_argument(
        "--shared-store",
        dest="shared_store",
        action="store_true",
        help="evaluate even with an experience store shared with other runs (the machine's default one): "
        "refused otherwise (leaderboard/PROTOCOL.md); the choice is recorded in RESULTS.store.json",
    )
    return parser


def _shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N), with 0 <= I < N."""
    index, _, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/2, got {text!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"expected 0 <= I < N, got {text!r}")
    return i, n


def _benchmarks(args: argparse.Namespace) -> list[str]:
    uris = select_benchmarks(args.split, args.test_dataset, args.sample, args.sample_seed, args.max_benchmarks)
    if args.benchmark:
        every = set(select_benchmarks(args.split, args.test_dataset))
        unknown = [u for u in args.benchmark if u not in every]
        if unknown:
            raise ValueError(f"Expected benchmarks of the {args.split!r} split, got {unknown}")
        uris = sorted(set(args.benchmark))
    index, count = args.shard
    uris = uris[index::count]
    return [uri for uri in uris for _ in range(args.n)]


def select_benchmarks(
    split: str, suites: Sequence[str] | None = None, sample: int = 0, sample_seed: int = 0, max_benchmarks: int = 0
) -> list[str]:
    """The benchmarks of ``split`` (of ``suites``, or every suite), sorted: ``sample`` of each suite if > 0
    (:func:`sample_per_suite`), then the first ``max_benchmarks`` if > 0. The harness's selection, which the
    runtime scripts share."""
    uris = sorted(split_benchmark_uris(split, list(suites) if suites else None))
    if sample > 0:
        uris = sample_per_suite(uris, sample, sample_seed)
    return uris[:max_benchmarks] if max_benchmarks > 0 else uris


def sample_per_suite(uris: Sequence[str], n: int, seed: int) -> list[str]:
    """``n`` URIs of each suite (``benchmark://SUITE/...``), drawn with ``seed``; sorted."""
    by_suite: dict[str, list[str]] = {}
    for uri in sorted(uris):
        by_suite.setdefault(uri.split("/")[2], []).append(uri)
    rng = random.Random(seed)
    return sorted(u for suite in sorted(by_suite) for u in rng.sample(by_suite[suite], min(n, len(by_suite[suite]))))


def op_counts() -> dict[str, tuple[int, int]]:
    """Benchmark URI -> (initial, default) op count, from the manifests."""
    from xla_service.env.datasets import get_xla_datasets

    return {
        f"{d.name}/{name}": (e["initial_op_count"], e["default_op_count"])
        for d in get_xla_datasets()
        for name, e in d.entries.items()
    }


def _progress(
    done: int, total: int, started: float, states: Sequence[CompilerEnvState], reward: str = REWARD_SPACE
) -> None:
    """One progress line: on a terminal it rewrites itself, in a log it is a line per result."""
    if reward == REWARD_SPACE:
        counts = op_counts()
        values = [float(s.reward or 0.0) / max(counts[s.benchmark][0], 1) for s in states if s.benchmark in counts]
        what = "op-count reduction {:.1%} of the initial count"
    else:
        values = [float(s.reward or 0.0) for s in states]
        what = f"{reward} return {{:.4g}}"
    elapsed = time.monotonic() - started
    eta = elapsed / done * (total - done) if done else 0.0
    mean = sum(values) / len(values) if values else 0.0
    small = f" (only {len(values)} benchmarks: not yet meaningful)" if len(values) < MIN_BENCHMARKS else ""
    line = f"[{done}/{total}] {elapsed:6.0f}s elapsed, ~{eta:5.0f}s left, mean {what.format(mean)}{small}"
    if sys.stderr.isatty():
        print(f"\r{line}", end="", file=sys.stderr, flush=True)
    else:
        print(line, file=sys.stderr, flush=True)


def run_policy(policy: Policy, env: CompilerEnv, benchmark: str, reward: str = REWARD_SPACE) -> CompilerEnvState:
    """One result: ``policy`` on ``env`` (whose reward space is ``reward``) reset to ``benchmark``;
    its state, with the policy's walltime."""
    env.reset(benchmark=benchmark)
    t0 = time.monotonic()
    policy(env)
    walltime = time.monotonic() - t0
    if str(env.benchmark) != benchmark:
        raise RuntimeError(f"The policy changed the benchmark to {env.benchmark}")
    if env.reward_space is None or env.reward_space.name != reward:
        raise RuntimeError(f"The policy changed the reward space from {reward}")
    state = env.state.model_copy()
    state.walltime = walltime
    return state


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


#: Runs the policy elsewhere (``distributed.run_on_ray``): the states of the
#: benchmarks, in order, each handed to the callback as it completes.
Remote = Callable[[Sequence[str], Callable[[CompilerEnvState], None]], list[CompilerEnvState]]


def eval_xla_opcount_policy(
    policy: Policy, argv: Sequence[str] | None = None, remote: Remote | None = None
) -> list[CompilerEnvState]:
    """Run ``policy`` on every benchmark of the test split; write the results CSV.

    With ``--ray`` the benchmarks go to ``remote`` (``leaderboard.eval`` passes
    ``distributed.run_on_ray``, whose Ray tasks load the policy from its
    ``MODULE:FUNCTION``); the CSV's rows are the same as a serial run's, in the
    same order, but for walltimes.
    """
    import compiler_gym

    args = add_flags(argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)).parse_args(argv)
    if args.n < 1:
        raise ValueError(f"--n must be at least 1, got {args.n}")
    results = Path(args.leaderboard_results)
    store = check_store(results, args.shared_store, resume=args.resume and results.is_file())
    todo = _benchmarks(args)
    states: list[CompilerEnvState] = []
    if args.resume and results.is_file():
        with CompilerEnvStateReader(open(results)) as reader:
            for state in reader:
                states.append(state)
                if state.benchmark in todo:
                    todo.remove(state.benchmark)
    handler: logging.Handler = (
        logging.FileHandler(args.leaderboard_logfile) if args.leaderboard_logfile else logging.NullHandler()
    )
    logging.getLogger("compiler_gym").addHandler(handler)
    header = not results.is_file() or results.stat().st_size == 0
    write_store_record(results, store)
    print(f"Evaluating {len(todo)} runs; results -> {results}", file=sys.stderr)
    started = time.monotonic()
    if args.ray is not None:
        if remote is None:
            raise ValueError("--ray needs the policy as MODULE:FUNCTION: run it through leaderboard.eval --policy")
        completed: list[CompilerEnvState] = []

        def report(state: CompilerEnvState) -> None:
            completed.append(state)
            _progress(len(completed), len(todo), started, states + completed, args.reward)

        states += remote(todo, report)
        _write(results, states, header=True)
    else:
        with compiler_gym.make("xla-v0", reward_space=args.reward) as env, open(
            results, "a"
        ) as f, CompilerEnvStateWriter(f, header=header) as writer:
            for i, benchmark in enumerate(todo):
                state = run_policy(policy, env, benchmark, args.reward)
                writer.write_state(state, flush=True)
                states.append(state)
                _progress(i + 1, len(todo), started, states, args.reward)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    logging.getLogger("compiler_gym").removeHandler(handler)
    return states


def _write(path: Path, states: Sequence[CompilerEnvState], header: bool) -> None:
    with open(path, "w") as f, CompilerEnvStateWriter(f, header=header) as writer:
        for state in states:
            writer.write_state(state, flush=True)
