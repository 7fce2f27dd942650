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


def _issue_instance(tmp_path):
    from cepopt.instance import Instance, save
    from cepopt.syntax import parse_queries

    path = tmp_path / "j4.json"
    query = parse_queries(JOIN_QUERY)
    rates = {t: 1.0 for t in ("T1", "T2", "T3", "T4")}
    save(Instance("joinorder", query, Statistics(rates=rates), name="j4"), path)
    return path


#: the named join-order methods whose plans `cepopt execute --plan` runs (besides nonshared)
JOIN_METHODS = ("trivial", "efreq", "greedy", "ii-greedy", "dp-ld", "dp-b", "zstream", "zstream-ord", "milp-order",
                "milp-tree", "cpsat-order")


def test_join_methods_agree_past_2_53_local(tmp_path):
    from cepopt.pipeline import execute

    csv = tmp_path / "s.csv"
    csv.write_text(ISSUE_JOIN_CSV)
    inst = _issue_instance(tmp_path)
    for plan in (None, *JOIN_METHODS):
        got = execute(str(inst), plan, str(csv), engine="local", max_work=float("inf"))
        assert (got.row_count(), got.digest()) == (0, "0" * 64), plan


def _unsorted_join_csv(tmp_path) -> tuple:
    """A stream out of time order (ties too) and the matches of its events numbered by file row."""
    import numpy as np

    rng = np.random.default_rng(5)
    n = 60
    ts = rng.integers(0, 40, n) + BIG + 1  # past 2^53, unsorted, with ties
    events = pd.DataFrame({"ts": ts, "type": rng.choice(["T1", "T2", "T3", "T4"], n),
                           "v1": rng.integers(0, 9, n), "v2": rng.integers(0, 9, n)})
    path = tmp_path / "unsorted.csv"
    events.to_csv(path, index=False)
    assert not events["ts"].is_monotonic_increasing
    query = JOIN_QUERY.replace("WITHIN 1200", "WITHIN 20")
    want = reference_matches(parse_query(query), events.assign(id=np.arange(n)))
    assert 5 < len(want) < 5000, len(want)
    return path, query, want


def test_unsorted_stream_numbers_events_by_file_row_local(tmp_path):
    path, query, want = _unsorted_join_csv(tmp_path)
    problem = _join_problem(query)
    events = read_stream_pandas(path)
    digests = set()
    for plan in _every_plan(problem):
        got, digest = _local_matches(problem, plan, events)
        assert got == want, str(plan)
        digests.add(digest)
    assert len(digests) == 1


@pytest.mark.spark
def test_join_plans_past_2_53_and_unsorted_spark(spark, tmp_path):
    """Every order and tree in one Spark job, in one task and through the time-chunk exchange: the
    brute force's matches, numbered by file row, as the local engine gives them."""
    from cepopt.executor.join_eval import evaluate_many, prepare_events
    from cepopt.executor.join_plan import compile_query, join_tree
    from cepopt.executor.streams import read_stream

    issue = tmp_path / "s.csv"
    issue.write_text(ISSUE_JOIN_CSV)
    unsorted, query, want = _unsorted_join_csv(tmp_path)
    for path, text, expected in ((issue, JOIN_QUERY, []), (unsorted, query, want)):
        problem = _join_problem(text)
        plans = _every_plan(problem)
        trees = [join_tree(compile_query(problem.query), plan) for plan in plans]
        for exchange, chunk_windows in ((False, 64), (True, 2)):
            events = prepare_events(read_stream(str(path), spark), number_rows=False)
            ev = evaluate_many(trees, events, exchange=exchange, chunk_windows=chunk_windows,
                               results=lambda m: m)
            found: dict[int, list[str]] = {b: [] for b in range(len(trees))}
            for row in ev.results.collect():
                found[row["_b"]].append(row["value"])
            ev.results.unpersist()
            for b, plan in enumerate(plans):
                assert sorted(found[b]) == expected, (str(plan), exchange)


@pytest.mark.spark
def test_join_methods_agree_with_local_spark(spark, tmp_path):
    from cepopt.pipeline import execute

    issue = tmp_path / "s.csv"
    issue.write_text(ISSUE_JOIN_CSV)
    unsorted, query, want = _unsorted_join_csv(tmp_path)
    inst = _issue_instance(tmp_path)
    for csv in (issue, unsorted):
        answers = set()
        for plan in (None, "greedy", "dp-b", "milp-order"):
            for engine in ("local", "spark"):
                got = execute(str(inst), plan, str(csv), engine=engine, spark=spark, max_work=float("inf"))
                answers.add((got.row_count(), got.digest()))
                got.release()
        assert len(answers) == 1, (csv.name, answers)
