"""The Python inliner behind the op count rule (pure text; XLA checks it in tests/passes)."""
from __future__ import annotations

import pytest

from xla_service.passes.inline import InlineError, inlinable, inline_calls

NESTED = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

inner.0 {
  Arg_0.1 = f32[4]{0} parameter(0)
  ROOT tanh.1 = f32[4]{0} tanh(Arg_0.1)
}

identity.0 {
  Arg_0.2 = f32[4]{0} parameter(0)
  ROOT Arg_0.3 = f32[4]{0} parameter(1)
}

outer.0 {
  Arg_0.4 = f32[4]{0} parameter(0)
  call.1 = f32[4]{0} call(Arg_0.4), to_apply=inner.0
  ROOT add.1 = f32[4]{0} add(call.1, Arg_0.4)
}

ENTRY main.1 {
  x.1 = f32[4]{0} parameter(0)
  a.1 = f32[4]{0} call(x.1), to_apply=outer.0
  b.1 = f32[4]{0} call(a.1), to_apply=outer.0
  c.1 = f32[4]{0} call(a.1, b.1), to_apply=identity.0
  ROOT m.1 = f32[4]{0} multiply(c.1, b.1)
}
"""


def _instructions(text: str) -> list:
    return [line.split("=")[0].strip() for line in text.splitlines() if " = " in line and not line.startswith("HloModule")]


def test_every_call_site_gets_its_own_copy() -> None:
    out = inline_calls(NESTED)
    assert " call(" not in out
    assert "outer.0 {" not in out and "inner.0 {" not in out  # callees only ever called are gone
    body = out.split("ENTRY main.1 {")[1]
    assert body.count(" tanh(") == 2 and body.count(" add(") == 2
    # the callee that returns its second parameter is replaced by that operand
    assert "ROOT m.1 = f32[4]{0} multiply(b.1, b.1)" in body
    names = _instructions(body)
    assert len(names) == len(set(names)), "inlined copies have unique names"


def test_operands_are_renamed_inside_copies() -> None:
    body = inline_calls(NESTED).split("ENTRY main.1 {")[1]
    assert "a.1.inlined.call.1 = f32[4]{0} tanh(x.1)" in body
    assert "a.1 = f32[4]{0} add(a.1.inlined.call.1, x.1)" in body
    assert "b.1.inlined.call.1 = f32[4]{0} tanh(a.1)" in body


def test_a_module_without_calls_is_unchanged_up_to_spacing() -> None:
    text = "HloModule n\n\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n}\n"
    assert inline_calls(text).split() == text.split()


def test_composite_calls_are_left_to_xla() -> None:
    composite = NESTED.replace("to_apply=inner.0", 'to_apply=inner.0, is_composite=true')
    assert inlinable(NESTED) and not inlinable(composite)


@pytest.mark.parametrize(
    "text",
    [
        "HloModule x\n\nfoo {\n  ROOT a = f32[] parameter(0)\n}\n",  # no ENTRY
        "HloModule x\n\nENTRY e {\n  this is not an instruction\n}\n",
        "HloModule x\n\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=missing\n}\n",
    ],
)
def test_text_it_does_not_understand_raises(text: str) -> None:
    with pytest.raises(InlineError):
        inline_calls(text)
