"""Constants of more than 10 elements survive loading and steps in full.

XLA prints such a constant as ``constant({...})`` unless told otherwise (in its
dumps, and in ``as_hlo_text``), and its parser reads ``{...}`` back as
garbage: before this was fixed, a step whose pass folded a constant of 11
elements or more handed on a module that computed something else, which
validation then blamed on the pass.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from xla_service.errors import HloParseError, PassCrashedError
from xla_service.passes.engine import Engine


def _folded_pad(n: int) -> str:
    """``p + pad([3], 2)``: constant folding turns the pad into a constant of ``n`` elements."""
    return f"""HloModule m, entry_computation_layout={{(f32[{n}]{{0}})->f32[{n}]{{0}}}}
ENTRY main {{
  p = f32[{n}]{{0}} parameter(0)
  c = f32[1]{{0}} constant({{3}})
  z = f32[] constant(2)
  pd = f32[{n}]{{0}} pad(c, z), padding=0_{n - 1}
  ROOT a = f32[{n}]{{0}} add(p, pd)
}}
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    e = Engine(workers=1, log_dir=tmp_path_factory.mktemp("worker-logs"))
    yield e
    e.close()


def _constant_values(text: str) -> list[float]:
    (body,) = re.findall(r"constant\(\{([^}]*)\}\)", text.split("ROOT")[0].split("pad")[-1]) or [""]
    return [float(v) for v in body.split(",") if v.strip()]


@pytest.mark.parametrize("n", [8, 11, 40])
def test_a_folded_constant_is_kept_in_full_and_validates(engine, n):
    start = engine.load(_folded_pad(n))
    folded = engine.apply(start, "constant_folding")
    assert "{...}" not in folded.text
    assert "pad(" not in folded.text  # the pad was folded
    assert _constant_values(folded.text) == [3.0] + [2.0] * (n - 1)
    verdict = engine.validate(start, folded, 0)
    assert verdict["status"] == "ok", verdict["errors"]


def test_loading_keeps_a_literal_in_full(engine):
    values = np.arange(40, dtype=np.float32) / 8
    literal = ", ".join(f"{v:g}" for v in values)
    text = f"""HloModule m, entry_computation_layout={{(f32[40]{{0}})->f32[40]{{0}}}}
ENTRY main {{
  p = f32[40]{{0}} parameter(0)
  c = f32[40]{{0}} constant({{{literal}}})
  ROOT a = f32[40]{{0}} multiply(p, c)
}}
"""
    loaded = engine.load(text)
    assert "{...}" not in loaded.text
    assert [float(v) for v in re.findall(r"constant\(\{([^}]*)\}\)", loaded.text)[0].split(",")] == list(values)


def test_a_dump_with_an_elided_constant_is_refused_with_the_flag_to_set(tmp_path):
    from xla_service.passes import xla

    dump = tmp_path / "module_0001.m.after_constant_folding.txt"
    dump.write_text(_folded_pad(17).replace("constant({3})", "constant({...})"))
    with pytest.raises(PassCrashedError, match="--xla_dump_large_constants=true"):
        xla._complete(dump.read_text(), str(dump))


def test_a_module_that_elides_a_constant_is_refused_at_load(engine):
    elided = _folded_pad(17).replace("constant({3})", "constant({...})")
    with pytest.raises(HloParseError, match=r"elides a constant's values at line 4 .*print_large_constants=True"):
        engine.load(elided)
