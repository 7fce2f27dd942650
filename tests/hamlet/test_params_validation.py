"""User errors in a Hamlet instance's params: every burst field strictly typed and in range, bursts of
a real sharing group, edge predicates on template edges, no unknown keys (one-line CepoptError)."""

from __future__ import annotations

import pytest

from cepopt.errors import CepoptError
from cepopt.hamlet.graphlets import burst_from_json, burst_to_json
from cepopt.hamlet.problem import build
from cepopt.instance import Instance
from cepopt.model import Statistics
from cepopt.registry import solve
from cepopt.syntax import parse_queries

QUERIES = parse_queries("q1: PATTERN SEQ(A, B+) WITHIN 100 SLIDE 100\n"
                        "q2: PATTERN SEQ(C, B+) WITHIN 100 SLIDE 100\n"
                        "q3: PATTERN SEQ(C, D+) WITHIN 100 SLIDE 100")
BURST = {"type": "B", "queries": ["q1", "q2"], "b": 4, "n": 7}


def instance(burst=None, **params) -> Instance:
    params.setdefault("bursts", [{**BURST, **(burst or {})}])
    return Instance("hamlet", QUERIES, Statistics(rates={"A": 4, "B": 8, "C": 4, "D": 1}), params=params)


def test_a_valid_burst_round_trips():
    data = {**BURST, "classes": [[0, 0], [0, 1], [0, 0], [0, 0]], "continues": True, "scope": "s"}
    assert burst_to_json(burst_from_json(data)) == data
    assert solve(instance(), "dynamic").objective == 44  # Eq. 8


@pytest.mark.parametrize("burst, message", [
    ({"b": True}, r"\.b: expected an integer in 1\.\.2\^53, got True"),        # was read as 1
    ({"b": 4.7}, r"\.b: expected an integer .*got 4\.7"),                       # was truncated to 4
    ({"b": "4"}, r"\.b: expected an integer .*got '4'"),
    ({"b": float("inf")}, r"\.b: expected an integer .*got inf"),              # was an OverflowError
    ({"b": 0}, r"\.b: expected an integer"),
    ({"n": 10 ** 400}, r"\.n: expected an integer .*got 1000+\.\.\.$"),       # was an OverflowError
    ({"continues": "no"}, r"\.continues: expected true or false, got 'no'"),  # was read as True
    ({"scope": {"a": 1}}, r"\.scope: expected text"),
    ({"classes": [[0, -5]] * 4}, r"\.classes: expected per event a list of class ids in 0\.\.1"),
    ({"classes": [[0, 2]] * 4}, r"\.classes: expected per event"),
    ({"classes": "abcd"}, r"\.classes: expected per event"),
    ({"type": 5}, r"\.type: expected an event type, got 5"),
    ({"queries": "q1"}, r"\.queries: expected a list of query names"),
    ({"queries": ["q1", "q9"]}, r"\.queries: unknown query 'q9'"),
    ({"queries": ["q1", "q1"]}, r": burst of B: a query is listed twice in q1, q1"),  # changed the objective
    ({"bogus": 1}, r"\.bogus: unknown burst key"),
    ({"type": "Zzz"}, r": q1, q2 are no sharing candidates of a Kleene type 'Zzz' \(sharing groups: B: q1, q2\)"),
    ({"type": "A"}, r": q1, q2 are no sharing candidates of a Kleene type 'A'"),
    ({"type": "D", "queries": ["q2", "q3"]}, r": q2, q3 are no sharing candidates of a Kleene type 'D'"),
])
def test_bad_bursts(burst, message):
    with pytest.raises(CepoptError, match=r"^params\.bursts\[0\]" + message):
        build(instance(burst))


def test_a_burst_needs_its_required_keys():
    data = dict(BURST)
    del data["n"]
    with pytest.raises(CepoptError, match=r"^params\.bursts\[0\]: missing 'n'"):
        build(instance(bursts=[data]))


def test_empty_bursts_are_refused():
    # an empty list has no decision to price (every method scored 0) and hid the embedded stream's bursts
    with pytest.raises(CepoptError, match=r"^params\.bursts: empty; give at least one burst, or leave the key out"):
        build(instance(bursts=[]))
    stream = [{"ts": 1, "type": "A"}, {"ts": 2, "type": "B"}, {"ts": 3, "type": "B"}]
    with pytest.raises(CepoptError, match=r"^params\.bursts: empty"):
        build(Instance("hamlet", QUERIES, Statistics(rates={"A": 4, "B": 8, "C": 4, "D": 1}), params={"bursts": []},
                       stream=stream))


def test_unknown_params_key():
    with pytest.raises(CepoptError, match=r"^params\.bogus: unknown Hamlet parameter"):
        build(instance(bogus=1))


@pytest.mark.parametrize("edge, message", [
    ({"from": "Zzz", "to": "Yyy"}, r"Zzz -> Yyy is no pair of adjacent event types in a trend of q1"),
    ({"from": "B", "to": "A"}, r"B -> A is no pair"),  # A precedes B: never evaluated
    ({"left": 5}, r"expected an object of text fields"),
    ({"extra": "x"}, r"expected an object of text fields"),
])
def test_bad_edge_predicates(edge, message):
    item = {"query": "q1", "from": "B", "to": "B", "left": "v", "op": "<", "right": "v", **edge}
    with pytest.raises(CepoptError, match=r"^params\.edge_predicates\[0\]: " + message):
        build(instance(edge_predicates=[item]))


def test_edge_predicates_on_template_edges_are_accepted():
    for src, dst in (("B", "B"), ("A", "B")):
        item = {"query": "q1", "from": src, "to": dst, "left": "v", "op": "<=", "right": "v"}
        assert build(instance(edge_predicates=[item])).classes[0].query("q1").edges[-1].src == src


@pytest.mark.parametrize("values,pane", [([600, 60], 60), ([10, 4], 2), ([1.5, 1], 0.5), ([0.3, 0.2], 0.1)])
def test_pane_size_is_the_gcd_of_windows_and_slides(values, pane):
    from cepopt.hamlet.problem import pane_size

    assert pane_size(values) == pytest.approx(pane)
