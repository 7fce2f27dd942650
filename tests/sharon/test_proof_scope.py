"""An exact method's "optimal" is a claim about the problem, not about the graph it happened to search:
a capped expansion (``options_cut``) or the unsound literal Alg. 2 must not be reported as a proof."""

from __future__ import annotations

import pytest

from cepopt.instance import from_json
from cepopt.registry import compare, solve

# q4 and q5 share (B,C) and q2..q5 share (C,C); (C,C) conflicts with (B,C) in q4 and q5, so the best
# plan shares (C,C) by q2, q3 only: an option that a cap of one option per candidate cuts
CAPPED = {"problem": "sharon", "name": "capped",
          "queries": ["q1: PATTERN SEQ(B,D,D,A) WITHIN 10 s", "q2: PATTERN SEQ(C,C) WITHIN 10 s",
                      "q3: PATTERN SEQ(C,C) WITHIN 10 s", "q4: PATTERN SEQ(B,C,C) WITHIN 10 s",
                      "q5: PATTERN SEQ(B,C,C,A) WITHIN 10 s"],
          "statistics": {"rates": {"A": 3, "B": 3, "C": 1, "D": 3}}}

# the literal Alg. 2 (fixed min, Score_max without F) drops a vertex of every optimum here
LITERAL = {"problem": "sharon", "name": "literal",
           "queries": ["q1: PATTERN SEQ(C,C) WITHIN 10 s", "q2: PATTERN SEQ(C,B,C,B) WITHIN 10 s",
                       "q3: PATTERN SEQ(B,A,D,A) WITHIN 10 s", "q4: PATTERN SEQ(A,D,A,C,B,C,B) WITHIN 10 s",
                       "q5: PATTERN SEQ(A,D,A) WITHIN 10 s"],
           "statistics": {"rates": {"A": 1, "B": 2, "C": 1, "D": 1}}, "params": {"expand": False}}

GRAPH_METHODS = ["sharon", "exhaustive", "bruteforce", "cpsat", "milp"]


@pytest.mark.parametrize("method", GRAPH_METHODS)
def test_a_capped_expansion_is_not_reported_as_optimal(method):
    inst = from_json(CAPPED)
    full = solve(inst, "cpsat-compact")
    capped = solve(inst, method, params={"max_options": 1})
    assert capped.stats["options_cut"] > 0
    assert capped.objective < full.objective  # the cap cut the optimum away ...
    assert capped.status == "feasible"  # ... so no proof is claimed, and its bound is the gain bound of every
    assert capped.bound is not None and capped.bound >= full.objective  # option set, not the capped graph's
    assert "max_options" in capped.message
    uncapped = solve(inst, method)
    assert uncapped.status == "optimal" and uncapped.objective == pytest.approx(full.objective)


def test_compare_keeps_the_compact_proof_beside_a_capped_graph():
    # compare builds the problem once: the graph methods' expansion stats must not leak into the
    # compact models, which never enumerate options
    sols = compare(from_json(CAPPED), ["cpsat", "cpsat-compact"], params={"max_options": 1})
    by = {s.method: s for s in sols}
    assert by["cpsat"].status == "feasible"
    assert by["cpsat-compact"].status == "optimal" and by["cpsat-compact"].bound == by["cpsat-compact"].objective


def test_the_literal_reduction_is_not_a_proof():
    inst = from_json(LITERAL)
    lit = solve(inst, "sharon", params={"reduction": "literal"})
    best = solve(inst, "bruteforce")
    assert lit.objective < best.objective
    assert lit.status == "feasible" and lit.bound is None and "unsound" in lit.message
    assert solve(inst, "sharon").status == "optimal"


def test_none_lifts_the_option_cap_and_bad_caps_are_refused():
    from cepopt.errors import CepoptError

    inst = from_json(CAPPED)
    for no_cap in (None, "none"):
        sol = solve(inst, "cpsat", params={"max_options": no_cap})
        assert sol.stats["options_cut"] == 0 and sol.status == "optimal"
    for bad in (0, -1, "x", True, 2.5):
        with pytest.raises(CepoptError, match="params.max_options"):
            solve(inst, "cpsat", params={"max_options": bad})


def test_weights_whose_sum_overflows_are_refused():
    from cepopt.errors import CepoptError
    from cepopt.instance import load, to_json

    inst = load("sharon-fig4")
    weights = dict(inst.params["weights"])
    for key in list(weights)[:2]:
        weights[key] = 1e308
    with pytest.raises(CepoptError, match="sum beyond float range"):
        solve(from_json({**to_json(inst), "params": {**inst.params, "weights": weights}}), "greedy")
