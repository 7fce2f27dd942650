"""Every exact method's time limit covers everything it does (issue 30, "limits that hold"), checked on a
fake clock: :class:`cepopt.clock.TickingClock` advances by ``step`` at each reading, so a method's time is
the number of times it looked at the clock, and the deadline falls at the first reading (step >= the
limit), in the middle of the work, or never (a small step). For every family's exact methods, on an
instance small enough for brute force, with a 1 s limit:

* the fake time at return is at most the limit plus :data:`MARGIN_READINGS` readings (the documented
  margin: a method looks at the clock a bounded number of times after its deadline: its fallback, the
  re-scoring; no loop goes on reading it);
* the plan is no worse than the family's greedy plan (Sharon's GWMIN, GRETA/Hamlet's dynamic policy,
  Gloria's Greedy, join order's GREEDY order or ZStream over it for trees);
* the bound, when there is one, is never above the optimum (minimisation) or below it (maximisation),
  the optimum found by brute force without a limit.

What a fake clock cannot see (a step that never reads the clock) is what the real-time tests of
``test_time_limit_cases.py`` measure.
"""

from __future__ import annotations

import pytest

from cepopt.cli import main
from cepopt.clock import Deadline, TickingClock, now, use_clock
from cepopt.instance import load
from cepopt.registry import methods, solve

#: clock readings a method may take after its deadline (fallback, re-scoring, the registry's own two)
MARGIN_READINGS = 60
LIMIT = 1.0
#: step of the clock per reading: deadline at once (2.0), after a few readings (0.3, 0.05), in the middle
#: of the work (1e-3), and never (1e-7: every path finishes as without a limit)
STEPS = (2.0, 0.3, 0.05, 1e-3, 1e-7)


def test_ticking_clock_and_deadline():
    clock = TickingClock(step=0.5)
    with use_clock(clock):
        d = Deadline.after(1.0)  # reading 0.0
        assert (d.over(), d.over(), d.over()) == (False, True, True)  # 0.5, 1.0, 1.5
        assert d.left(floor=0.25) == 0.25 and clock.readings == 5
        assert Deadline.after(None).over() is False and Deadline.after(None).left() is None
    assert now() != clock.time  # the real clock again


@pytest.fixture(scope="module")
def instances(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clock")
    paths = {}
    for family, args in (("sharon", ["--queries", "14", "--length", "6", "--seed", "6"]),
                         ("joinorder", ["--size", "6", "--seed", "2"])):
        paths[family] = str(folder / f"{family}.json")
        assert main(["generate", family, *args, "-o", paths[family]]) == 0
    paths["joinorder-chain"] = str(folder / "chain.json")
    assert main(["generate", "joinorder", "--size", "6", "--seed", "2", "--graph", "chain", "--kind", "and",
                 "-o", paths["joinorder-chain"]]) == 0
    paths["hamlet"] = load("hamlet-example")
    paths["gloria"] = load("gloria-e6")
    return paths


def _truth(family: str, inst, kind: str | None) -> tuple[float, float]:
    """(optimum by brute force, greedy's objective) without a limit."""
    if family == "sharon":
        return solve(inst, "bruteforce").objective, solve(inst, "greedy").objective
    if family == "hamlet":
        return solve(inst, "optimal").objective, solve(inst, "dynamic").objective
    if family == "gloria":
        return solve(inst, "exhaustive").objective, solve(inst, "greedy").objective
    plan = "tree" if kind == "tree" else "order"
    return (solve(inst, "bruteforce", params={"plan": plan}).objective,
            solve(inst, "zstream-ord" if kind == "tree" else "greedy").objective)


EXACT = {
    "sharon": ["cpsat", "milp", "cpsat-compact", "milp-compact", "exhaustive", "sharon", "bruteforce"],
    "hamlet": ["optimal"],
    "gloria": ["exhaustive", "cpsat", "milp"],
    "joinorder": ["dp-ld", "dp-b", "milp-order", "milp-tree", "bruteforce"],
}
TREE = {"dp-b", "milp-tree"}
#: exact under cross_products=avoid only (issue 34): they refuse the CEP rule, so they run on a connected
#: (chain) query graph under their own rule; a time-out returns GREEDY's order over the query graph
AVOID_RULE = {"dp-ccp-ld": None, "ikkbz": None, "dp-ccp": "tree"}


def test_the_table_names_every_exact_method():
    """A new exact method joins this test (or says why not)."""
    for family, names in EXACT.items():
        exact = {name for name, m in methods(family).items() if m.exact}
        assert exact == set(names) | (set(AVOID_RULE) if family == "joinorder" else set()), family


@pytest.mark.parametrize("family,method", [(f, m) for f, ms in EXACT.items() for m in ms])
def test_exact_methods_stop_at_a_fake_deadline(instances, family, method):
    inst = instances[family]
    kind = "tree" if method in TREE else None
    optimum, greedy = _truth(family, inst, kind)
    sense = "max" if family == "sharon" else "min"
    for step in STEPS:
        clock = TickingClock(step=step)
        with use_clock(clock):
            sol = solve(inst, method, time_limit=LIMIT)
        where = (method, step, sol.status, sol.message)
        spent = clock.time - step  # fake seconds from the first reading (the limit starts there) to the last
        assert spent <= LIMIT + MARGIN_READINGS * step, where
        assert sol.plan is not None, where
        if sense == "max":
            assert sol.objective >= greedy - 1e-9 * abs(greedy), where
            assert sol.bound is None or sol.bound >= optimum - 1e-9 * abs(optimum), where
        else:
            assert sol.objective <= greedy + 1e-9 * abs(greedy), where
            assert sol.bound is None or sol.bound <= optimum + 1e-9 * max(1.0, abs(optimum)), where
        if sol.status == "optimal":
            assert sol.objective == pytest.approx(optimum, rel=1e-9, abs=1e-9), where


@pytest.mark.parametrize("method", sorted(AVOID_RULE))
def test_cross_product_free_methods_stop_at_a_fake_deadline(instances, method):
    inst, avoid = instances["joinorder-chain"], {"cross_products": "avoid"}
    plan = "tree" if AVOID_RULE[method] == "tree" else "order"
    optimum = solve(inst, "bruteforce", params={"plan": plan, **avoid}).objective
    for step in STEPS:
        clock = TickingClock(step=step)
        with use_clock(clock):
            sol = solve(inst, method, time_limit=LIMIT, params=avoid)
        where = (method, step, sol.status, sol.message)
        assert clock.time - step <= LIMIT + MARGIN_READINGS * step, where
        assert sol.bound is None or sol.bound <= optimum + 1e-9 * max(1.0, abs(optimum)), where
        assert sol.plan is not None and sol.objective >= optimum - 1e-9 * max(1.0, abs(optimum)), where
        if sol.status == "optimal":
            assert sol.objective == pytest.approx(optimum, rel=1e-9, abs=1e-9), where
