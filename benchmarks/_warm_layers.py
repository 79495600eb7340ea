"""``bench_warm_step.py``'s profile: one warm step timed through each layer, and a cProfile by package.

Client layers are timed on the live env (its service in another process);
the service's layers in this process, without gRPC, on an engine that reads
the same store. Every figure is the median over the replayed steps, each
replay from the memory cache (after a first replay that warmed it).
"""
from __future__ import annotations

import cProfile
import pstats
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["profile_layers"]

#: Replays of the episodes per client layer, the layers taking turns.
_ROUNDS = 3
_PACKAGES = ("grpc", "google/protobuf", "compiler_gym", "gymnasium", "xla_service", "numpy")


class _Context:
    """A stand-in for gRPC's servicer context: an error status fails the profile."""

    def set_code(self, code: Any) -> None:
        raise RuntimeError(f"the servicer answered {code}")

    def set_details(self, details: str) -> None:
        raise RuntimeError(details)


def _median_ms(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[len(ordered) // 2] * 1000 if ordered else float("nan")


def _mean_ms(times: list[float]) -> float:
    return sum(times) / len(times) * 1000 if times else float("nan")


def _package(filename: str) -> str:
    for name in _PACKAGES:
        if f"/{name}/" in filename:
            return "protobuf" if name == "google/protobuf" else name
    return "python (stdlib, builtins)"


def _client_layers(env: Any, episodes: list[tuple[int, list[int]]]) -> tuple[dict[str, float], list[tuple[str, float]], list[tuple[str, float]], int]:
    from compiler_gym.service.proto import Event, GetVersionRequest, StepRequest

    gym_env = env.unwrapped
    client = gym_env.compiler_env
    names = [c.source for c in gym_env._converters.values()]
    spaces = [client.observation.spaces[n] for n in names]
    # What the client's step asks the service for: the observation, the reward's, XLA's errors.
    wire = list(dict.fromkeys([*spaces, *(client.observation.spaces[n] for n in client.reward_space.observation_spaces),
                               client.observation.spaces["PassError"]]))

    def replay(step: Callable[[int], Any]) -> list[float]:
        times = []
        for seed, actions in episodes:
            env.reset(seed=seed)
            for action in actions:
                start = time.perf_counter()
                step(action)
                times.append(time.perf_counter() - start)
        return times

    def raw(action: int) -> Any:
        request = StepRequest(session_id=client._session_id, action=[Event(int64_value=action)],
                              observation_space=[s.index for s in wire])
        return client.service(client.service.stub.Step, request)

    replay(env.step)  # warm: every step is then in the service's memory cache
    calls: dict[str, Callable[[int], Any]] = {
        "gym": env.step,
        "env": gym_env.step,
        "client": lambda a: client.step(a, observation_spaces=spaces, reward_spaces=[client.reward_space]),
        "rpc": raw,
        "empty": lambda a: client.service(client.service.stub.GetVersion, GetVersionRequest()),
    }
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(_ROUNDS):  # layers in turn, so that the machine's load falls on each alike
        for name, call in calls.items():
            times[name] += replay(call)
    layers = {name: _median_ms(values) for name, values in times.items()}
    profiler = cProfile.Profile()
    profiled = 0
    for seed, actions in episodes:
        env.reset(seed=seed)
        profiler.enable()
        for action in actions:
            env.step(action)
        profiler.disable()
        profiled += len(actions)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    by_package: dict[str, float] = {}
    functions = []
    for (filename, line, function), (_, _, own, _, _) in stats.items():
        package = _package(filename)
        by_package[package] = by_package.get(package, 0.0) + own
        functions.append((own, f"{function} ({'/'.join(Path(filename).parts[-2:])}:{line})"))
    packages = sorted(((p, s * 1000 / profiled) for p, s in by_package.items()), key=lambda x: -x[1])
    top = [(name, own * 1000 / profiled) for own, name in sorted(functions, reverse=True)[:12]]
    return layers, packages, top, profiled


def _service_layers(args: Any, client: Any, episodes: list[tuple[int, list[int]]], uris: list[str]) -> dict[str, float]:
    from compiler_gym.service.proto import StepReply as ClientStepReply

    from xla_service.catalog.passes import PASS_NAMES
    from xla_service.passes.engine import Engine
    from xla_service.proto import (
        Benchmark,
        EndSessionRequest,
        Event,
        StartSessionRequest,
        StepRequest,
    )
    from xla_service.runtime.servicer import CompilerGymServicer
    from xla_service.session import xla_session
    from xla_service.session.observations import OBSERVATION_SPACES
    from xla_service.store import open_store

    try:  # what the client parses replies with
        from xla_service.env.replies import parse_step_reply as parse_reply
    except ImportError:
        parse_reply = ClientStepReply.FromString
    store = open_store(str(args.store))
    engine = Engine(workers=1, backing=store)
    xla_session.configure_engine(lambda: engine)
    servicer = CompilerGymServicer(Path(tempfile.mkdtemp(prefix="xla-gym-bench-warm-service-")), xla_session.XlaSession)
    context = _Context()
    index = {space.name: i for i, space in enumerate(OBSERVATION_SPACES)}
    wanted = ["OpcodeCounts", "OpCount", "PassError"]
    programs = {uri: Benchmark.FromString(client.datasets.benchmark(uri).proto.SerializeToString()) for uri in set(uris)}
    times: dict[str, list[float]] = {k: [] for k in ("servicer", "servicer_bare", "apply", "observe", "store", "apply_store",
                                                     "serialize", "parse", "start")}

    def clock(key: str, call: Callable[..., Any], *arguments: Any) -> Any:
        start = time.perf_counter()
        value = call(*arguments)
        times[key].append(time.perf_counter() - start)
        return value

    def parse(data: bytes) -> list[Any]:
        reply = parse_reply(data)
        return [client.observation.spaces[n].translate(e) for n, e in zip(wanted, reply.observation)]

    def observe(session: Any) -> list[Any]:
        encode = getattr(session, "get_observation_bytes", None)  # what the servicer calls
        if encode is None:
            return [session.get_observation(OBSERVATION_SPACES[index[n]]).SerializeToString() for n in wanted]
        return [encode(OBSERVATION_SPACES[index[n]]) for n in wanted]

    def apply(state: Any, name: str) -> Any:
        try:
            return engine.apply(state, name)
        except ValueError:  # XLA's failure, kept as such: a step without effect
            return state

    def replay(observations: list[int], key: str | None) -> None:
        for (_, actions), uri in zip(episodes, uris):
            started = clock("start", servicer.StartSession, StartSessionRequest(benchmark=programs[uri]), context)
            for action in actions:
                request = StepRequest(session_id=started.session_id, action=[Event(int64_value=action)], observation_space=observations)
                reply = clock(key, servicer.Step, request, context) if key else servicer.Step(request, context)
                if key == "servicer":
                    clock("parse", parse, clock("serialize", reply.SerializeToString))
            servicer.EndSession(EndSessionRequest(session_id=started.session_id), context)

    try:
        replay([index[n] for n in wanted], None)  # warm
        times["start"].clear()
        replay([index[n] for n in wanted], "servicer")
        replay([], "servicer_bare")
        for (_, actions), uri in zip(episodes, uris):
            session = xla_session.XlaSession(servicer.working_directory, servicer.action_spaces[0], programs[uri], engine)
            for action in actions:
                state = session.state
                clock("apply", session.apply_action, Event(int64_value=action))
                clock("observe", observe, session)
                if store is not None:
                    clock("store", store.get, ("step", state.digest, PASS_NAMES[action]))
                engine.cache.clear()
                clock("apply_store", apply, state, PASS_NAMES[action])
    finally:
        servicer.close_all()
        engine.close()
    return {**{key: _median_ms(values) for key, values in times.items()},
            **{f"{key}_mean": _mean_ms(values) for key, values in times.items()}}


def profile_layers(args: Any, make_env: Callable[[Any], Any], actions_of: Callable[[int, int, int], list[int]]) -> dict[str, Any]:
    import xla_service.gym  # noqa: F401  (registers xla-v0)

    episodes = [(args.seed + i, actions_of(args.seed, i, args.steps)) for i in range(args.episodes)]
    env = make_env(args)
    try:
        uris = [env.reset(seed=seed)[1]["benchmark"] for seed, _ in episodes]
        client, packages, functions, profiled = _client_layers(env, episodes)
        service = _service_layers(args, env.unwrapped.compiler_env, episodes, uris)
    finally:
        env.close()
    c = client
    layers = [
        ("Gymnasium env.step (gymnasium.make's wrappers)", c["gym"], "what an agent calls"),
        ("XlaGymEnv.step", c["env"], "action mask, observation conversion, info"),
        ("CompilerGym client step", c["client"], "XlaEnv.step with the env's spaces and reward"),
        ("gRPC Step, the same request", c["rpc"], "stub call: no client logic"),
        ("gRPC GetVersion", c["empty"], "an empty round trip: the floor of any RPC"),
        ("service: servicer.Step (in process)", service["servicer"], "session step, observations, reply"),
        ("service: servicer.Step without observations", service["servicer_bare"], "session step and reply"),
        ("service: session.apply_action", service["apply"], "the engine's lookup, memory cache"),
        ("service: the three observations", service["observe"], "OpcodeCounts, OpCount, PassError, serialized"),
        ("engine.apply, from the store", service["apply_store"], "memory cache cleared: what a fresh service pays"),
        ("  the same, mean", service["apply_store_mean"], "a changed step also decodes its state (text, digest)"),
        ("store.get of the step", service["store"], "SQLite read and checksum, the state decoded if changed"),
        ("reply serialization (service)", service["serialize"], "the reply's bytes, as gRPC sends them"),
        ("reply parse + translation (client)", service["parse"], "as the client parses it, observations to numpy"),
        ("service: StartSession (in process)", service["start"], "a reset's session start, benchmark known"),
    ]
    handler = service["servicer"]
    split = [
        ("Gymnasium wrappers", c["gym"] - c["env"]),
        ("XlaGymEnv (mask, conversion, info)", c["env"] - c["client"]),
        ("CompilerGym client (request, translation, reward)", c["client"] - c["rpc"]),
        ("gRPC round trip, empty", c["empty"]),
        ("reply (de)serialization", service["serialize"] + service["parse"]),
        ("service handler: engine lookup and session", service["apply"]),
        ("service handler: observations", service["observe"]),
        ("service handler: the rest (servicer, reply)", max(handler - service["apply"] - service["observe"], 0.0)),
        ("rest of the Step RPC (request, hand-offs)", c["rpc"] - c["empty"] - handler - service["serialize"] - service["parse"]),
    ]
    return {"layers": layers, "split": split, "packages": packages, "functions": functions, "profiled_steps": profiled}
