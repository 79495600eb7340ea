"""Each main pass, alone, on a small hand-written module that it must change.

Every module is HLO text written for one pass, checked to survive
normalization (``xla.load``) in the respect that matters, then run through
``xla.run_pass`` with ``catalog.get_pass(name)``. An unrelated pass on the
same module must leave it unchanged (``None``): passes really run alone.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from xla_service.catalog.passes import get_pass
from xla_service.passes import xla
from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import Engine

from . import _helpers
from ._helpers import computations, entry_opcodes

# ----------------------------------------------------------------------------- modules

ALGSIMP = """HloModule algsimp
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  n0 = f32[4] negate(p0)
  n1 = f32[4] negate(n0)
  ROOT a = f32[4] add(n1, p1)
}
"""

CSE = """HloModule cse
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  a = f32[4] add(p0, p1)
  b = f32[4] add(p0, p1)
  ROOT m = f32[4] multiply(a, b)
}
"""

# A dead pure instruction is already gone after normalization (see
# test_normalization_removes_dead_instructions); a dead `call` survives it.
DCE = """HloModule dce
sq {
  x = f32[4] parameter(0)
  ROOT m = f32[4] multiply(x, x)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  dead = f32[4] call(p0), to_apply=sq
  ROOT r = f32[4] add(p0, p0)
}
"""

CALL_INLINER = """HloModule call_inliner
sq {
  x = f32[4] parameter(0)
  ROOT m = f32[4] multiply(x, x)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  c = f32[4] call(p0), to_apply=sq
  ROOT a = f32[4] add(c, p0)
}
"""

# Normalization folds arithmetic on constants itself, but not on an iota.
CONSTANT_FOLDING = """HloModule constant_folding
ENTRY main {
  p0 = f32[4] parameter(0)
  c = f32[4] constant({1, 2, 3, 4})
  i = f32[4] iota(), iota_dimension=0
  s = f32[4] add(i, c)
  ROOT m = f32[4] multiply(p0, s)
}
"""

RESHAPE_MOVER = """HloModule reshape_mover
ENTRY main {
  p0 = f32[2,8] parameter(0)
  p1 = f32[2,8] parameter(1)
  r0 = f32[16] reshape(p0)
  r1 = f32[16] reshape(p1)
  ROOT a = f32[16] add(r0, r1)
}
"""

DOT_DECOMPOSER = """HloModule dot_decomposer
ENTRY main {
  p0 = f32[2,3,4] parameter(0)
  p1 = f32[3,4,5] parameter(1)
  ROOT d = f32[2,5] dot(p0, p1), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}
}
"""

TRANSPOSE_FOLDING = """HloModule transpose_folding
ENTRY main {
  p0 = f32[8,4] parameter(0)
  p1 = f32[8,5] parameter(1)
  t = f32[4,8] transpose(p0), dimensions={1,0}
  ROOT d = f32[4,5] dot(t, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

# Normalization turns `gte(tuple(...))` into its operand, flattens nested tuples
# and re-creates `tuple(gte(p, 0), gte(p, 1))` wherever a while or conditional
# carries values: the identity branches of a conditional are the case left.
TUPLE_SIMPLIFIER = """HloModule tuple_simplifier
same {
  p = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(p), index=0
  b = f32[4] get-tuple-element(p), index=1
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
swap {
  p = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(p), index=0
  b = f32[4] get-tuple-element(p), index=1
  ROOT t = (f32[4], f32[4]) tuple(b, a)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  pr = pred[] parameter(2)
  ops = (f32[4], f32[4]) tuple(p0, p1)
  c = (f32[4], f32[4]) conditional(pr, ops, ops), true_computation=same, false_computation=swap
  c0 = f32[4] get-tuple-element(c), index=0
  c1 = f32[4] get-tuple-element(c), index=1
  ROOT r = f32[4] subtract(c0, c1)
}
"""


def _loop(name: str, carry: str, body: str, init: str, bound: int = 10, root: str = "") -> str:
    """A counted while loop over a tuple (s32[] counter, ...)."""
    return f"""HloModule {name}
body {{
  p = {carry} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
{body}
}}
cond {{
  p = {carry} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant({bound})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
ENTRY main {{
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  zero = s32[] constant(0)
{init}
  w = {carry} while(init), condition=cond, body=body
{root or "  ROOT r = f32[4] get-tuple-element(w), index=1"}
}}
"""


# exp(w) depends only on a loop-invariant element of the carry.
WLICM = _loop(
    "wlicm",
    "(s32[], f32[4], f32[4])",
    """  acc = f32[4] get-tuple-element(p), index=1
  w = f32[4] get-tuple-element(p), index=2
  e = f32[4] exponential(w)
  acc1 = f32[4] add(acc, e)
  ROOT t = (s32[], f32[4], f32[4]) tuple(i1, acc1, w)""",
    "  init = (s32[], f32[4], f32[4]) tuple(zero, p0, p1)",
)

# A constant carried unchanged through the loop.
WLCS = _loop(
    "wlcs",
    "(s32[], f32[4], f32[4])",
    """  acc = f32[4] get-tuple-element(p), index=1
  k = f32[4] get-tuple-element(p), index=2
  acc1 = f32[4] multiply(acc, k)
  ROOT t = (s32[], f32[4], f32[4]) tuple(i1, acc1, k)""",
    """  k = f32[4] constant({2, 3, 4, 5})
  init = (s32[], f32[4], f32[4]) tuple(zero, p0, k)""",
)


def _sine_loop(trips: int) -> str:
    return _loop(
        f"loop{trips}",
        "(s32[], f32[4])",
        """  acc = f32[4] get-tuple-element(p), index=1
  acc1 = f32[4] sine(acc)
  ROOT t = (s32[], f32[4]) tuple(i1, acc1)""",
        "  init = (s32[], f32[4]) tuple(zero, p0)",
        bound=trips,
        root="  r = f32[4] get-tuple-element(w), index=1\n  ROOT o = f32[4] add(r, p1)",
    )


# ----------------------------------------------------------------------------- cases


def _hist(a: Analysis, opcode: str) -> int:
    """Instructions of ``opcode`` in the module as written (a call and its callee are both there)."""
    return _helpers.raw_histogram(a.text).get(opcode, 0)


def _only_computation(text: str):
    comps = computations(text)
    assert len(comps) == 1, list(comps)
    return next(iter(comps.values()))


def _body(text: str):
    return next(ops for name, ops in computations(text).items() if name.startswith("region_0"))


@dataclass
class Case:
    pass_name: str
    text: str
    #: What must hold after normalization, before the pass.
    before: Callable[[Analysis], None]
    #: How the pass must change it: (before, after).
    after: Callable[[Analysis, Analysis], None]
    #: A pass that must leave the module alone.
    unrelated: str
    id: str | None = None


def _algsimp_before(s):
    assert _hist(s, "negate") == 2


def _algsimp_after(s, r):
    assert _hist(r, "negate") == 0
    assert entry_opcodes(r.text) == ["parameter", "parameter", "add"]


def _cse_before(s):
    assert _hist(s, "add") == 2


def _cse_after(s, r):
    assert _hist(r, "add") == 1
    assert re.search(r"multiply\((\S+), \1\)", r.text), r.text


def _dce_before(s):
    assert _hist(s, "call") == 1 and _hist(s, "multiply") == 1


def _dce_after(s, r):
    assert r.histogram() == {"parameter": 1, "add": 1}
    assert len(computations(r.text)) == 1


def _inliner_before(s):
    assert _hist(s, "call") == 1 and len(computations(s.text)) == 2


def _inliner_after(s, r):
    assert _hist(r, "call") == 0
    assert sorted(_only_computation(r.text)) == ["add", "multiply", "parameter"]


def _cf_before(s):
    assert _hist(s, "iota") == 1 and _hist(s, "add") == 1


def _cf_after(s, r):
    assert _hist(r, "iota") == 0 and _hist(r, "add") == 0
    assert r.histogram() == {"parameter": 1, "constant": 1, "multiply": 1}
    assert "constant({1, 3, 5, 7})" in r.text


def _rm_before(s):
    assert _hist(s, "reshape") == 2


def _rm_after(s, r):
    assert _hist(r, "reshape") == 1 and _hist(r, "add") == 1
    assert re.search(r"f32\[2,8\]\S* add\(", r.text), "the add now works on the unreshaped operands"


def _dd_before(s):
    assert _hist(s, "reshape") == 0
    assert "lhs_contracting_dims={1,2}" in s.text


def _dd_after(s, r):
    assert _hist(r, "reshape") == 2 and _hist(r, "dot") == 1
    assert "lhs_contracting_dims={1}, rhs_contracting_dims={0}" in r.text
    assert re.search(r"f32\[2,12\]\S* reshape", r.text) and re.search(r"f32\[12,5\]\S* reshape", r.text)


def _tf_before(s):
    assert _hist(s, "transpose") == 1


def _tf_after(s, r):
    assert _hist(r, "transpose") == 0 and _hist(r, "dot") == 1
    assert "lhs_contracting_dims={0}, rhs_contracting_dims={0}" in r.text


def _wlicm_before(s):
    assert "exponential" in _body(s.text)
    assert "exponential" not in entry_opcodes(s.text)


def _wlicm_after(s, r):
    assert r.histogram() == s.histogram(), "moved, not added or removed"
    assert "exponential" not in _body(r.text)
    assert "exponential" in entry_opcodes(r.text)


def _loop_before(s):
    assert _hist(s, "while") == 1 and _hist(s, "sine") == 1


def _loop_gone(s, r):
    assert _hist(r, "while") == 0
    assert len(computations(r.text)) == 1


def _loop0_after(s, r):
    _loop_gone(s, r)
    assert _hist(r, "sine") == 0, "a loop that never runs leaves its body out"


def _loop1_after(s, r):
    _loop_gone(s, r)
    assert entry_opcodes(r.text).count("sine") == 1, "a loop that runs once is inlined"


CASES = [
    Case("algsimp", ALGSIMP, _algsimp_before, _algsimp_after, "cse"),
    Case("cse", CSE, _cse_before, _cse_after, "dce"),
    Case("dce", DCE, _dce_before, _dce_after, "cse"),
    Case("call-inliner", CALL_INLINER, _inliner_before, _inliner_after, "cse"),
    Case("constant_folding", CONSTANT_FOLDING, _cf_before, _cf_after, "cse"),
    Case("reshape-mover", RESHAPE_MOVER, _rm_before, _rm_after, "cse"),
    Case("dot_decomposer", DOT_DECOMPOSER, _dd_before, _dd_after, "transpose-folding"),
    Case("transpose-folding", TRANSPOSE_FOLDING, _tf_before, _tf_after, "dot_decomposer"),
    Case("while-loop-invariant-code-motion", WLICM, _wlicm_before, _wlicm_after, "cse"),
    Case("simplify-while-loops", _sine_loop(0), _loop_before, _loop0_after, "cse", "trip-count-0"),
    Case("simplify-while-loops", _sine_loop(1), _loop_before, _loop1_after, "cse", "trip-count-1"),
]
IDS = [c.id or c.pass_name for c in CASES]

_LOADED = {}


def _load(text: str) -> Analysis:
    if text not in _LOADED:
        _LOADED[text] = xla.load(text)
    return _LOADED[text]


def _run(state: Analysis, name: str, tmp_path, tag: str = "") -> Analysis | None:
    dump_dir = tmp_path / f"dump-{name}{tag}"
    dump_dir.mkdir()
    return xla.run_pass(state.text, get_pass(name), str(dump_dir))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_module_survives_normalization(case):
    case.before(_load(case.text))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_pass_changes_module_as_expected(case, tmp_path):
    state = _load(case.text)
    case.before(state)
    result = _run(state, case.pass_name, tmp_path)
    assert result is not None, f"{case.pass_name} left the module unchanged"
    assert result.text != state.text
    assert xla.normalize(result.text) == result.text
    case.after(state, result)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_unrelated_pass_leaves_module_unchanged(case, tmp_path):
    assert _run(_load(case.text), case.unrelated, tmp_path) is None


def test_passes_are_deterministic(tmp_path):
    state = _load(CSE)
    first = _run(state, "cse", tmp_path, "-1")
    second = _run(state, "cse", tmp_path, "-2")
    assert first is not None and second is not None
    assert first.text == second.text


# ----------------------------------------------------- passes whose work normalization does


def test_normalization_removes_dead_instructions(tmp_path):
    """So `dce` has nothing to remove but dead calls (and what normalization re-creates)."""
    text = CALL_INLINER.replace("  ROOT a", "  dead = f32[4] exponential(p0)\n  ROOT a")
    assert _hist(xla.analyze(xla.parse(text).to_string()), "exponential") == 1
    state = _load(text)
    assert _hist(state, "exponential") == 0
    assert _run(state, "dce", tmp_path) is None


def test_dce_change_undone_by_normalization(tmp_path):
    """`dce` removes the unused `get-tuple-element`s of a while; normalization puts them back.

    So xla.run_pass returns a new Analysis equal to its input (the Engine
    turns that into "unchanged").
    """
    state = _load(WLICM)
    assert "get-tuple-element(w" in state.text
    result = _run(state, "dce", tmp_path)
    dumps = os.listdir(tmp_path / "dump-dce")
    assert any(".after_dce." in f for f in dumps), "dce did change the module"
    assert result is not None and result.text == state.text


def test_tuple_simplifier_change_undone_by_normalization(tmp_path):
    """tuple-simplifier turns an identity branch into its parameter; normalization rebuilds it."""
    state = _load(TUPLE_SIMPLIFIER)
    identity = [ops for ops in computations(state.text).values() if ops[-1] == "tuple"]
    assert len(identity) == 2, "both branches end in a tuple"
    result = _run(state, "tuple-simplifier", tmp_path)
    dump_dir = tmp_path / "dump-tuple-simplifier"
    dumps = [f for f in os.listdir(dump_dir) if ".after_tuple-simplifier." in f]
    assert dumps, "tuple-simplifier did change the module"
    after = (dump_dir / dumps[-1]).read_text()
    assert re.search(r"ROOT %\S+ = \(f32\[4\]\{0\}, f32\[4\]\{0\}\) parameter\(0\)", after)
    assert result is not None and result.text == state.text
    assert _run(state, "cse", tmp_path) is None


def test_constant_sinking_done_by_normalization(tmp_path):
    """Normalization already moves a carried constant into the loop body.

    While XLA's while-loop-constant-sinking would do exactly that, it never
    finds a constant left to sink in a normalized module.
    """
    raw = xla.parse(WLCS).to_string()
    assert "(s32[], f32[4]{0}, f32[4]{0}) while(" in raw
    state = _load(WLCS)
    assert re.search(r"\(s32\[\], f32\[4\]\{0\}\) while\(", state.text), "carry lost the constant"
    assert "constant" in _body(state.text)
    assert _run(state, "while-loop-constant-sinking", tmp_path) is None


def test_trip_count_annotation_dropped_by_normalization(tmp_path):
    """while-loop-trip-count-annotator's backend_config does not survive normalization."""
    state = _load(_sine_loop(10))
    result = _run(state, "while-loop-trip-count-annotator", tmp_path)
    dump_dir = tmp_path / "dump-while-loop-trip-count-annotator"
    dumps = [f for f in os.listdir(dump_dir) if ".after_while-loop-trip-count-annotator." in f]
    assert dumps and '"known_trip_count":{"n":"10"}' in (dump_dir / dumps[0]).read_text()
    assert result is not None and result.text == state.text
    assert "known_trip_count" not in result.text


# ----------------------------------------------------------------------------- engine


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    e = Engine(workers=1, log_dir=tmp_path_factory.mktemp("worker-logs"))
    yield e
    e.close()


def test_cse_through_engine(engine):
    state = engine.load(CSE)
    assert state.text == _load(CSE).text
    result = engine.apply(state, "cse")
    assert result is not state
    _cse_after(state, result)
    assert engine.apply(state, "dce") is state
    assert engine.apply(result, "cse") is result, "cse is idempotent"
    assert engine.workers_replaced == 0


def test_change_undone_by_normalization_is_unchanged_through_engine(engine):
    state = engine.load(WLICM)
    assert engine.apply(state, "dce") is state
