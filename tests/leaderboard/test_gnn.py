"""The graph agent (PyG on CPU): the network on real HloGraphArrays, masking,
truncation, batching, chunked updates, a tiny training run, resume, acting."""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from leaderboard.agents.gnn.model import (
    ACTIONS,
    GnnActorCritic,
    GnnConfig,
    batch,
    masked_logits,
    to_data,
)
from leaderboard.agents.gnn.policy import STOP, GnnPolicy, action_mask, from_env
from leaderboard.agents.gnn.train import (
    EPISODES_HEADER,
    _chunks,
    latest_checkpoint,
    parse_args,
    train,
    trim_episodes,
)
from tests.leaderboard.acting import check_acting_steps
from xla_service.env.graph import GraphArrays, unpack


@pytest.fixture(scope="module")
def graphs(small_env) -> list[GraphArrays]:
    """The small module's graph, before and after a pass that changes it."""
    env = small_env
    env.reset()
    first = unpack(env.observation["HloGraphArrays"])
    env.step(env.action_space["cse"])
    second = unpack(env.observation["HloGraphArrays"])
    env.reset()
    return [first, second]


def test_forward_masks_actions_and_has_a_stop_action(graphs):
    torch.manual_seed(0)
    model = GnnActorCritic(GnnConfig(hidden=16, layers=2, heads=2))
    logits, value = model(batch([to_data(graphs[0])]))
    assert logits.shape == (1, ACTIONS) and value.shape[0] == 1
    assert STOP == ACTIONS - 1
    mask = torch.ones(ACTIONS, dtype=torch.int64)
    mask[:10] = 0
    probs = torch.softmax(masked_logits(logits[0], mask), dim=-1)
    assert float(probs[:10].sum()) == 0.0 and float(probs.sum()) == pytest.approx(1.0)
    # PassOutcomes: 2 changes nothing, 3 fails; the stop action is always allowed
    outcomes = np.zeros(ACTIONS - 1, dtype=np.int64)
    outcomes[[1, 5]] = 2
    outcomes[7] = 3
    allowed = action_mask(outcomes)
    assert allowed.shape == (ACTIONS,) and allowed[STOP] == 1
    assert allowed[[1, 5, 7]].tolist() == [0, 0, 0] and allowed.sum() == ACTIONS - 3


def test_truncation_keeps_a_valid_subgraph(graphs):
    full = to_data(graphs[0])
    cut = to_data(graphs[0], max_nodes=3)
    assert full.num_nodes > 3 and cut.num_nodes == 3
    assert cut.edge_index.numel() == 0 or int(cut.edge_index.max()) < 3
    assert cut.edge_index.shape[1] < full.edge_index.shape[1]
    with pytest.raises(ValueError, match="max_nodes >= 0"):
        to_data(graphs[0], max_nodes=-1)


def test_a_batch_of_graphs_of_different_sizes_equals_them_one_by_one(graphs):
    torch.manual_seed(0)
    model = GnnActorCritic(GnnConfig(hidden=16, layers=2, heads=2)).eval()
    data = [to_data(g) for g in graphs]
    assert data[0].num_nodes != data[1].num_nodes
    with torch.no_grad():
        together, _ = model(batch(data))
        alone = torch.cat([model(batch([d]))[0] for d in data])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-5)


def test_chunked_gradients_add_up_to_the_whole_minibatch(graphs):
    torch.manual_seed(0)
    model = GnnActorCritic(GnnConfig(hidden=16, layers=2, heads=2))
    data = [to_data(g) for g in graphs * 2]
    nodes = np.asarray([d.num_nodes for d in data])
    chunks = _chunks(np.arange(len(data)), nodes, budget=int(nodes[:2].sum()))
    assert [c.tolist() for c in chunks] == [[0, 1], [2, 3]]
    assert [c.tolist() for c in _chunks(np.arange(2), nodes, budget=1)] == [[0], [1]]  # one graph at least

    def grads(groups: list[np.ndarray]) -> list[torch.Tensor]:
        model.zero_grad()
        for group in groups:
            logits, value = model(batch([data[i] for i in group]))
            (logits.logsumexp(-1).sum() + value.sum()).backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    for whole, parts in zip(grads([np.arange(len(data))]), grads(chunks)):
        torch.testing.assert_close(whole, parts, rtol=1e-4, atol=1e-6)


def _record_forward(policy: GnnPolicy, what: Callable[[Any], int]) -> list[int]:
    """``what(graphs)`` of every forward pass the policy's network makes from now on, in order."""
    seen: list[int] = []
    forward = policy.model.forward

    def recording(graphs: Any) -> Any:
        seen.append(what(graphs))
        return forward(graphs)

    policy.model.forward = recording  # type: ignore[method-assign]
    return seen


def test_train_tiny_budget_resume_and_act(tmp_path, small_env, monkeypatch, graphs):
    flags = [
        "--total-timesteps=8", "--num-steps=4", "--n-envs=1", "--episode-length=3", "--num-minibatches=2",
        "--update-epochs=1", "--hidden=16", "--layers=1", "--heads=2", "--max-train-benchmarks=1",
        "--checkpoint-every=4", f"--out={tmp_path}",
    ]
    run = train(parse_args(flags))
    record = json.loads((run / "args.json").read_text())
    assert record["args"]["total_timesteps"] == 8 and record["versions"]["jaxlib"] == "0.10.2"
    assert record["experience_store"] == os.environ["XLA_GYM_STORE"]  # the tests' store (conftest)
    for name in ("model.pt", "episodes.csv", "result.json"):
        assert (run / name).is_file(), name
    assert list((run / "tb").rglob("events.out.tfevents.*")), "TensorBoard logs"
    assert json.loads((run / "result.json").read_text())["timesteps"] >= 8
    assert latest_checkpoint(run) is not None

    again = train(parse_args([*flags, "--total-timesteps=16", "--resume"]))
    assert again == run and json.loads((run / "result.json").read_text())["timesteps"] >= 16
    steps = [int(line.split(",")[0]) for line in (run / "episodes.csv").read_text().splitlines()[1:]]
    assert steps and steps == sorted(steps) and steps[-1] <= 16  # one curve, in order, across the resume

    env = small_env
    env.reset()
    start = env.observation["OpCount"]
    GnnPolicy(run)(env)
    assert env.observation["OpCount"] <= start
    actions, final = list(env.actions), env.observation["OpCount"]
    env.reset()
    for action in actions:  # only passes that changed the module are kept
        assert not env.step(action)[3]["action_had_no_effect"]
    assert env.observation["OpCount"] == final

    # acting longer or shorter than the run's episodes (--episode-length=3)
    env.reset()
    GnnPolicy(run, episode_length=1)(env)
    assert len(env.actions) <= 1 and env.observation["OpCount"] <= start

    # a policy whose first choice is always stop: it ends at once, unless stop is masked
    eager = GnnPolicy(run)
    eager.model.policy[-1].bias.data[STOP] = 1e6
    env.reset()
    eager(env)
    assert env.actions == []
    eager.allow_stop = False
    env.reset()
    eager(env)
    assert env.actions and env.observation["OpCount"] < start  # the small module's passes change it
    with monkeypatch.context() as m:  # every pass known futile: it stops, though stop is masked
        m.setattr("leaderboard.agents.gnn.policy.action_mask", lambda outcomes: np.eye(STOP + 1, dtype=np.int8)[STOP])
        env.reset()
        eager(env)
        assert env.actions == []
    for flag in ("allow_stop", "reuse_logits"):
        with pytest.raises(ValueError, match=f"expected {flag} a bool"):
            GnnPolicy(run, **{flag: "no"})  # type: ignore[arg-type]
    for threads in (-1, True, 1.5):
        with pytest.raises(ValueError, match="expected threads an int >= 0"):
            GnnPolicy(run, threads=threads)  # type: ignore[arg-type]
    before = torch.get_num_threads()
    try:  # the network runs on the policy's threads (1 by default; 0 leaves the caller's), then the caller's are back
        torch.set_num_threads(2)
        for threads, expected in ((0, 2), (1, 1)):
            acting = GnnPolicy(run, threads=threads)
            seen = _record_forward(acting, lambda graphs: torch.get_num_threads())
            env.reset()
            acting(env)
            assert seen and set(seen) == {expected} and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    check_acting_steps(monkeypatch, GnnPolicy, run, env, run_length=3)

    # the network runs once a graph: a step that changed nothing leaves the graph, and its logits, as they were
    counted = GnnPolicy(run)
    calls = _record_forward(counted, lambda graphs: graphs.num_nodes)
    first = counted.logits(graphs[0])
    first[:] = 0  # a copy: the kept logits stay as they were
    first = counted.logits(graphs[0])
    np.testing.assert_array_equal(counted.logits(graphs[0]), first)
    assert len(calls) == 1 and first.any()
    second = counted.logits(graphs[1])
    assert len(calls) == 2 and not np.array_equal(first, second)
    np.testing.assert_array_equal(counted.logits(graphs[0]), first)
    assert len(calls) == 3  # only the last graph is kept
    with torch.no_grad():
        np.testing.assert_array_equal(first, counted.model(batch([to_data(graphs[0])]))[0][0].numpy())
    calls.clear()
    env.reset()
    counted(env)  # an episode starts afresh (weights may have changed): the start graph runs again
    assert calls and calls[0] == len(graphs[0].node_features)
    actions = list(env.actions)
    again = GnnPolicy(run, reuse_logits=False)  # the network on every choice, the same logits and choices
    every = _record_forward(again, lambda graphs: graphs.num_nodes)
    for _ in range(2):
        np.testing.assert_array_equal(again.logits(graphs[0]), first)
    assert len(every) == 2
    every.clear()
    env.reset()
    again(env)  # as many forward passes as choices (more than once a graph if a step changed nothing)
    assert env.actions == actions and len(every) >= len(calls)

    monkeypatch.setenv("XLA_GYM_GNN_RUN", str(run))
    assert isinstance(from_env(), GnnPolicy)
    monkeypatch.delenv("XLA_GYM_GNN_RUN")
    with pytest.raises(ValueError, match="XLA_GYM_GNN_RUN"):
        from_env()
    with pytest.raises(ValueError, match="No model"):
        GnnPolicy(run, checkpoint="missing.pt")


@pytest.mark.parametrize("mask, repeats", [("episode", True), ("known", False)])
def test_an_episode_mask_run_repeats_whatever_the_store_knows(tmp_path, monkeypatch, small_env, mask, repeats):
    """A new store, then the same run again once the store knows the first run's steps: with
    --mask episode it takes the same steps and learns the same weights; with --mask known it does not."""
    monkeypatch.setenv("XLA_GYM_STORE", str(tmp_path / "store.sqlite"))
    flags = [
        "--total-timesteps=16", "--num-steps=8", "--n-envs=1", "--episode-length=4", "--num-minibatches=2",
        "--update-epochs=1", "--hidden=16", "--layers=1", "--heads=2", "--max-train-benchmarks=2", f"--mask={mask}",
    ]
    first, again = (train(parse_args([*flags, f"--out={tmp_path / name}"])) for name in "ab")
    weights = [torch.load(run / "model.pt", weights_only=False)["model"] for run in (first, again)]
    alike = all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert alike == repeats
    if repeats:
        assert (first / "episodes.csv").read_text() == (again / "episodes.csv").read_text()
    assert json.loads((first / "args.json").read_text())["args"]["mask"] == mask
    small_env.reset()  # acting masks as training did
    start = small_env.observation["OpCount"]
    GnnPolicy(first)(small_env)
    assert small_env.observation["OpCount"] <= start
    with pytest.raises(SystemExit):
        parse_args(["--mask=store"])


def test_a_resume_drops_the_episodes_after_its_checkpoint(tmp_path):
    path = tmp_path / "episodes.csv"
    trim_episodes(path, 0)  # a new run: the header only
    assert path.read_text() == EPISODES_HEADER + "\n"
    rows = [f"{step},benchmark://xla-gpt2-v0/b,1.0,3,0" for step in (4, 8, 12)]
    path.write_text("\n".join([EPISODES_HEADER, *rows]) + "\n")
    trim_episodes(path, 8)  # the checkpoint at step 8: the episode ended at 12 is redone
    assert path.read_text().splitlines() == [EPISODES_HEADER, *rows[:2]]
    trim_episodes(path, 0)  # started again from nothing
    assert path.read_text().splitlines() == [EPISODES_HEADER]
