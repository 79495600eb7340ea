"""Time and memory of the graph agent's updates on the largest test graphs.

For the largest test-split module of each suite (by initial op count, from
the manifests), the ``HloGraphArrays`` observation through the stock client,
then the network of ``leaderboard.agents.gnn`` (default shape, or ``--hidden``
/ ``--layers`` / ``--heads``): milliseconds per forward pass (acting) and per
forward + backward of a minibatch of ``--batch`` copies (a PPO update's
chunk), and the process's peak RSS growth over the run of that graph, with
and without ``--max-nodes`` truncation.

    .venv/bin/python benchmarks/measure_gnn.py            # six graphs, ~2 min
    .venv/bin/python benchmarks/measure_gnn.py --quick    # the two smallest suites' largest, < 1 min
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import heading, machine_line  # noqa: E402

DATASETS = Path(__file__).resolve().parents[1] / "datasets"


def largest_test_benchmarks() -> list[tuple[str, int]]:
    """(URI, initial op count) of the largest test module of each suite, smallest first."""
    found = []
    for manifest in sorted(DATASETS.glob("xla-*-v0/manifest.json")):
        tests = [e for e in json.loads(manifest.read_text())["benchmarks"] if e["split"] == "test"]
        if tests:
            top = max(tests, key=lambda e: e["initial_op_count"])
            found.append((top["uri"], int(top["initial_op_count"])))
    return sorted(found, key=lambda f: f[1])


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--hidden", type=int, default=64, help="width of the embeddings (train.py's --hidden)")
    parser.add_argument("--layers", type=int, default=3, help="GATv2 layers (train.py's --layers)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads per layer (train.py's --heads)")
    parser.add_argument("--batch", type=int, default=8, help="graphs in the timed update minibatch")
    parser.add_argument("--max-nodes", type=int, default=2000, help="the truncation measured beside the full graph")
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions (the median is printed)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--quick", action="store_true", help="two graphs, batch 2, one repetition: < 1 min")
    args = parser.parse_args(argv)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
