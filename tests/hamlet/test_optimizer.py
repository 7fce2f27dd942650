"""Hamlet optimizer: the benefit model, split/merge decisions, the query-set choice (hamlet.md §4, §7 T7/T8)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.errors import CepoptError
from cepopt.hamlet import (
    Burst,
    GroupState,
    HamletPlan,
    benefit,
    choose_query_set,
    decide,
    nonshared_cost,
    plan_space,
    run_policy,
    shared_cost,
)
from cepopt.hamlet.methods import exhaustive, optimal
from cepopt.hamlet.plan import plan_from_json, plan_to_json
from cepopt.registry import compare, solve


@pytest.mark.parametrize("args, shared, nonshared, gain", [
    ((4, 7, 1, 1, 2, 4, 2), 44, 56, 12),       # Eq. 8: share
    ((4, 11, 2, 1, 2, 8, 2), 120, 88, -32),    # Eq. 9: split
    ((4, 15, 1, 1, 2, 4, 2), 76, 120, 44),     # Eq. 10: merge
])
def test_benefit_model_t7(args, shared, nonshared, gain):
    b, n, s_p, s_c, k, g, t = args
    assert shared_cost(*args) == shared
    assert nonshared_cost(k, b, n) == nonshared
    assert benefit(*args) == gain


FIG6 = [Burst("B", ("q1", "q2"), 4, 7),
        Burst("B", ("q1", "q2"), 4, 11, ((0, 0), (0, 0), (0, 1), (0, 0)), continues=True),
        Burst("B", ("q1", "q2"), 4, 15, continues=True)]


def test_fig6_share_split_merge():
    """Eqs. 8-10: the dynamic optimizer shares (+12), splits (-32), merges (+44)."""
    decisions, total = run_policy(FIG6, "dynamic", 2)
    assert [(d.action, d.benefit) for d in decisions] == [("share", 12), ("split", -32), ("merge", 44)]
    assert [d.queries for d in decisions] == [("q1", "q2"), (), ("q1", "q2")]
    assert total == 44 + 88 + 76
    # static sharing extends the graphlet with the event-level snapshot, then keeps extending
    static, static_total = run_policy(FIG6, "static", 2)
    assert [d.action for d in static] == ["share", "extend", "extend"]
    assert static_total > total


def test_decide_one_burst_and_state():
    assert decide(FIG6[0], t=2).benefit == 12
    state = GroupState()
    state.after(FIG6[0], ("q1", "q2"))
    d = decide(FIG6[1], state, t=2)
    assert (d.action, d.benefit, d.queries) == ("split", -32, ())
    assert decide(FIG6[1], state, "static", t=2).action == "extend"
    with pytest.raises(CepoptError):
        decide(FIG6[0], policy="nope")


def test_plan_space_fig7_t8():
    plans = plan_space(["1", "2", "3", "4"])
    assert len(plans) == 12
    levels = {}
    for p in plans:
        levels[len(p)] = levels.get(len(p), 0) + 1
    assert [levels[i] for i in (1, 2, 3, 4)] == [1, 4, 6, 1]
    kept = plan_space(["1", "2", "3", "4"], no_snapshots={"1", "3"})
    shared = {max(p, key=len) for p in kept}
    assert shared == {frozenset("1234"), frozenset("123"), frozenset("134"), frozenset("13")}


def test_choose_query_set_example_4_6():
    """Queries 2 and 4 introduce snapshots; sharing 2 pays off, sharing 4 does not: (123)(4)."""
    penalty = {"2": -5, "4": 30}   # what each snapshot-introducing query adds to the shared cost

    def cost(s):
        if len(s) < 2:
            return 100.0
        return 40.0 + sum(penalty.get(q, 0) for q in s) + 10.0 * (4 - len(s))

    calls = []

    def counted(s):
        calls.append(frozenset(s))
        return cost(s)

    assert choose_query_set(["1", "2", "3", "4"], ["2", "4"], counted) == frozenset("123")
    # m + 1 plans at Levels 1-2 (plus the chosen set and "nothing shared" for the final check)
    assert {c for c in calls if len(c) >= 3} == {frozenset("1234"), frozenset("134"), frozenset("123")}


def test_dynamic_on_a_burst_with_one_snapshot_query():
    """q3 disagrees on every event: sharing it costs snapshots, so dynamic shares (q1, q2) only."""
    burst = Burst("B", ("q1", "q2", "q3"), 5, 20, ((0, 0, 1),) * 5)
    dyn = decide(burst, policy="dynamic", t=2)
    assert dyn.queries == ("q1", "q2")
    for pol in ("static", "nonshared", "exhaustive"):
        assert dyn.cost <= decide(burst, policy=pol, t=2).cost


def test_burst_validation():
    with pytest.raises(CepoptError):
        Burst("B", ("q1",), 4, 7)
    with pytest.raises(CepoptError):
        Burst("B", ("q1", "q2"), 4, 3)
    with pytest.raises(CepoptError):
        Burst("B", ("q1", "q2"), 2, 7, ((0, 0),))


def test_solve_family_on_bundled_example():
    sols = {s.method: s for s in compare("hamlet-example")}
    assert sols["dynamic"].objective == 208
    assert [(d.action, d.benefit) for d in sols["dynamic"].plan.decisions] == [
        ("share", 12), ("split", -32), ("merge", 44)]
    assert sols["optimal"].status == "optimal"
    assert sols["optimal"].objective <= min(s.objective for s in sols.values())
    assert sols["nonshared"].objective == 56 + 88 + 120
    plan = sols["dynamic"].plan
    assert plan_from_json(None, plan_to_json(plan)) == plan
    assert solve("hamlet-example", "static").objective == sols["static"].objective
    with pytest.raises(CepoptError):
        HamletPlan("sometimes")


# ---------------------------------------------------------------------------------------------
# Properties on random burst sequences
# ---------------------------------------------------------------------------------------------


@st.composite
def burst_sequences(draw):
    k = draw(st.integers(2, 4))
    queries = tuple(f"q{i + 1}" for i in range(k))
    out, n = [], draw(st.integers(0, 10))
    for i in range(draw(st.integers(1, 4))):
        b = draw(st.integers(1, 6))
        n += b + draw(st.integers(0, 5))
        classes = ()
        if draw(st.booleans()):
            classes = tuple(tuple(draw(st.integers(0, 1)) if j else 0 for j in range(k)) for _ in range(b))
        out.append(Burst("B", queries, b, n, classes, continues=i > 0 and draw(st.booleans())))
    return out


class _P:
    from_stream = False

    def __init__(self, bursts):
        self.bursts = tuple(bursts)

    @staticmethod
    def t_of(queries):
        return 2


@settings(max_examples=80)
@given(burst_sequences())
def test_optimal_sequence_beats_every_policy(bursts):
    prob = _P(bursts)
    best = optimal(prob).solver_objective
    for pol in ("dynamic", "static", "nonshared", "exhaustive"):
        _, total = run_policy(bursts, pol, 2)
        assert best <= total + 1e-9
    # per burst, exhaustive is never worse than dynamic from the same state
    state = GroupState()
    for b in bursts:
        assert decide(b, state, "exhaustive").cost <= decide(b, state, "dynamic").cost + 1e-9
        state.after(b, decide(b, state, "dynamic").queries)
    assert exhaustive(prob).plan.policy == "exhaustive"
