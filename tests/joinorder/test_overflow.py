"""Absurd statistics: rates x window beyond floating point stay finite in log space, or raise a
CepoptError at build time; no method reports nan or inf."""

import math

import numpy as np
import pytest

from cepopt.errors import CepoptError
from cepopt.joinorder.greedy import greedy
from cepopt.joinorder.problem import build, from_arrays
from cepopt.registry import compare, solve

from .test_methods import ALL, EXACT, instance


def test_huge_rate_times_window_stays_finite():
    inst = instance("PATTERN SEQ(A a, B b, C c) WITHIN 1e200", {"A": 1e200, "B": 1, "C": 2})
    assert build(inst).single.lc[0] == pytest.approx(2 * math.log(1e200))
    sols = compare(inst, ALL, time_limit=30)
    best = min(s.objective for s in sols if s.plan.kind == "order")
    for s in sols:
        assert s.status in ("optimal", "feasible") and math.isfinite(s.objective), (s.method, s.message)
        if s.method in EXACT:
            assert s.status == "optimal"
        if s.plan.kind == "order":
            assert s.objective >= best - 1e-9


def test_greedy_on_near_max_floats_returns_a_permutation():
    # what `generate joinorder --window 1e308 --rate-max 1e308` writes: W r overflowed to inf, every
    # greedy score was inf and the same first event got picked n times
    rates = {f"T{i}": 8e307 / i for i in range(1, 7)}
    inst = instance("PATTERN SEQ(T1 e1, T2 e2, T3 e3, T4 e4, T5 e5, T6 e6) WITHIN 1e308", rates)
    assert sorted(greedy(build(inst).single)) == list(range(6))
    assert math.isfinite(solve(inst, "greedy").objective)


def test_contiguity_factor_with_overflowing_window_times_rates():
    inst = instance("PATTERN SEQ(A a, B b) WITHIN 1e300", {"A": 1e300, "B": 1e300}, strategy="contiguity")
    conj = build(inst).single
    assert conj.b[0, 1] == pytest.approx(math.log(0.5) - math.log(1e300) - math.log(2e300))
    assert math.isfinite(solve(inst, "dp-ld").objective)


def test_from_arrays_takes_logs_before_multiplying():
    p = from_arrays(1e300, [1e300, 1.0], np.ones((2, 2)))
    assert p.single.lc.tolist() == pytest.approx([600 * math.log(10), 300 * math.log(10)])


@pytest.mark.parametrize("text, rates", [
    ("PATTERN SEQ(A a, KL(B b)) WITHIN 1e200", {"A": 1, "B": 1e200}),  # rW ln 2 is inf
    ("PATTERN SEQ(KL(A a), KL(B b), KL(C c)) WITHIN 1e154", {"A": 1e154, "B": 1e154, "C": 1e154}),  # Σ is
])
def test_kleene_costs_beyond_floats_are_a_user_error(text, rates):
    with pytest.raises(CepoptError, match=r"^statistics: costs overflow: rates x window too large"):
        build(instance(text, rates))


def test_kleene_nonempty_with_tiny_rate_times_window():
    # ln(2^{rW} - 1) ~ ln(rW ln 2): log1p(-exp(-x)) raised a math domain error, x itself underflows
    for w in (1e-10, 1e-200):
        inst = instance(f"PATTERN SEQ(A a, KL(B b)) WITHIN {w}", {"A": 1, "B": w}, kleene_nonempty=True)
        assert build(inst).single.lc[1] == pytest.approx(2 * math.log(w) + math.log(math.log(2)))
        assert math.isfinite(solve(inst, "dp-ld").objective)


def test_cli_generate_near_max_floats_then_solve(tmp_path, capsys):
    from cepopt.cli import main

    path = str(tmp_path / "f.json")
    assert main(["generate", "joinorder", "--window", "1e308", "--rate-max", "1e308", "-o", path]) == 0
    assert main(["solve", path, "-m", "greedy"]) == 0  # was exit 2: "order (e1, e1, ...) repeats an event"
    (tmp_path / "kl.json").write_text('{"problem": "joinorder", "queries": "q1: PATTERN SEQ(A a, KL(B b)) '
                                      'WITHIN 1e200", "statistics": {"rates": {"A": 1, "B": 1e200}}}')
    capsys.readouterr()
    assert main(["solve", str(tmp_path / "kl.json"), "-m", "dp-ld"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "costs overflow: rates x window too large" in err
