"""Benchmark metrics and Berthold's integrals against values computed by hand (ties, failures, maximisation)."""

import math

import pytest

from cepopt.benchmarking import metrics
from cepopt.benchmarking.progress import Recorder, gamma, integrals


def test_profile_with_ties_and_failures():
    # problem 0: best 1 (b); problem 1: a and b tie at 4; problem 2: only b; problem 3: only a; c fails all
    times = {"a": [2.0, 4.0, None, 1.0], "b": [1.0, 4.0, 3.0, None], "c": [None] * 4}
    r = metrics.ratios(times)
    assert r["a"] == [2.0, 1.0, math.inf, 1.0]
    assert r["b"] == [1.0, 1.0, 1.0, math.inf]
    assert r["c"] == [math.inf] * 4
    taus = [1.0, 1.999, 2.0, 1e9]
    assert metrics.profile(r["a"], taus) == [0.5, 0.5, 0.75, 0.75]
    assert metrics.profile(r["b"], taus) == [0.75] * 4
    assert metrics.profile(r["c"], taus) == [0.0] * 4


def test_time_ratios_floor_sub_millisecond_times():
    r = metrics.ratios({"a": [0.0, 0.004], "b": [0.0005, 0.002]}, floor=metrics.MIN_TIME)
    assert r == {"a": [1.0, 2.0], "b": [1.0, 1.0]}


def test_objective_ratio_minimisation_maximisation_and_signs():
    assert metrics.objective_ratio(15.0, 10.0, "min") == 1.5
    assert metrics.objective_ratio(10.0, 10.0, "min") == 1.0
    assert metrics.objective_ratio(5.0, 10.0, "max") == 2.0  # best 10, found 5: twice worse
    assert metrics.objective_ratio(None, 10.0, "max") == math.inf
    assert metrics.objective_ratio(-2.0, 2.0, "max") == 3.0  # 1 + |-2 - 2| / max(2, 2)
    assert metrics.objective_ratio(1.0, -1.0, "min") == 3.0
    assert metrics.objective_ratio(-1.0, -2.0, "min") == 1.5  # 1 + 1 / 2
    assert metrics.best_known([3.0, None, 7.0, float("nan")], "max") == 7.0
    assert metrics.best_known([3.0, None, 7.0], "min") == 3.0
    assert metrics.best_known([None], "min") is None


def test_par10_and_shifted_geometric_mean():
    # unsolved at 10 x 5 s
    assert metrics.par([1.0, 3.0, 4.9], [True, True, False], 5.0) == pytest.approx((1 + 3 + 50) / 3)
    # sqrt((1 + 1) * (3 + 1)) - 1
    assert metrics.shifted_geometric_mean([1.0, 3.0], [True, True], 5.0) == pytest.approx(2 * math.sqrt(2) - 1)
    # the unsolved one counts at the limit 7: sqrt(2 * 8) - 1 = 3
    assert metrics.shifted_geometric_mean([1.0, 0.5], [True, False], 7.0) == pytest.approx(3.0)
    assert metrics.shifted_geometric_mean([1.0, 3.0], [True, True], 5.0, shift=10.0) == pytest.approx(
        math.sqrt(11 * 13) - 10)


def test_virtual_best_and_cactus():
    times = {"a": [1.0, 5.0, 2.0], "b": [3.0, 4.0, 9.0]}
    solved = {"a": [True, False, True], "b": [True, True, False]}
    assert metrics.virtual_best(times, solved) == [1.0, 4.0, 2.0]
    assert metrics.virtual_best({"a": [1.0]}, {"a": [False]}) == [None]
    assert metrics.cactus([3.0, 1.0, 2.0], [True, True, False]) == [1.0, 3.0]


@pytest.mark.parametrize("sense, expected", [("max", (3, 2, 1)), ("min", (2, 2, 2))])
def test_win_tie_loss(sense, expected):
    method = [5.0, 2.0, 3.0, None, 4.0, 6.0]
    baseline = [4.0, 3.0, 3.0 * (1 + 1e-12), None, None, 1.0]  # a tie within 1e-9; two failures tie; 4 beats none
    assert metrics.win_tie_loss(method, baseline, sense) == expected


def test_gamma():
    assert gamma(20.0, 10.0) == 0.5
    assert gamma(None, 10.0) == 1.0
    assert gamma(-1.0, 2.0) == 1.0
    assert gamma(0.0, 0.0) == 0.0
    assert gamma(10.0, 10.0) == 0.0


def test_integrals_minimisation():
    traj = {"primal": [[2.0, 20.0], [5.0, 10.0]], "dual": [[1.0, 5.0], [6.0, 10.0]]}
    got = integrals(traj, 10.0, 10.0)
    # primal: 1 on [0,2), gamma(20,10)=0.5 on [2,5), 0 after: 2 + 1.5
    assert got["primal_integral"] == pytest.approx(3.5)
    # dual: 1 on [0,1), gamma(5,10)=0.5 on [1,6): 1 + 2.5
    assert got["dual_integral"] == pytest.approx(3.5)
    # primal-dual: 1 on [0,2), gamma(20,5)=0.75 on [2,5), gamma(10,5)=0.5 on [5,6), 0 after
    assert got["primal_dual_integral"] == pytest.approx(2 + 2.25 + 0.5)


def test_integrals_maximisation_hold_the_last_value_to_the_horizon():
    traj = {"primal": [[1.0, 4.0], [3.0, 8.0]], "dual": [[0.5, 16.0], [2.0, 8.0]]}
    got = integrals(traj, 8.0, 4.0)
    assert got["primal_integral"] == pytest.approx(1 + 0.5 * 2)
    assert got["dual_integral"] == pytest.approx(0.5 + 0.5 * 1.5)
    # a heuristic that stops at 1 s with half the best value keeps its gap until the horizon
    assert integrals({"primal": [[1.0, 4.0]], "dual": []}, 8.0, 4.0)["primal_integral"] == pytest.approx(1 + 1.5)
    # a failure: gap 1 all the way
    assert integrals({"primal": [], "dual": []}, 8.0, 4.0)["primal_dual_integral"] == pytest.approx(4.0)


def test_recorder_keeps_callbacks_only_when_they_are_the_method_objective():
    rec = Recorder(start=0.0)
    rec("start", None)
    rec.primal += [[0.1, 5.0], [0.2, 4.0], [0.3, 4.5]]  # the third is no improvement (min)
    rec.dual += [[0.1, 1.0], [0.25, 3.0]]
    traj = rec.trajectory(4.0, 4.0, 0.5, "min")
    assert traj["source"] == "callbacks"
    assert traj["primal"] == [[0.1, 5.0], [0.2, 4.0]]
    assert traj["dual"] == [[0.1, 1.0], [0.25, 3.0], [0.5, 4.0]]
    # the last incumbent is not the cost model's objective (a surrogate model): final point only
    assert rec.trajectory(7.0, None, 0.5, "min") == {"source": "final", "primal": [[0.5, 7.0]], "dual": []}
    rec("start", None)  # a second solver call: its points cannot be told apart
    assert rec.trajectory(4.0, 4.0, 0.5, "min")["source"] == "final"
