"""gymnax environments (classic control, MinAtar, bsuite): ``reset`` then
``step`` under random actions, one step or a ``lax.scan`` rollout, batched
with ``vmap``; the key and the environment parameters are arguments."""
from __future__ import annotations

from xla_gym_datasets.realworld.spec import LibraryInfo, Spec

__all__ = ["INFO", "specs", "ENVS"]

# MNISTBandit-bsuite is left out: it downloads MNIST at construction.
ENVS = ("CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0",
        "Breakout-MinAtar", "Asterix-MinAtar", "Freeway-MinAtar", "SpaceInvaders-MinAtar",
        "Catch-bsuite", "DeepSea-bsuite", "MemoryChain-bsuite", "UmbrellaChain-bsuite",
        "DiscountingChain-bsuite", "SimpleBandit-bsuite", "FourRooms-misc",
        "MetaMaze-misc", "PointRobot-misc", "BernoulliBandit-misc", "GaussianBandit-misc")

INFO = LibraryInfo(
    name="gymnax",
    distributions=("gymnax",),
    license="Apache-2.0",
    homepage="https://github.com/RobertTLange/gymnax",
    description="gymnax environment steps and lax.scan rollouts (classic control, MinAtar, bsuite, misc)",
    validation=("Acrobot-v1", "Freeway-MinAtar", "DeepSea-bsuite", "MetaMaze-misc"),
    test=("Pendulum-v1", "Asterix-MinAtar", "MemoryChain-bsuite", "FourRooms-misc", "GaussianBandit-misc"),
)


def _build(env_id: str, steps: int, batch: int):
    import gymnax
    import jax

    env, params = gymnax.make(env_id)

    def rollout(key, params):
        k0, k1 = jax.random.split(key)
        _, state = env.reset(k0, params)

        def body(carry, k):
            state, total = carry
            ka, ks = jax.random.split(k)
            action = env.action_space(params).sample(ka)
            obs, state, reward, _, _, _ = env.step(ks, state, action, params)
            return (state, total + reward), obs

        (state, total), obs = jax.lax.scan(body, (state, 0.0), jax.random.split(k1, steps))
        return total, obs[-1]

    def batched(keys, params):
        return jax.vmap(rollout, in_axes=(0, None))(keys, params)

    keys = jax.random.split(jax.random.PRNGKey(0), batch)
    return batched, (keys, params)


def specs() -> list[Spec]:
    out = []
    for env_id in ENVS:
        for steps, batch in ((1, 1), (16, 8), (64, 32)):
            out.append(Spec(f"{env_id}-t{steps}-b{batch}", env_id, "step",
                            {"model": env_id, "env": env_id, "steps": steps, "batch": batch, "actions": "uniform random"},
                            lambda e=env_id, s=steps, b=batch: _build(e, s, b), f"gymnax.make({env_id!r}).step"))
    return out
