"""bench/gate.py, the verification gate of `nox -s bench`: a failed check fails the gate, a check
that does not apply is skipped with its reason, and the upstream lockstep is skipped, saying
why, where the installed jax is not the reference semantics'."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def gate(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_gate", ROOT / "bench" / "gate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # the checks' own test runs are other tests' business: here each reports what it is told
    monkeypatch.setattr(module, "deterministic", lambda: {"numpy": True})
    return module


def _stub_checks(monkeypatch, gate, **status):
    monkeypatch.setattr(gate, "_pytest", lambda args: {"status": status.get(
        "anchors" if "conformance/test_anchors.py::test_pinned_anchor" in args else "other", "passed"), "detail": ""})
    monkeypatch.setattr(gate, "upstream_lockstep", lambda: {"status": status.get("upstream", "passed"), "detail": ""})
    monkeypatch.setattr(gate, "cuda", lambda: {"status": status.get("cuda", "skipped"), "detail": "no GPU"})


def test_every_check_passed_or_skipped_passes(monkeypatch, gate):
    _stub_checks(monkeypatch, gate)
    record = gate.gate()
    assert record["passed"] is True
    assert {name: c["status"] for name, c in record["checks"].items()} == {
        "anchors": "passed", "upstream_lockstep": "passed", "cuda": "skipped", "gradients": "passed"}
    from pycraftax import rules

    assert record["rules_fingerprint"] == rules.rules_fingerprint()
    assert record["deterministic"] == {"numpy": True}


@pytest.mark.parametrize("failing", ["anchors", "upstream", "cuda", "other"])
def test_a_failed_check_fails_the_gate(monkeypatch, gate, failing):
    _stub_checks(monkeypatch, gate, **{failing: "failed"})
    assert gate.gate()["passed"] is False


def test_anchors_must_run(monkeypatch, gate):
    """Skipped anchors are no verification: the gate fails."""
    _stub_checks(monkeypatch, gate, anchors="skipped")
    assert gate.gate()["passed"] is False


def test_upstream_lockstep_skipped_on_another_jax(monkeypatch, gate):
    pytest.importorskip("craftax")
    jax = pytest.importorskip("jax")
    from pycraftax.porting import REFERENCE_JAX_VERSION, jax_version_note

    assert jax.__version__ == REFERENCE_JAX_VERSION  # the [jax] extra pins it
    assert jax_version_note() is None
    monkeypatch.setattr(jax, "__version__", "0.11.2")
    note = jax_version_note()
    assert "jax 0.11.2 is installed" in note and f"jax=={REFERENCE_JAX_VERSION}" in note
    assert gate.upstream_lockstep() == {"status": "skipped", "detail": note}
