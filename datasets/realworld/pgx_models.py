"""pgx board games: a batch of ``env.step`` calls on legal random actions
(``vmap``), one step or a ``lax.scan`` of steps; the state and key are arguments."""
from __future__ import annotations

from xla_gym_datasets.realworld.spec import LibraryInfo, Spec

__all__ = ["INFO", "specs", "GAMES"]

GAMES = ("tic_tac_toe", "connect_four", "othello", "hex", "go_9x9", "backgammon", "2048", "animal_shogi",
         "gardner_chess", "kuhn_poker", "leduc_holdem", "chess", "sparrow_mahjong", "minatar-breakout")

INFO = LibraryInfo(
    name="pgx",
    distributions=("pgx",),
    license="Apache-2.0",
    homepage="https://github.com/sotetsuk/pgx",
    description="pgx game environments: batched steps and lax.scan playouts with legal random actions",
    validation=("othello", "leduc_holdem"),
    test=("go_9x9", "animal_shogi", "2048"),
)


def _build(game: str, steps: int, batch: int):
    import jax
    import jax.numpy as jnp
    import pgx

    env = pgx.make(game)
    keys = jax.random.split(jax.random.PRNGKey(0), batch)
    state = jax.vmap(env.init)(keys)

    def act(key, state):
        logits = jnp.where(state.legal_action_mask, 0.0, -1e9)
        return jax.random.categorical(key, logits)

    def play(state, key):
        def body(state, k):
            ka, ks = jax.random.split(k)
            action = jax.vmap(act)(jax.random.split(ka, batch), state)
            state = jax.vmap(env.step)(state, action, jax.random.split(ks, batch))
            return state, state.rewards

        return jax.lax.scan(body, state, jax.random.split(key, steps))

    return play, (state, jax.random.PRNGKey(1))


def specs() -> list[Spec]:
    out = []
    for game in GAMES:
        for steps, batch in ((1, 1), (1, 16), (8, 16)):
            out.append(Spec(f"{game}-t{steps}-b{batch}", game, "step",
                            {"model": game, "game": game, "steps": steps, "batch": batch, "actions": "uniform legal"},
                            lambda g=game, s=steps, b=batch: _build(g, s, b), f"pgx.make({game!r}).step"))
    return out
