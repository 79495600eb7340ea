"""The world-model agent: model training, imagination, acting, and the train script (tiny budgets)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from leaderboard.agents.greedy.policy import Greedy
from leaderboard.agents.world_model import controller as ctl
from leaderboard.agents.world_model.data import (
    N_ACTIONS,
    N_FEATURES,
    Transitions,
    collect,
    features,
    from_export,
    op_counts,
    random_chooser,
)
from leaderboard.agents.world_model.evaluate import drift, model_metrics
from leaderboard.agents.world_model.evaluate import main as evaluate_main
from leaderboard.agents.world_model.model import Prediction, WorldModel, fit, loss, targets
from leaderboard.agents.world_model.policy import WorldModelPolicy, from_env, tiered_order
from leaderboard.agents.world_model.ranks import choice_ranks, summarize
from leaderboard.agents.world_model.ranks import main as ranks_main
from leaderboard.agents.world_model.train import parse_args, run_name, train

#: Small random modules: real XLA passes, steps in milliseconds.
BENCHMARKS = "generator://xla-random-v0/0-3?ops=30-60"


@pytest.fixture(autouse=True)
def one_thread():
    """Small networks on a busy 2-core machine: torch's thread pool only contends."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def real_data() -> Transitions:
    import gymnasium

    env = gymnasium.make(
        "xla_service.gym:xla-v0", benchmarks=BENCHMARKS, observation=["OpcodeCounts", "OpCount"], max_episode_steps=10
    )
    try:
        return collect(env, 80, random_chooser, np.random.default_rng(0))
    finally:
        env.close()


def test_collected_transitions_are_consistent(real_data, tmp_path):
    d = real_data
    assert len(d) == 80 and d.state.shape == (80, N_FEATURES) and set(np.unique(d.episode)) == set(range(8))
    assert d.changed.any() and not d.changed.all()
    assert np.allclose(op_counts(d.state) - op_counts(d.next_state), d.reward, atol=1e-2)
    assert np.array_equal(d.state[~d.changed], d.next_state[~d.changed])
    train_part, held = d.split(0.25, seed=0)
    assert len(train_part) + len(held) == 80 and len(held) > 0
    assert not set(held.episode) & set(train_part.episode)  # whole episodes held out
    d.save(tmp_path / "t.npz")
    assert np.array_equal(Transitions.load(tmp_path / "t.npz").action, d.action)
    with pytest.raises(ValueError, match="held-out fraction"):
        d.split(1.0, seed=0)


def test_store_export_reads_as_transitions(real_data, tmp_path):
    from xla_service.store import open_store
    from xla_service.store.export import export_transitions

    store = open_store()
    assert store is not None
    assert export_transitions(store, tmp_path / "export.npz") > 0
    exported = from_export(tmp_path / "export.npz")
    assert (exported.episode == -1).all() and exported.changed.any()
    assert np.allclose(op_counts(exported.state) - op_counts(exported.next_state), exported.reward, atol=1e-2)


def _loss_on(model: WorldModel, data: Transitions) -> dict[str, float]:
    """The training loss on all of ``data``, averaged over the ensemble's members."""
    batch = targets(data)
    with torch.no_grad():
        parts = [loss(member, batch)[1] for member in model.members]
    return {k: float(np.mean([p[k] for p in parts])) for k in parts[0]}


def test_model_loss_goes_down_and_heldout_metrics(real_data):
    torch.manual_seed(0)
    train_part, held = real_data.split(0.25, seed=0)
    model = WorldModel(members=2, hidden=64)
    before = _loss_on(model, train_part)
    history = fit(model, torch.optim.Adam(model.parameters(), 3e-3), train_part, 80, 32, torch.Generator().manual_seed(0))
    assert len(history) == 80 and set(history[0]) == set(before)
    # Per-epoch figures are bootstrap minibatch estimates (noisy on a few changed rows):
    # judge the fit by the loss on all of the training data, before and after.
    after = _loss_on(model, train_part)
    assert after["loss"] < 0.6 * before["loss"]
    assert after["changed_bce"] < 0.5 * before["changed_bce"]
    metrics = model_metrics(model, held)
    for key in ("changed_precision", "changed_recall", "changed_accuracy"):
        assert 0.0 <= metrics[key] <= 1.0
    assert metrics["op_change_mae"] >= 0 and "drift_10" in metrics
    assert drift(model, held, horizon=3)[0] >= 0.0
    # A model that never predicts a change: recall 0, MAE = mean |real change|, drift = no change.
    never = WorldModel(members=1, hidden=8)
    with torch.no_grad():
        never.members[0].changed.bias.fill_(-50.0)
    m = model_metrics(never, held)
    assert m["changed_recall"] == 0.0
    assert m["op_change_mae"] == pytest.approx(float(np.abs(held.reward).mean()))
    with pytest.raises(ValueError, match="No transitions"):
        fit(model, torch.optim.Adam(model.parameters()), Transitions.empty(), 1, 8, torch.Generator())
    # changed_probs (first layer split by state and pass) is the members' "changed" head, pass by pass.
    x = torch.as_tensor(held.state[:5])
    for a in (0, 17, N_ACTIONS - 1):
        _, logit, _ = model(x, torch.full((5,), a))
        assert torch.allclose(model.changed_probs(x)[:, a], torch.sigmoid(logit).mean(0), atol=1e-6)
    # One minibatch an epoch (the batch holds all the data): min_updates adds epochs, never removes them.
    whole = len(train_part)
    assert len(fit(model, torch.optim.Adam(model.parameters()), train_part, 1, whole, torch.Generator(), min_updates=7)) == 7
    assert len(fit(model, torch.optim.Adam(model.parameters()), train_part, 3, whole, torch.Generator(), min_updates=2)) == 3


class _Bandit(torch.nn.Module):
    """Fake dynamics: only passes 3 and 7 change anything; 7 removes 1 % of the ops, 3 none."""

    def __init__(self) -> None:
        super().__init__()
        self.members = torch.nn.ModuleList([torch.nn.Identity()])

    def changed_probs(self, x: torch.Tensor) -> torch.Tensor:
        p = torch.zeros(x.shape[0], N_ACTIONS)
        p[:, [3, 7]] = 0.9
        return p

    def step(self, x: torch.Tensor, a: torch.Tensor, member: int | None = None, threshold: float = 0.5) -> Prediction:
        p = self.changed_probs(x).gather(1, a.unsqueeze(1)).squeeze(1)
        return Prediction(x + 0.01, p, (a == 7).float(), torch.zeros(x.shape[0]))


def test_imagination_respects_masks_and_learns_the_better_pass():
    torch.manual_seed(0)
    model, ac, gen = _Bandit(), ctl.ActorCritic(hidden=32), torch.Generator().manual_seed(0)
    config = ctl.ImagineConfig(horizon=4, entropy_coef=0.0)
    starts = torch.rand(16, N_FEATURES)
    roll = ctl.imagine(model, ac, starts, config, gen)
    assert roll["states"].shape == (5, 16, N_FEATURES) and roll["masks"].shape == (4, 16, N_ACTIONS)
    assert set(roll["actions"].unique().tolist()) <= {3, 7}
    assert (roll["masks"].sum(-1) == 2).all()
    optimizer = torch.optim.Adam(ac.parameters(), 1e-2)

    def p7() -> float:
        with torch.no_grad():
            logits, _ = ctl.masked_logits(ac.actor(starts), model.changed_probs(starts), 0.5)
            return float(torch.softmax(logits, -1)[:, 7].mean())

    before = p7()
    for _ in range(30):
        stats = ctl.update(model, ac, optimizer, starts, config, gen)
    assert p7() > max(before, 0.8) and stats["allowed_actions"] == 2.0
    # Nothing predicted to change: the most likely pass stays allowed.
    _, mask = ctl.masked_logits(torch.zeros(1, N_ACTIONS), torch.full((1, N_ACTIONS), 0.1).index_fill(1, torch.tensor([5]), 0.2), 0.5)
    assert mask.sum() == 1 and mask[0, 5]
    with pytest.raises(ValueError, match="start states"):
        ctl.update(model, ac, optimizer, torch.zeros(0, N_FEATURES), config, gen)


def test_train_end_to_end_then_act_in_compiler_gym(tmp_path, small_env, capsys):
    args = parse_args([
        f"--benchmarks={BENCHMARKS}", "--total-env-steps=50", "--initial-steps=30", "--steps-per-iteration=20",
        "--episode-length=10", "--heldout-fraction=0.3", "--ensemble=2", "--hidden=32", "--controller-hidden=32",
        "--model-epochs=5", "--batch-size=32", "--imagination-updates=3", "--imagination-batch=8", "--horizon=4",
        "--checkpoints=30,40", f"--out={tmp_path}",
    ])
    run = train(args)
    record = json.loads((run / "args.json").read_text())
    assert record["args"]["total_env_steps"] == 50 and record["versions"]["torch"].startswith("2.")
    result = json.loads((run / "result.json").read_text())
    assert result["real_env_steps"] == 50 and result["iterations"] == 2
    assert result["imagined_steps"] == 2 * 3 * 8 * 4 and "changed_recall" in result["heldout"]
    assert list((run / "tb").rglob("events.out.tfevents.*")), "TensorBoard logs"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["model-30.pt"]  # 40 is no iteration's end
    early, final = WorldModelPolicy(str(run), checkpoint=30), WorldModelPolicy(str(run))
    assert not torch.equal(early.model.members[0].changed.weight, final.model.members[0].changed.weight)  # iteration 1 trained on
    assert len(Transitions.load(run / "transitions.npz")) + len(Transitions.load(run / "heldout.npz")) == 50
    capsys.readouterr()
    assert evaluate_main([str(run)]) == 0
    assert "drift_10" in json.loads(capsys.readouterr().out)

    env = small_env
    env.reset()
    start = env.observation["OpCount"]
    policy = WorldModelPolicy(str(run), episode_length=6)
    assert sorted(policy.preferences(np.zeros(N_FEATURES, np.float32))) == list(range(N_ACTIONS))
    policy(env)
    assert env.observation["OpCount"] <= start
    actions, final = list(env.actions), env.observation["OpCount"]
    env.reset()
    for action in actions:  # only passes that changed the module are kept; they replay
        assert not env.step(action)[3]["action_had_no_effect"]
    assert env.observation["OpCount"] == final

    # model-predictive: passes ranked by the predicted one-step return, changing ones first
    planner = WorldModelPolicy(str(run), episode_length=6, plan="lookahead")
    env.reset()
    x = features(env.observation["OpcodeCounts"], env.observation["OpCount"])
    xt = torch.as_tensor(x).unsqueeze(0)
    scores = planner.lookahead(xt)
    a = int(np.argmax(scores))
    one = planner.model.step(xt, torch.tensor([a]), threshold=planner.args["change_threshold"])
    expected = one.p_changed * one.reward_pct + planner.args["gamma"] * planner.controller.value(one.next_state)
    assert scores[a] == pytest.approx(float(expected[0]), rel=1e-4, abs=1e-5)
    changes = planner.model.changed_probs(xt)[0].numpy() >= planner.args["change_threshold"]
    order = planner.preferences(x)
    by_score = sorted(range(N_ACTIONS), key=lambda b: -scores[b])  # stable: ties by index, as argsort
    assert order == [b for b in by_score if changes[b]] + [b for b in by_score if not changes[b]]
    assert order != WorldModelPolicy(str(run), episode_length=6).preferences(x)  # not the actor's order
    planner(env)
    assert env.observation["OpCount"] <= start
    # by the score alone: P(changed) weighs the return, no split in two
    assert WorldModelPolicy(str(run), episode_length=6, plan="score").preferences(x) == by_score
    # tiered: scores above changing nothing (gamma V(s)) first, then the other passes predicted to change the
    # module, then the rest
    tiered = WorldModelPolicy(str(run), episode_length=6, plan="tiered")
    nothing = planner.args["gamma"] * float(planner.controller.value(xt)[0])
    gains = scores > nothing
    tiers = [[b for b in by_score if gains[b]], [b for b in by_score if not gains[b] and changes[b]]]
    tiers.append([b for b in by_score if not gains[b] and not changes[b]])
    assert tiered.preferences(x) == tiers[0] + tiers[1] + tiers[2]
    env.reset()
    tiered(env)
    assert env.observation["OpCount"] <= start

    # guided search: only the plan's first K passes are tried at each step; each applied one lowers the count.
    # K reaches down to greedy search's first choice: then it is the search's first step too
    env.reset()
    Greedy(max_steps=2)(env)
    greedy = list(env.actions), env.observation["OpCount"]
    assert greedy[0], "greedy search lowers the small module's op count"
    env.reset()
    x = features(env.observation["OpcodeCounts"], env.observation["OpCount"])
    k = WorldModelPolicy(str(run), plan="score").preferences(x).index(greedy[0][0]) + 1
    guided = WorldModelPolicy(str(run), episode_length=6, plan="score", search=k)
    guided(env)
    actions, counts = list(env.actions), [start]
    env.reset()
    for action in actions:
        x = features(env.observation["OpcodeCounts"], env.observation["OpCount"])
        assert action in guided.preferences(x)[:k]
        env.step(action)
        counts.append(env.observation["OpCount"])
    assert actions[0] == greedy[0][0] and len(actions) <= 6 and all(b < a for a, b in zip(counts, counts[1:]))
    # trying every pass is greedy search
    env.reset()
    WorldModelPolicy(str(run), episode_length=2, search=N_ACTIONS)(env)
    searched = list(env.actions), env.observation["OpCount"]
    assert searched == greedy
    # where greedy's choices rank in the model's order: a search of K finds those of rank < K
    names = [env.action_space.names[a] for a in greedy[0]]
    env.reset()
    first = guided.preferences(features(env.observation["OpcodeCounts"], env.observation["OpCount"]))
    ranks = choice_ranks(guided, env, names)
    assert len(ranks) == len(names) and ranks[0] == first.index(env.action_space.names.index(names[0]))
    assert env.observation["OpCount"] == greedy[1]  # it replayed them
    summary = summarize([0, 3, 9, 40], benchmarks=2)
    assert (summary["top1"], summary["top4"], summary["top8"], summary["top16"]) == (1, 2, 2, 3)
    assert summary["median_rank"] == 6 and summary["steps_per_benchmark"] == 2
    with pytest.raises(ValueError, match="expected a pass of the action space, got 'nopass'"):
        choice_ranks(guided, env, ["nopass"])


TINY = [  # a run of a few seconds: 20 random steps, then iterations of 10
    f"--benchmarks={BENCHMARKS}", "--initial-steps=20", "--steps-per-iteration=10", "--episode-length=5",
    "--heldout-fraction=0.3", "--ensemble=2", "--hidden=16", "--controller-hidden=16", "--model-epochs=2",
    "--model-min-updates=5", "--batch-size=16", "--imagination-updates=2", "--imagination-batch=4", "--horizon=3",
    "--checkpoints=",
]


def data(run: Path) -> Transitions:
    """The run's real steps in the order collected."""
    both = Transitions.concat([Transitions.load(run / "transitions.npz"), Transitions.load(run / "heldout.npz")])
    return both.subset(np.argsort(both.episode, kind="stable"))


def same(x: Transitions, y: Transitions) -> bool:
    return all(np.array_equal(getattr(x, f.name), getattr(y, f.name)) for f in dataclasses.fields(x))


def test_runs_repeat_and_resume_where_they_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_GYM_STORE", "off")  # the action mask then depends on the run alone
    tiny = TINY

    first, again = (train(parse_args([*tiny, "--total-env-steps=40", f"--out={tmp_path / name}"])) for name in "ab")
    assert same(data(first), data(again))  # one seed, one run
    a, b = (torch.load(run / "model.pt", weights_only=False) for run in (first, again))
    assert all(torch.equal(a["world_model"][k], b["world_model"][k]) for k in a["world_model"])

    stopped = data(train(parse_args([*tiny, "--total-env-steps=30", f"--out={tmp_path / 'c'}"])))
    assert same(stopped, data(first).subset(slice(0, 30)))
    resumed = train(parse_args([*tiny, "--total-env-steps=40", "--resume", f"--out={tmp_path / 'c'}"]))
    assert same(data(resumed).subset(slice(0, 30)), stopped)  # the steps before the stop are kept
    result = json.loads((resumed / "result.json").read_text())
    assert (result["real_env_steps"], result["iterations"], result["imagined_steps"]) == (40, 3, 3 * 2 * 4 * 3)
    assert result == {**json.loads((first / "result.json").read_text()), "minutes": result["minutes"],
                      "heldout": result["heldout"]}
    record = json.loads((resumed / "args.json").read_text())
    assert record["resumed_at_real_steps"] == [30] and record["experience_store"] == "off"

    before = (resumed / "model.pt").stat().st_mtime_ns  # finished: nothing to do
    assert train(parse_args([*tiny, "--total-env-steps=40", "--resume", f"--out={tmp_path / 'c'}"])) == resumed
    assert (resumed / "model.pt").stat().st_mtime_ns == before
    with pytest.raises(ValueError, match="--hidden: the run has 16, got 32"):  # another experiment
        train(parse_args([*tiny, "--hidden=32", "--total-env-steps=50", "--resume", f"--out={tmp_path / 'c'}"]))


def test_a_state_saved_before_an_argument_existed_resumes_with_its_old_value(real_data, tmp_path):
    from leaderboard.agents.world_model import resume

    net = torch.nn.Linear(2, 2)
    rng, gen = np.random.default_rng(0), torch.Generator()
    old_args = {"seed": 0, "hidden": 16}  # saved before --mask existed: those runs masked what the store knew
    resume.save(tmp_path, old_args, real_data, {"net": net}, rng, gen, resume.Progress(real_steps=80))
    loaded = resume.load(tmp_path, {**old_args, "mask": "known"}, {"net": net}, rng, gen)
    assert loaded is not None and loaded[1].real_steps == 80
    with pytest.raises(ValueError, match="--mask: the run has 'known', got 'episode'"):
        resume.load(tmp_path, {**old_args, "mask": "episode"}, {"net": net}, rng, gen)


@pytest.mark.parametrize("mask, repeats", [("episode", True), ("known", False)])
def test_an_episode_mask_run_repeats_whatever_the_store_knows(tmp_path, monkeypatch, mask, repeats):
    """A new store, then the same run again once the store knows the first run's steps: with
    --mask episode it collects the same steps; with --mask known the mask (and so the run) changes."""
    monkeypatch.setenv("XLA_GYM_STORE", str(tmp_path / "store.sqlite"))
    runs = [train(parse_args([*TINY, f"--mask={mask}", "--total-env-steps=30", f"--out={tmp_path / n}"])) for n in "ab"]
    assert same(*(data(run) for run in runs)) == repeats
    assert json.loads((runs[0] / "args.json").read_text())["args"]["mask"] == mask


def test_the_tiered_order_tries_passes_that_change_the_module_before_those_that_do_not():
    # a ResNet-like state: every changing pass predicted to add ops (score below changing nothing, 10.0),
    # one doubtful pass predicted to gain; no-change passes tie at 10.0 and keep their index order
    scores = np.array([10.0, 7.0, 10.0, 12.0, 5.0, 9.5, 10.0])
    changes = np.array([False, True, False, False, True, True, False])
    assert tiered_order(scores, 10.0, changes) == [3, 5, 1, 4, 0, 2, 6]
    assert tiered_order(scores, 4.0, changes) == [3, 0, 2, 6, 5, 1, 4]  # all gain: by score alone, as plan="score"
    assert tiered_order(scores, 20.0, np.zeros(7, bool)) == [3, 0, 2, 6, 5, 1, 4]


def test_flags_and_errors(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    out = capsys.readouterr().out
    assert "--imagination-updates" in out and "(default: 2000)" in out
    with pytest.raises(SystemExit):
        parse_args(["--epsilon=2"])
    with pytest.raises(SystemExit):
        parse_args(["--checkpoints=1000,2k"])
    assert "expected comma-separated step counts, got '1000,2k'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["--mask=store"])
    assert "--mask: expected one of known, episode, got 'store'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="No model at"):
        WorldModelPolicy(Path(tmp_path))
    with pytest.raises(ValueError, match="plan: expected one of actor, lookahead, score, tiered, got 'greedy'"):
        WorldModelPolicy(Path(tmp_path), plan="greedy")
    with pytest.raises(ValueError, match=f"search: expected 0 to {N_ACTIONS} passes tried a step, got -1"):
        WorldModelPolicy(Path(tmp_path), search=-1)
    with pytest.raises(ValueError, match="model-500.pt"):
        WorldModelPolicy(Path(tmp_path), checkpoint=500)
    names = {b: run_name(parse_args([f"--benchmarks={b}", "--seed=2"])) for b in (
        "xla-gpt2-v0:train", "xla-bert-v0,xla-gpt2-v0:train", "generator://xla-random-v0/0-3?ops=30-60")}
    assert list(names.values()) == ["wm-xla-gpt2-v0-seed2", "wm-bert+gpt2-seed2", "wm-xla-random-v0-seed2"]
    with pytest.raises(ValueError, match="at least one pass"):
        summarize([], benchmarks=3)
    with pytest.raises(SystemExit):
        ranks_main(["--help"])
    assert "(default: score)" in capsys.readouterr().out
    monkeypatch.delenv("XLA_GYM_WM_RUN", raising=False)
    with pytest.raises(ValueError, match="XLA_GYM_WM_RUN"):
        from_env()
