"""How service verdicts become CompilerGym validation errors (no service)."""
from __future__ import annotations

from compiler_gym.datasets import Benchmark

from xla_service.env.validation import (
    XlaBenchmark,
    make_validatable,
    validate_semantics,
    verdict_errors,
)


def test_ok_is_no_error():
    assert verdict_errors({"status": "ok", "outputs": 3, "errors": []}) == []


def test_mismatch_names_every_output():
    errors = verdict_errors({"status": "mismatch", "errors": ["output 0 (f) differs", "output 2 (g) differs"]})
    assert [e.type for e in errors] == ["Output mismatch: output 0 (f) differs", "Output mismatch: output 2 (g) differs"]


def test_a_current_module_that_does_not_run_fails():
    (error,) = verdict_errors({"status": "current_failed", "errors": ["XLA cannot compile this module"]})
    assert error.type == "The current module does not run: XLA cannot compile this module"


def test_no_verdict_is_flagged_not_judged():
    (error,) = verdict_errors({"status": "nondeterministic", "errors": ["output 0 differs"]})
    assert error.type.startswith("Cannot validate: the benchmark's outputs are not deterministic")
    (error,) = verdict_errors({"status": "not_executable", "errors": ["XLA cannot compile"]})
    assert error.type == "Cannot validate: the benchmark cannot execute on CPU: XLA cannot compile"


def test_make_validatable_is_idempotent():
    benchmark = Benchmark.from_file_contents("benchmark://test/x", b"HloModule x")
    assert not benchmark.is_validatable()
    validatable = make_validatable(make_validatable(benchmark))
    assert validatable.validation_callbacks() == [validate_semantics]
    assert isinstance(validatable, XlaBenchmark) and validatable.proto is benchmark.proto


def test_validation_callbacks_run_in_the_calling_thread():
    """CompilerGym's Benchmark runs them on its shared pool, which compiler_gym.bin.validate
    fills with its own jobs (a deadlock with more rows than cores)."""
    import threading

    seen = []
    benchmark = make_validatable(Benchmark.from_file_contents("benchmark://test/y", b"HloModule y"))
    benchmark._validation_callbacks = [lambda env: seen.append(threading.current_thread()) or []]
    assert benchmark.validate(object()) == []
    assert seen == [threading.current_thread()]


def test_a_failing_service_call_is_a_validation_error():
    class Env:
        def send_param(self, key: str, value: str) -> str:
            raise ValueError("XLA crashed computing 'validate'")

    (error,) = validate_semantics(Env())
    assert error.type == "Validation failed to run: XLA crashed computing 'validate'"
