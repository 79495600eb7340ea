"""diffrax ODE/SDE solves: ``diffeqsolve`` with explicit Runge-Kutta, implicit
(Kvaerno: Newton solves inside) and SDE solvers, adaptive (PID controller:
``while`` loops with rejected steps) or constant steps; neural ODEs (an
equinox MLP vector field) inferred and trained through the solve."""
from __future__ import annotations

from xla_gym_datasets.realworld.spec import LibraryInfo, Spec, optax_train_step, optimizer

__all__ = ["INFO", "specs"]

INFO = LibraryInfo(
    name="diffrax",
    distributions=("diffrax", "equinox", "lineax", "optimistix", "optax"),
    license="Apache-2.0",
    homepage="https://github.com/patrick-kidger/diffrax",
    description="diffrax ODE/SDE solves (explicit, implicit, stochastic; adaptive and constant steps), neural ODE training",
    validation=("robertson",),
    test=("neural-ode",),
)

EXPLICIT = ("Euler", "Heun", "Midpoint", "Ralston", "Bosh3", "Tsit5", "Dopri5", "Dopri8")
IMPLICIT = ("ImplicitEuler", "Kvaerno3", "Kvaerno4", "Kvaerno5")


def _solve(term, solver_name: str, y0, args, adaptive: bool, t1: float, max_steps: int = 256):
    import diffrax

    solver = getattr(diffrax, solver_name)()
    controller = (diffrax.PIDController(rtol=1e-4, atol=1e-6) if adaptive else diffrax.ConstantStepSize())
    return diffrax.diffeqsolve(term, solver, 0.0, t1, 0.01 if not adaptive else None, y0, args=args,
                               stepsize_controller=controller, max_steps=max_steps,
                               saveat=diffrax.SaveAt(t1=True)).ys


def _lotka(solver: str, adaptive: bool):
    import diffrax
    import jax.numpy as jnp

    def f(t, y, a):
        x, z = y[0], y[1]
        return jnp.stack([a[0] * x - a[1] * x * z, a[3] * x * z - a[2] * z])

    return (lambda y0, a: _solve(diffrax.ODETerm(f), solver, y0, a, adaptive, 1.0)), (
        jnp.array([10.0, 10.0]), jnp.array([0.1, 0.02, 0.4, 0.02]))


def _robertson(solver: str, adaptive: bool):
    import diffrax
    import jax.numpy as jnp

    def f(t, y, k):
        y1, y2, y3 = y
        return jnp.stack([-k[0] * y1 + k[2] * y2 * y3, k[0] * y1 - k[1] * y2**2 - k[2] * y2 * y3, k[1] * y2**2])

    return (lambda y0, k: _solve(diffrax.ODETerm(f), solver, y0, k, adaptive, 1.0)), (
        jnp.array([1.0, 0.0, 0.0]), jnp.array([0.04, 3e7, 1e4]))


def _neural_ode(solver: str, adaptive: bool, width: int, mode: str):
    import diffrax
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    mlp = eqx.nn.MLP(4, 4, width, 2, activation=jax.nn.softplus, key=jax.random.PRNGKey(0))
    params, static = eqx.partition(mlp, eqx.is_array)
    term = diffrax.ODETerm(lambda t, y, p: eqx.combine(p, static)(y))
    y0 = jnp.ones((8, 4))

    def forward(p, y0):
        return jax.vmap(lambda y: _solve(term, solver, y, p, adaptive, 1.0, max_steps=64))(y0)

    if mode == "infer":
        return forward, (params, y0)
    o = optimizer("adam")
    target = jnp.zeros((8, 1, 4))
    return optax_train_step(lambda p, y0, t: jnp.mean((forward(p, y0) - t) ** 2), o), (params, o.init(params), y0, target)


def _sde(solver: str, dim: int):
    import diffrax
    import jax
    import jax.numpy as jnp

    def run(y0, theta, key):
        bm = diffrax.VirtualBrownianTree(0.0, 1.0, tol=1e-3, shape=(dim,), key=key)
        terms = diffrax.MultiTerm(diffrax.ODETerm(lambda t, y, a: -a[0] * y),
                                  diffrax.ControlTerm(lambda t, y, a: a[1] * jnp.eye(dim), bm))
        return diffrax.diffeqsolve(terms, getattr(diffrax, solver)(), 0.0, 1.0, 0.05, y0, args=theta,
                                   saveat=diffrax.SaveAt(t1=True)).ys

    return run, (jnp.ones(dim), jnp.array([0.5, 0.3]), jax.random.PRNGKey(0))


def specs() -> list[Spec]:
    out: list[Spec] = []

    def add(name, model, mode, config, build, function):
        out.append(Spec(name, model, mode, {"model": model, "mode": mode, **config}, build, function))

    for solver in EXPLICIT + IMPLICIT:
        for adaptive in (True, False):
            # Euler has no error estimate (no adaptive steps); the implicit solvers
            # take their Newton tolerances from the PID controller (no constant steps).
            if (solver == "Euler" and adaptive) or (solver in IMPLICIT and not adaptive):
                continue
            ctl = "pid" if adaptive else "const"
            add(f"lotka-volterra-{solver.lower()}-{ctl}", "lotka-volterra", "step",
                {"solver": solver, "controller": ctl, "t1": 1.0}, lambda s=solver, a=adaptive: _lotka(s, a),
                f"diffrax.diffeqsolve+{solver}")
    for solver in ("Tsit5", "Dopri5") + IMPLICIT:
        add(f"robertson-{solver.lower()}-pid", "robertson", "step", {"solver": solver, "controller": "pid", "t1": 1.0},
            lambda s=solver: _robertson(s, True), f"diffrax.diffeqsolve+{solver}")
    for solver in ("Euler", "Heun", "Tsit5", "Dopri5", "Kvaerno5"):
        for adaptive in (True, False):
            if (solver == "Euler" and adaptive) or (solver in IMPLICIT and not adaptive):
                continue
            for width in (16, 64):
                # Training through the solve: XLA's CPU compiler aborts the process
                # (ir_array.cc, ShapeIsCompatible) on the normalized module, in the
                # default pipeline too, so the service would: inference only.
                for mode in ("infer",):
                    ctl = "pid" if adaptive else "const"
                    add(f"neural-ode-{solver.lower()}-{ctl}-w{width}-{mode}", "neural-ode", mode,
                        {"solver": solver, "controller": ctl, "width": width, "batch": 8, "optimizer": "adam" if mode == "train" else None},
                        lambda s=solver, a=adaptive, w=width, m=mode: _neural_ode(s, a, w, m),
                        f"diffrax.diffeqsolve+{solver}+equinox.nn.MLP")
    for solver in ("Euler", "Heun", "EulerHeun", "ReversibleHeun", "Midpoint"):
        for dim in (4, 32):
            add(f"sde-ou-{solver.lower()}-n{dim}", "sde-ou", "step", {"solver": solver, "dim": dim, "brownian": "VirtualBrownianTree"},
                lambda s=solver, d=dim: _sde(s, d), f"diffrax.diffeqsolve+{solver}+VirtualBrownianTree")
    return out
