"""``XlaGymEnv``: xla-v0 as a Gymnasium 1.x environment.

>>> import gymnasium
>>> env = gymnasium.make("xla_service.gym:xla-v0", benchmarks="xla-gpt2-v0:train", max_episode_steps=20)
>>> observation, info = env.reset(seed=0)
>>> observation, reward, terminated, truncated, info = env.step(env.action_space.sample())

It drives CompilerGym's client (``xla_service.env.XlaEnv``) over the same
service, so the two share the engine, its cache and the experience store.

- **Benchmarks**: a list of URIs or of your own modules (``Benchmark``s such as
  ``benchmark_from_jax(fn, *args)``, HLO text, HLO text files: ``gym/benchmarks.py``),
  or ``"PART,..."`` where a part is a
  ``SUITE[:SPLIT]`` or a URI (e.g. ``"xla-gpt2-v0:train,xla-bert-v0:train"``,
  ``"xla-unet-v0:heldout"``, ``"xla-gpt2-v0,generator://xla-random-v0/0-999"``);
  a generator URI names seeds (``"generator://xla-random-v0"``: every seed, drawn by the env's
  seeded RNG; ``"generator://xla-random-v0/0-999"``: a range). ``reset(seed=s)``
  seeds the draw: the same seed gives the same sequence of benchmarks;
  ``reset(options={"benchmark": uri})`` picks one.
- **Observation**: one xla-v0 observation space, or a list of them (a
  ``Dict``); ``HloGraph`` is a Gymnasium ``Graph`` (``gym/spaces.py``).
- **Action**: ``Discrete(64)``, the passes in ``action_names`` order; with
  ``stop_action=True`` a 65th action ends the episode (``terminated``), as
  X-RLflow's No-Op.
- **Reward**: an xla-v0 reward space (default ``OpCount``), divided by the
  benchmark's initial op count with ``reward_scale="initial"``.
- **Episodes**: ``truncated`` after ``max_episode_steps`` (None: never);
  ``terminated`` by the stop action or when the service ends the episode.
- **info**: ``benchmark``, ``pass`` (name), ``changed``, ``pass_error``
  (XLA's message, "" if none) and ``action_mask`` (int8, 1 = allowed; the stop
  action is always 1), also ``action_masks()`` (bool, sb3-contrib's
  ``MaskablePPO`` reads it). Which passes it masks, ``mask=``:

  - ``"episode"`` (default): those this episode tried at this state and saw
    change nothing or fail (cleared when a pass changes the module). It follows
    only the episode's own steps, so seeded runs repeat on any machine and store.
  - ``"known"`` (opt-in): those known, from the service's cache or the
    experience store, to change nothing or fail at this state, even if this
    episode never tried them there. The mask follows what the store holds:
    two runs with the same seed act alike only if their stores know the same.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from xla_service.catalog.passes import PASS_NAMES
from xla_service.gym.remote import RemoteEnv
from xla_service.gym.render import text_frame
from xla_service.gym.spaces import Converter, converter

__all__ = ["MASKS", "RENDER_MODES", "XlaGymEnv", "resolve_benchmarks"]

_OUTCOMES = "PassOutcomes"
#: The ``mask=`` values: where ``info["action_mask"]`` learns which passes to rule out.
MASKS = ("known", "episode")
#: ``render_mode=`` values (None: no render).
RENDER_MODES = ("ansi", "rgb_array")


def resolve_benchmarks(benchmarks: None | str | Sequence[str], split: str = "train") -> Sequence[str]:
    """Benchmark URIs from a list, a URI, or ``"PART,PART,..."`` where a part is a
    ``SUITE[:SPLIT]`` (default split: ``split``) or a URI.

    A generator URI names seeds lazily (``env/generator.py``): ``generator://xla-random-v0``
    every seed, ``generator://xla-random-v0/0-999`` a range (inclusive), in a list or
    mixed with suites (``"xla-gpt2-v0:train,generator://xla-random-v0/0-999"``).
    """
    from xla_service.env.datasets import default_benchmark_uri, split_benchmark_uris
    from xla_service.env.generator import SeedUris, UriChain, generator_uris

    if benchmarks is None:
        return [default_benchmark_uri()]
    if isinstance(benchmarks, (SeedUris, UriChain)):  # resolved already, lazily
        return benchmarks
    parts: list[Sequence[str]] = []
    if not isinstance(benchmarks, str):
        parts = [generator_uris(str(b)) or [str(b)] for b in benchmarks]
    else:
        for part in (p.strip() for p in benchmarks.split(",") if p.strip()):
            if "://" in part:
                parts.append(generator_uris(part) or [part])
            else:
                suite, _, suite_split = part.partition(":")
                parts.append(split_benchmark_uris(suite_split or split, [suite]))
    uris: Sequence[str] = parts[0] if len(parts) == 1 else UriChain(parts)
    if not uris:
        raise ValueError(f"Expected at least one benchmark, got none from {benchmarks!r}")
    return uris


class XlaGymEnv(gymnasium.Env):
    """xla-v0 through Gymnasium's API (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 1}

    def __init__(
        self,
        benchmarks: None | str | Sequence[str] = None,
        observation: str | Sequence[str] = "OpcodeCounts",
        reward: str = "OpCount",
        reward_scale: str | None = None,
        max_episode_steps: int | None = 20,
        stop_action: bool = False,
        mask: str = "episode",
        service: str | None = None,
        render_mode: str | None = None,
        **make_kwargs: Any,
    ) -> None:
        if max_episode_steps is not None and max_episode_steps < 1:
            raise ValueError(f"Expected max_episode_steps >= 1 or None, got {max_episode_steps}")
        if reward_scale not in (None, "initial"):
            raise ValueError(f"Expected reward_scale None or 'initial', got {reward_scale!r}")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"Expected render_mode None or one of {RENDER_MODES}, got {render_mode!r}")
        if mask not in MASKS:
            raise ValueError(f"Expected mask one of {MASKS}, got {mask!r}")
        from xla_service.gym.benchmarks import own_benchmarks  # imports compiler_gym

        named, self._own = own_benchmarks(benchmarks)
        self.benchmarks = resolve_benchmarks(named)
        names = [observation] if isinstance(observation, str) else list(observation)
        self._converters: dict[str, Converter] = {name: converter(name) for name in names}
        self._single = isinstance(observation, str)
        self.observation_space = (
            self._converters[names[0]].space
            if self._single
            else spaces.Dict({n: c.space for n, c in self._converters.items()})
        )
        self.stop_action = stop_action
        self.action_names: tuple[str, ...] = PASS_NAMES + (("stop",) if stop_action else ())
        self.action_space = spaces.Discrete(len(self.action_names))
        self.max_episode_steps = max_episode_steps
        self.reward_scale = reward_scale
        self.render_mode = render_mode
        self.mask = mask
        # what every reset and step asks the service for: the observations, then what the mask reads
        self._spaces = [c.source for c in self._converters.values()] + ([_OUTCOMES] if mask == "known" else [])
        from xla_service.env.xla_env import forked_after_grpc

        self._remote: RemoteEnv | None = None
        self.env: Any = None
        if forked_after_grpc():  # gRPC does not survive fork(): run the env afresh (gym/remote.py)
            self._remote = RemoteEnv({
                "benchmarks": benchmarks, "observation": observation, "reward": reward,
                "reward_scale": reward_scale, "max_episode_steps": max_episode_steps,
                "stop_action": stop_action, "mask": mask, "service": service,
                "render_mode": render_mode, **make_kwargs,
            })
        else:
            import compiler_gym

            self.env = compiler_gym.make(
                "xla-v0",
                benchmark=self._as_benchmark(self.benchmarks[0]),
                observation_space=None,
                reward_space=reward,
                **({"service": service} if service else {}),
                **make_kwargs,
            )
        self._scale = 1.0
        self._steps = 0
        self._benchmark = self.benchmarks[0]
        self._mask = np.ones(len(self.action_names), dtype=np.int8)
        self._futile: set[int] = set()  # mask="episode": passes seen to change nothing at this state

    # ---------------------------------------------------------------- Gymnasium

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if self._remote is not None:
            return self._forward("reset", seed=seed, options=options)  # type: ignore[no-any-return]
        benchmark = (options or {}).get("benchmark") or self.benchmarks[
            int(self.np_random.integers(len(self.benchmarks)))
        ]
        self.env.reset(benchmark=self._as_benchmark(benchmark))
        self._benchmark = str(getattr(benchmark, "uri", benchmark))  # a URI, or a Benchmark
        self._steps = 0
        self._futile.clear()
        # One round trip: the observations, and what the reward and the scale start from.
        reward = self.env.reward_space
        starts = tuple(getattr(reward, "initial_spaces", ()))
        initial = [*starts, *(("OpCountInitial",) if self.reward_scale else ())]
        names = list(dict.fromkeys([*self._spaces, *initial]))
        values = dict(zip(names, self.env.observations(names)))
        if starts:
            reward.start({name: values[name] for name in starts})
        self._scale = float(max(values["OpCountInitial"], 1)) if self.reward_scale else 1.0
        observation, outcomes = self._split([values[n] for n in self._spaces])
        return observation, self._info(None, False, "", outcomes)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        index = int(action)
        if not 0 <= index < len(self.action_names):
            raise ValueError(f"Expected an action in [0, {len(self.action_names)}), got {action!r}")
        if self._remote is not None:
            return self._forward("step", index)  # type: ignore[no-any-return]
        self._steps += 1
        truncated = self.max_episode_steps is not None and self._steps >= self.max_episode_steps
        if self.stop_action and index == len(PASS_NAMES):
            observation, outcomes = self._observe()
            return observation, 0.0, True, truncated, self._info("stop", False, "", outcomes)
        values, reward, done, info = self.env.step(
            index, observation_spaces=self._spaces, reward_spaces=[self.env.reward_space]
        )
        if done and "error_details" in info:  # the service is gone: CompilerGym's convention
            raise RuntimeError(f"The xla-v0 service ended the episode: {info['error_details']}")
        observation, outcomes = self._split(values)
        changed = not info.get("action_had_no_effect", False)
        if changed:
            self._futile.clear()
        else:
            self._futile.add(index)
        self.env.episode_reward = (self.env.episode_reward or 0.0) + float(reward[0])
        scaled = float(reward[0]) / self._scale
        return observation, scaled, bool(done), truncated, self._info(
            PASS_NAMES[index], changed, info.get("pass_error", ""), outcomes
        )

    def render(self) -> Any:
        """``"ansi"``: the benchmark and the passes so far; ``"rgb_array"``: that text
        drawn in an ``H x W x 3`` uint8 frame (``gym/render.py``)."""
        if self.render_mode is None:
            return None
        if self._remote is not None:
            return self._remote.call("render")
        text = f"{self._benchmark} after {self._steps} steps: {self.env.commandline()}"
        return text if self.render_mode == "ansi" else text_frame(text)

    def close(self) -> None:
        if self._remote is not None:
            self._remote.close()
        if self.env is not None:
            self.env.close()
        super().close()

    # -------------------------------------------------------------- the rest

    @property
    def action_mask(self) -> np.ndarray:
        """1 for the actions worth trying at the current state (see the module docstring)."""
        return self._mask.copy()

    def action_masks(self) -> np.ndarray:
        """:attr:`action_mask` as booleans: what sb3-contrib's ``MaskablePPO`` asks for."""
        return self._mask.astype(bool)

    @property
    def remote(self) -> bool:
        """Whether the env runs in a child interpreter: this process was forked after
        gRPC ran in its parent (``gym/remote.py``)."""
        return self._remote is not None

    @property
    def compiler_env(self) -> Any:
        """The CompilerGym env underneath (``commandline()``, ``state``, ``validate()``...)."""
        if self._remote is not None:
            raise RuntimeError(
                "Expected the CompilerGym env in this process, got it in another interpreter: "
                "this process was forked after gRPC ran here (gym/remote.py); start it with "
                "the 'forkserver' or 'spawn' method to reach compiler_env"
            )
        return self.env

    def _forward(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``name`` called on the env in the other interpreter; its mask and benchmark kept here."""
        assert self._remote is not None
        result = self._remote.call(name, *args, **kwargs)
        info = result[-1]
        self._mask[:] = info["action_mask"]
        self._benchmark = info["benchmark"]
        return result

    def _as_benchmark(self, benchmark: Any) -> Any:
        """A URI of one of your own modules as its ``Benchmark``; anything else as it is."""
        return self._own.get(benchmark, benchmark) if isinstance(benchmark, str) else benchmark

    def _observe(self) -> tuple[Any, Any]:
        return self._split(self.env.observations(self._spaces))

    def _split(self, values: Sequence[Any]) -> tuple[Any, Any]:
        """The values of ``self._spaces`` as (observation, ``PassOutcomes`` or None: mask="episode")."""
        n = len(self._converters)
        return self._convert(values[:n]), values[n] if len(values) > n else None

    def _convert(self, values: Sequence[Any]) -> Any:
        converted = {name: c.convert(v) for (name, c), v in zip(self._converters.items(), values)}
        return next(iter(converted.values())) if self._single else converted

    def _info(self, name: str | None, changed: bool, error: str, outcomes: Any) -> dict[str, Any]:
        """``info``; ``outcomes`` is ``PassOutcomes`` (mask="known") or None (mask="episode")."""
        if outcomes is None:
            self._mask[: len(PASS_NAMES)] = 1
            self._mask[list(self._futile)] = 0
        else:
            known = np.asarray(outcomes, dtype=np.int64)
            self._mask[: len(PASS_NAMES)] = (known != 2) & (known != 3)
        return {
            "benchmark": self._benchmark,
            "pass": name,
            "changed": changed,
            "pass_error": error,
            "action_mask": self._mask.copy(),
        }
