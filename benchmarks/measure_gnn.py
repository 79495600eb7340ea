"""Time and memory of the graph agent's updates on the largest test graphs.

For the largest test-split module of each suite (by initial op count, from
the manifests), the ``HloGraphArrays`` observation through the stock client,
then the network of ``leaderboard.agents.gnn`` (default shape, or ``--hidden``
/ ``--layers`` / ``--heads``): milliseconds per forward pass (acting) and per
forward + backward of a minibatch of ``--batch`` copies (a PPO update's
chunk), and the process's peak RSS growth over the run of that graph, with
and without ``--max-nodes`` truncation.

Then acting: a trained run (``--run``) acts, as the leaderboard evaluates it
(``GnnPolicy``, 20 steps, keep-best), on ``--acting`` test benchmarks (a
seeded sample) twice, each time in a new service with the store off (every
step cold): once running the network on every choice, once with the policy's
per-graph logits (a step that changed nothing leaves the graph as it was):
seconds and forward passes per benchmark, the ratio, and whether both reached
the same commandlines. Last, the network on those benchmarks' first graphs at
1 torch thread and at as many as the machine has cores, taken in turn: the
time of each, and whether the logits are the same bit for bit.

    .venv/bin/python benchmarks/measure_gnn.py            # six graphs, 12 benchmarks acted twice, ~7 min
    .venv/bin/python benchmarks/measure_gnn.py --quick    # the two smallest suites' largest, 1 acted, < 1 min
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import heading, machine_line  # noqa: E402

DATASETS = Path(__file__).resolve().parents[1] / "datasets"
#: The run that acts (--run): the GNN of the leaderboard's GPT-2 rows, episodes of 5, seed 0.
RUN = Path(__file__).resolve().parents[1] / "leaderboard/agents/gnn/runs/episodes5/gnn-gpt2-seed0"


def split_op_counts() -> dict[str, int]:
    """Test-split URI -> initial op count, from the manifests."""
    return {
        e["uri"]: int(e["initial_op_count"])
        for manifest in sorted(DATASETS.glob("xla-*-v0/manifest.json"))
        for e in json.loads(manifest.read_text())["benchmarks"]
        if e["split"] == "test"
    }


def largest_test_benchmarks() -> list[tuple[str, int]]:
    """(URI, initial op count) of the largest test module of each suite, smallest first."""
    largest: dict[str, tuple[str, int]] = {}
    for uri, ops in split_op_counts().items():
        suite = uri.split("/")[2]
        if suite not in largest or ops > largest[suite][1]:
            largest[suite] = (uri, ops)
    return sorted(largest.values(), key=lambda f: f[1])


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(model, data, batch_size: int, repeats: int) -> dict[str, float]:  # noqa: ANN001
    import torch

    from leaderboard.agents.gnn.model import batch

    one, many = batch([data]), batch([data] * batch_size)
    acting, updating = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        with torch.no_grad():
            model(one)
        acting.append(time.perf_counter() - start)
        start = time.perf_counter()
        model.zero_grad()
        logits, value = model(many)
        (logits.logsumexp(-1).sum() + value.sum()).backward()
        updating.append(time.perf_counter() - start)
    return {"act_ms": 1000 * statistics.median(acting), "update_ms": 1000 * statistics.median(updating)}


def act(run: Path, uris: list[str], cached: bool) -> tuple[float, float, int, list[str]]:
    """(seconds, seconds in the network, forward passes, commandlines) of the run's policy acting on
    ``uris`` in a new service."""
    import compiler_gym
    import torch

    from leaderboard.agents.gnn.policy import GnnPolicy

    policy = GnnPolicy(run=run, episode_length=20, threads=torch.get_num_threads(), reuse_logits=cached)
    forward, calls, network = policy.model.forward, [0], [0.0]

    def counted(graphs):  # noqa: ANN001, ANN202
        calls[0] += 1
        start = time.perf_counter()
        out = forward(graphs)
        network[0] += time.perf_counter() - start
        return out

    policy.model.forward = counted  # type: ignore[method-assign]
    commandlines, start = [], time.perf_counter()
    with compiler_gym.make("xla-v0") as env:
        for uri in uris:
            env.reset(benchmark=uri)
            policy(env)
            commandlines.append(env.commandline())
            print(f"\r{'cached' if cached else 'uncached'}: {len(commandlines)}/{len(uris)}", end="",
                  file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return time.perf_counter() - start, network[0], calls[0], commandlines


def threads_side_by_side(run: Path, uris: list[str], cores: int) -> None:
    """The run's network on each benchmark's first graph at 1 torch thread and at ``cores``, taken in
    turn: seconds, and whether the logits are the same bit for bit."""
    import compiler_gym
    import numpy as np
    import torch

    from leaderboard.agents.gnn.model import batch, to_data
    from leaderboard.agents.gnn.policy import GnnPolicy
    from xla_service.env.graph import unpack

    model, seconds, same = GnnPolicy(run=run).model, {1: 0.0, cores: 0.0}, 0
    with compiler_gym.make("xla-v0") as env:
        for uri in uris:
            env.reset(benchmark=uri)
            graph, logits = batch([to_data(unpack(env.observation["HloGraphArrays"]))]), {}
            for threads in (1, cores, 1, cores):
                torch.set_num_threads(threads)
                start = time.perf_counter()
                with torch.no_grad():
                    logits[threads] = model(graph)[0][0].numpy().copy()
                seconds[threads] += time.perf_counter() - start
            same += int(np.array_equal(logits[1], logits[cores]))
    print(f"THREADS forward passes on {len(uris)} graphs, twice each: 1 thread {seconds[1]:.2f} s, {cores} threads "
          f"{seconds[cores]:.2f} s ({seconds[cores] / seconds[1]:.2f}x); logits the same bit for bit on {same} of {len(uris)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--hidden", type=int, default=64, help="width of the embeddings (train.py's --hidden)")
    parser.add_argument("--layers", type=int, default=3, help="GATv2 layers (train.py's --layers)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads per layer (train.py's --heads)")
    parser.add_argument("--batch", type=int, default=8, help="graphs in the timed update minibatch")
    parser.add_argument("--max-nodes", type=int, default=2000, help="the truncation measured beside the full graph")
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions (the median is printed)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads, of the network and of the acting policy (GnnPolicy's threads, 1 by default)")
    parser.add_argument("--run", type=Path, default=RUN, help="the trained run (agents/gnn) that acts")
    parser.add_argument("--acting", type=int, default=12,
                        help="test benchmarks (seeded sample) the run acts on, with and without its logits cache "
                        "(0: skip)")
    parser.add_argument("--quick", action="store_true",
                        help="two graphs, batch 2, one repetition, the smallest test benchmark acted: < 1 min")
    args = parser.parse_args(argv)
    if args.acting < 0:
        parser.error(f"--acting: expected a number of benchmarks >= 0, got {args.acting}")
    if args.quick:
        args.batch, args.repeats = 2, 1

    import compiler_gym
    import torch

    from leaderboard.agents.gnn.model import GnnActorCritic, GnnConfig, to_data
    from xla_service.env.graph import unpack

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(machine_line(), flush=True)
    model = GnnActorCritic(GnnConfig(hidden=args.hidden, layers=args.layers, heads=args.heads))
    print(f"network: hidden {args.hidden}, {args.layers} GATv2 layers x {args.heads} heads, "
          f"{sum(p.numel() for p in model.parameters()):,} parameters; update minibatch {args.batch} graphs")
    targets = largest_test_benchmarks()[: 2 if args.quick else None]
    heading("Largest test graph of each suite")
    with compiler_gym.make("xla-v0") as env:
        for uri, ops in targets:
            env.reset(benchmark=uri)
            graph = unpack(env.observation["HloGraphArrays"])
            for cap in (args.max_nodes, 0):  # truncated first: the peak then grows with the whole graph
                data = to_data(graph, cap)
                if cap and data.num_nodes == graph.node_features.shape[0]:
                    continue  # the cap keeps every node: nothing to compare
                before = _peak_mib()
                figures = measure(model, data, args.batch, args.repeats)
                label = f"max_nodes {cap}" if cap else "whole graph"
                print(f"GNN {uri.rsplit('/', 1)[-1]} ({ops} ops, {data.num_nodes} nodes, "
                      f"{data.edge_index.shape[1]} edges, {label}): act {figures['act_ms']:.0f} ms, "
                      f"update {figures['update_ms']:.0f} ms, peak RSS +{_peak_mib() - before:.0f} MiB "
                      f"(process peak {_peak_mib():.0f} MiB)", flush=True)
    if args.acting:
        sizes = split_op_counts()
        uris = random.Random(0).sample(sorted(sizes), min(args.acting, len(sizes)))
        if args.quick:
            uris = [min(sizes, key=sizes.__getitem__)]
        heading(f"Acting: {args.run}, 20 steps on {len(uris)} test benchmarks "
                f"({sum(sizes[u] for u in uris) / len(uris):,.0f} ops on average), store {os.environ['XLA_GYM_STORE']}, "
                f"torch threads: {torch.get_num_threads()}")
        runs = {cached: act(args.run, uris, cached) for cached in (False, True)}
        for cached, (seconds, network, calls, _) in runs.items():
            print(f"ACTING {'per-graph logits' if cached else 'network every choice'}: "
                  f"{seconds / len(uris):.1f} s a benchmark, {network / len(uris):.1f} s of it in the network, "
                  f"{calls / len(uris):.1f} forward passes")
        print(f"ACTING RATIO network every choice / per-graph logits: {runs[False][0] / runs[True][0]:.2f}x time, "
              f"{runs[False][1] / runs[True][1]:.2f}x network time, {runs[False][2] / runs[True][2]:.2f}x forward passes")
        print(f"ACTING same commandlines: {runs[False][3] == runs[True][3]}")
        threads_side_by_side(args.run, uris, os.cpu_count() or 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
