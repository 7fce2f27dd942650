"""The configurable terms of Eq. 7. ``eq7_n`` (hamlet.md §8.7): n counts the events in the graph
including the burst ("graph", the paper's examples, default) or those before it ("before", the
authors' code). ``eq7_t`` (§8.8): t is a query's number of types ("types", default), one less
("others", the text of Eq. 6) or 1 ("one", the authors' code). Hand-computed Fig. 6 costs, the options
through solve, the executor's run-time decisions and the CLI."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from cepopt.errors import CepoptError
from cepopt.executor import trend_exec
from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results
from cepopt.hamlet import run_policy
from cepopt.hamlet.graphlets import stream_bursts
from cepopt.hamlet.problem import build, compile_workload
from cepopt.instance import load
from cepopt.registry import solve

from .test_optimizer import FIG6

BEFORE = [dataclasses.replace(b, n_rule="before") for b in FIG6]


def test_before_rule_on_fig6_by_hand():
    # n = 3, 7, 11 (events before each burst of 4). Burst 1: share 4*3*1 + 1*2*4*2 = 28 against
    # 2*4*3 = 24. Burst 2 (one event needs a snapshot): share 4*7*2 + 2*2*4*2 = 88 against 56.
    # Burst 3: share 4*11*1 + 1*2*4*2 = 60 against 88.
    assert [b.n_eq7 for b in BEFORE] == [3, 7, 11] and [b.n_eq7 for b in FIG6] == [7, 11, 15]
    decisions, total = run_policy(BEFORE, "dynamic", 2)
    assert [d.benefit for d in decisions] == [24 - 28, 56 - 88, 88 - 60]
    assert [d.queries for d in decisions] == [(), (), ("q1", "q2")]
    assert total == 24 + 56 + 60
    assert run_policy(BEFORE, "nonshared", 2)[1] == 24 + 56 + 88


def test_t_of_the_other_types_on_fig6_by_hand():
    # t = 1. Burst 1: share 4*7*1 + 1*2*4*1 = 36 against 56. Burst 2 extends the graphlet with one
    # event-level snapshot: 4*11*2 + 1*2*8*1 = 104 against 88, so split. Burst 3 merges: 4*15*1 + 8 = 68.
    decisions, total = run_policy(FIG6, "dynamic", 1)
    assert [(d.action, d.benefit) for d in decisions] == [("share", 20), ("split", -16), ("merge", 52)]
    assert total == 36 + 88 + 68


def test_options_reach_solve():
    assert solve("hamlet-example", "dynamic", params={"eq7_n": "before"}).objective == 24 + 56 + 60
    assert solve("hamlet-example", "dynamic").objective == 44 + 88 + 76
    assert solve("hamlet-example", "nonshared", params={"eq7_n": "before"}).objective == 24 + 56 + 88
    # both queries have two types: "others" and "one" give t = 1
    for rule in ("others", "one"):
        assert solve("hamlet-example", "dynamic", params={"eq7_t": rule}).objective == 36 + 88 + 68


@pytest.mark.parametrize("n_rule, t_rule", [("graph", "types"), ("before", "types"), ("graph", "others"),
                                             ("before", "one")])
def test_executor_decides_as_the_optimizer_prices(n_rule, t_rule):
    """The kernel builds its bursts at run time: under every rule its decisions cost what the cost
    model gives the same bursts, and the answers stay the brute-force ones."""
    inst = load("hamlet-example")
    events = pd.DataFrame(list(inst.stream))
    params = {"eq7_n": n_rule, "eq7_t": t_rule}
    decisions: list = []
    got, _ = trend_exec.run_hamlet(inst.workload, events, "dynamic", params=params, decisions=decisions)
    assert compare_results(got, reference_results(inst.workload, events)) == []
    bursts = stream_bursts(compile_workload(inst.workload, params), inst.stream)
    assert {b.n_rule for b in bursts} == {n_rule}
    expected, total = run_policy(bursts, "dynamic", 2 if t_rule == "types" else 1)
    assert [d.cost for d in decisions] == [d.cost for d in expected]
    assert sum(d.cost for d in decisions) == total


@pytest.mark.parametrize("key", ["eq7_n", "eq7_t"])
def test_unknown_rule_is_a_user_error(capsys, key):
    with pytest.raises(CepoptError, match=key):
        build(load("hamlet-example"), **{key: "final"})
    from cepopt.cli import main

    code = main(["solve", "hamlet-example", "-m", "dynamic", "--param", f"{key}=final"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and key in err
