"""An optimum proven to a tolerance (a gap closed to the solver's precision, not exactly) keeps its proven
bound in the Solution; an exact proof, or a bound on the wrong side of the optimum, reports the optimum."""

from __future__ import annotations

import dataclasses
import functools

import pytest

from cepopt.registry import _METHODS, method, solve


@pytest.fixture
def patched_dp_ld(monkeypatch):
    """dp-ld's answer with a chosen status and bound (the plan stays dp-ld's own optimum)."""
    meth = method("joinorder", "dp-ld")
    answer: dict = {}

    @functools.wraps(meth.fn)  # the same signature: options are checked against it
    def fake(problem, **kw):
        return dataclasses.replace(meth.fn(problem, **kw), **answer)

    monkeypatch.setitem(_METHODS["joinorder"], "dp-ld", dataclasses.replace(meth, fn=fake))
    return answer


@pytest.mark.parametrize("offset, reported", [(1e-6, "looser"), (0.0, "optimum"), (-1e-6, "optimum")])
def test_tolerance_proof_reports_its_bound(patched_dp_ld, offset, reported):
    exact = solve("joinorder-e6", "dp-ld")
    patched_dp_ld.update(status="optimal", bound=exact.objective - offset)
    sol = solve("joinorder-e6", "dp-ld")
    assert sol.status == "optimal" and sol.objective == exact.objective
    if reported == "looser":
        assert sol.bound == exact.objective - offset and sol.gap > 0
    else:
        assert sol.bound == sol.objective and sol.gap == 0
