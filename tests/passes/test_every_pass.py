"""Every action runs on a small but varied module, and yields a normalized module.

Each pass runs with the in-process API (``xla.run_pass``) in a subprocess
(``_pass_runner.py``), two processes at a time: XLA may abort a process, and
then the pass's result is read back from its dumps by a fresh process.
"""
from __future__ import annotations

import pytest

from xla_service.catalog.passes import PASS_NAMES
from xla_service.passes import xla

from . import _helpers

#: Passes allowed to raise PassCrashedError on the varied module, with the reason.
#: (None measured with jaxlib 0.10.2.)
LEGITIMATE_CRASHES: dict = {}


@pytest.fixture(scope="module")
def varied():
    return xla.load(_helpers.varied_module())


@pytest.fixture(scope="module")
def results(varied):
    return _helpers.run_isolated(varied.text, PASS_NAMES, chunks=2)


def test_module_is_varied(varied):
    histogram = _helpers.raw_histogram(varied.text)
    for opcode in ("dot", "tanh", "while", "call", "reshape", "transpose", "gather", "sort",
                   "reduce-window", "get-tuple-element"):
        assert histogram.get(opcode), opcode


def test_every_pass_reported(results):
    assert sorted(results) == sorted(PASS_NAMES)


def test_no_pass_aborted_xla(results):
    aborted = {n: r.abort_message for n, r in results.items() if r.aborted}
    assert not aborted


@pytest.mark.parametrize("name", PASS_NAMES)
def test_pass_runs_without_raising(results, name):
    result = results[name]
    if name in LEGITIMATE_CRASHES:
        assert result.status == "error" and result.error_type == "PassCrashedError"
        return
    assert result.status in ("changed", "unchanged"), (
        f"{name}: {result.status} {result.error_type}: {result.error} {result.abort_message}"
    )


@pytest.mark.parametrize("name", PASS_NAMES)
def test_result_is_a_normalized_module(results, varied, name):
    result = results[name]
    if result.status != "changed":
        return
    xla.parse(result.text)
    assert xla.normalize(result.text) == result.text
    analysis = xla.analyze(result.text)
    assert sum(analysis.opcode_counts) > 0


def test_some_passes_change_it(results, varied):
    """The module gives passes something to do (so the checks above are not vacuous)."""
    changed = {n for n, r in results.items() if r.status == "changed" and r.text != varied.text}
    assert {"call-inliner", "comparison-expander", "reduce-window-rewriter"} <= changed
    inlined = _helpers.raw_histogram(results["call-inliner"].text)
    assert "call" not in inlined


def test_runner_survives_an_xla_abort(monkeypatch):
    """The isolation itself: an abort in the backend still yields the pass's result.

    With XLA's full CPU backend (``XLA_GYM_FULL_BACKEND=1``; steps skip fusion by
    default), fusion's indexing analysis aborts on the non-simplified gather."""
    monkeypatch.setenv("XLA_GYM_FULL_BACKEND", "1")
    text = xla.load(_helpers.take_module()).text
    results = _helpers.run_isolated(text, ["cse", "gather_simplifier"], chunks=1)
    cse = results["cse"]
    assert cse.aborted and "IsSimplifiedGather" in cse.abort_message
    assert cse.status == "changed"
    before = _helpers.raw_histogram(text)["call"]
    assert _helpers.raw_histogram(cse.text)["call"] == before - 1
    assert not results["gather_simplifier"].aborted
    assert results["gather_simplifier"].status == "changed"
