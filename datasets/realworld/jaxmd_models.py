"""jax-md simulations: energies (Lennard-Jones, soft sphere, Morse) in a
periodic box, with and without neighbor lists (cell lists: sorts, scatters),
integrated by ``simulate.nve`` / ``nvt_nose_hoover`` / ``brownian`` or
minimized by ``minimize.fire_descent``, ``lax.fori_loop`` of steps; the
positions (and neighbor list) are arguments."""
from __future__ import annotations

from xla_gym_datasets.realworld.spec import LibraryInfo, Spec

__all__ = ["INFO", "specs"]

INFO = LibraryInfo(
    name="jaxmd",
    distributions=("jax-md",),
    license="Apache-2.0",
    homepage="https://github.com/jax-md/jax-md",
    description="jax-md molecular dynamics and minimization steps, pair energies with and without neighbor lists",
    validation=("morse",),
    test=("soft-sphere",),
)


def _build(energy_name: str, method: str, n: int, steps: int, neighbor: bool):
    import jax
    import jax.numpy as jnp
    from jax_md import energy, minimize, partition, simulate, space

    box = float(n) ** (1 / 2) * 1.5
    disp, shift = space.periodic(box)
    R = jax.random.uniform(jax.random.PRNGKey(0), (n, 2)) * box
    fmt = partition.Sparse if neighbor else None
    if energy_name == "lj":
        maker = energy.lennard_jones_neighbor_list if neighbor else energy.lennard_jones_pair
    elif energy_name == "soft-sphere":
        maker = energy.soft_sphere_neighbor_list if neighbor else energy.soft_sphere_pair
    else:
        maker = energy.morse_neighbor_list if neighbor else energy.morse_pair
    if neighbor:
        nbr_fn, energy_fn = maker(disp, box, format=fmt)
        nbrs = nbr_fn.allocate(R)
    else:
        energy_fn = maker(disp)
    if method == "fire":
        init, apply = minimize.fire_descent(energy_fn, shift)
    elif method == "nve":
        init, apply = simulate.nve(energy_fn, shift, 1e-3)
    elif method == "nvt":
        init, apply = simulate.nvt_nose_hoover(energy_fn, shift, 1e-3, kT=0.1)
    else:
        init, apply = simulate.brownian(energy_fn, shift, 1e-3, kT=0.1)
    key = jax.random.PRNGKey(1)
    extra = {"kT": 0.1} if method == "nve" else {}

    if neighbor:
        def run(R, nbrs, key):
            if method == "fire":
                state = init(R, neighbor=nbrs)
            elif method == "brownian":  # its init takes no neighbor list
                state = init(key, R)
            else:
                state = init(key, R, neighbor=nbrs, **extra)

            def body(i, c):
                state, nbrs = c
                nbrs = nbrs.update(state.position)
                return apply(state, neighbor=nbrs), nbrs

            state, nbrs = jax.lax.fori_loop(0, steps, body, (state, nbrs))
            return state.position, nbrs.did_buffer_overflow

        return run, (R, nbrs, key)

    def run_dense(R, key):
        state = init(key, R, **extra) if method != "fire" else init(R)
        state = jax.lax.fori_loop(0, steps, lambda i, s: apply(s), state)
        return state.position, energy_fn(state.position)

    del jnp
    return run_dense, (R, key)


def specs() -> list[Spec]:
    out = []
    for energy_name in ("lj", "soft-sphere", "morse"):
        for method in ("nve", "nvt", "brownian", "fire"):
            for n in (64, 256):
                for neighbor in (False, True):
                    if energy_name == "morse" and neighbor:
                        continue  # jax-md 0.2.29: morse_neighbor_list's metadata is not hashable under jit
                    nb = "nbr" if neighbor else "dense"
                    out.append(Spec(f"{energy_name}-{method}-{nb}-n{n}-t10", energy_name, "step",
                                    {"model": energy_name, "method": method, "particles": n, "dim": 2, "steps": 10,
                                     "neighbor_list": neighbor},
                                    lambda e=energy_name, m=method, nn=n, b=neighbor: _build(e, m, nn, 10, b),
                                    f"jax_md.{'minimize.fire_descent' if method == 'fire' else 'simulate.' + method}"))
    return out
