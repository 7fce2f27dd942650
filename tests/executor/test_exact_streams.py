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
        for plan in (None, "dp-b"):  # every plan: test_join_plans_past_2_53_and_unsorted_spark
            for engine in ("local", "spark"):
                got = execute(str(inst), plan, str(csv), engine=engine, spark=spark, max_work=float("inf"))
                answers.add((got.row_count(), got.digest()))
                got.release()
        assert len(answers) == 1, (csv.name, answers)


@pytest.mark.parametrize("length,slide", [(10, 3), (2.5, 0.5), (0.7, 0.1), (1200, 300)])
def test_window_bounds_exact_past_2_53(length, slide):
    """Window bounds, blocks and window ends of time stamps past 2^53 are those of exact fractions."""
    from fractions import Fraction

    import numpy as np

    from cepopt.executor.partitions import PartitionClass, window_blocks
    from cepopt.hamlet.scope import before_window_end, window_bounds

    w, s = Fraction(length), Fraction(slide)
    ts = np.array([BIG + i for i in range(-3, 12)] + [2 ** 58 + 7, 5], dtype=np.int64)  # window k < 2^63
    lo, hi = window_bounds(ts, length, slide)
    want_hi = [int(t // s) for t in ts.tolist()]
    want_lo = [max(0, int((t - w) // s) + 1) for t in ts.tolist()]
    assert (lo.tolist(), hi.tolist()) == (want_lo, want_hi)
    first, last = window_blocks(ts, PartitionClass(("A",), ("ts", "type"), (), length, slide, 4))
    assert last.tolist() == [h // 4 for h in want_hi]
    ends = before_window_end(ts, hi, slide, length)
    assert ends.tolist() == [t < k * s + w for t, k in zip(ts.tolist(), want_hi, strict=True)]


# ---------------------------------------------------------------------------------------------
# item 2: integer attributes exact on both engines
# ---------------------------------------------------------------------------------------------

V = 2 ** 52 + 1  # odd past 2^52: three of them sum past 2^53
AGGREGATES = "RETURN COUNT(*), SUM(A.v1), MIN(A.v1), MAX(A.v1), AVG(A.v1)"
WINDOW = "WITHIN 100000 SLIDE 100000"
AGG_QUERIES = {
    "sharon": f"q1: {AGGREGATES} PATTERN SEQ(A, B) {WINDOW}",
    "gloria": f"q1: {AGGREGATES} PATTERN SEQ(A, B+) {WINDOW}",
    "hamlet": f"q1: {AGGREGATES} PATTERN SEQ(A, B+) {WINDOW}\nq2: RETURN COUNT(*) PATTERN SEQ(C, B+) {WINDOW}",
}
AGG_PLANS = {"sharon": (None, "greedy"), "gloria": (None, "gloria"), "hamlet": (None, "static", "dynamic")}


def _agg_instance(tmp_path, family: str) -> str:
    from cepopt.instance import Instance, save
    from cepopt.syntax import parse_queries

    path = tmp_path / f"{family}.json"
    save(Instance(family, parse_queries(AGG_QUERIES[family]), Statistics(rates={"A": 1.0, "B": 1.0, "C": 1.0}),
                  name=family), path)
    return str(path)


def _agg_stream(tmp_path, bs: int, missing: bool) -> tuple[str, dict]:
    """Three A events of v1 = V (with ``missing``, a fourth A without v1) then ``bs`` B events; the
    expected values of q1 by counting: a trend picks one A and a non-empty subset of the Bs (SEQ(A, B):
    one B)."""
    rows = ["ts,type,v1", *(f"{i},A,{V}" for i in (1, 2, 3))]
    if missing:
        rows.append("4,A,")
    rows += [f"{10 + i},B,1" for i in range(bs)]
    path = tmp_path / f"agg-{bs}-{missing}.csv"
    path.write_text("\n".join(rows) + "\n")
    a_events = 4 if missing else 3
    return str(path), {"subsets": 2 ** bs - 1, "a": a_events}


def _q1(result) -> dict:
    frame = result.to_pandas()
    rows = frame[frame["query"] == "q1"]
    return dict(zip(rows["aggregate"], rows["value"], strict=True))


def _expected(family: str, shape: dict) -> dict:
    per_a = shape["subsets"] if family != "sharon" else 1  # SEQ(A, B) with one B: one match per A
    return {"COUNT(*)": shape["a"] * per_a, "SUM(A.v1)": 3 * V * per_a, "MIN(A.v1)": V, "MAX(A.v1)": V}


def _check_exact(got: dict, want: dict) -> None:
    for key, value in want.items():
        assert type(got[key]) is int and got[key] == value, (key, got[key], value)


@pytest.mark.parametrize("family", ["sharon", "gloria", "hamlet"])
@pytest.mark.parametrize("missing", [False, True])
def test_integer_sums_exact_local(tmp_path, family, missing):
    from cepopt.pipeline import execute

    inst = _agg_instance(tmp_path, family)
    stream, shape = _agg_stream(tmp_path, 1, missing)
    for plan in AGG_PLANS[family]:
        got = execute(inst, plan, stream, engine="local", max_work=float("inf"))
        _check_exact(_q1(got), _expected(family, shape))
        assert "13510798882111491" in got.preview().to_string()


@pytest.mark.parametrize("family", ["gloria", "hamlet"])
def test_integer_sums_past_2_200_local(tmp_path, family):
    from cepopt.pipeline import execute

    inst = _agg_instance(tmp_path, family)
    stream, shape = _agg_stream(tmp_path, 300, True)
    want = _expected(family, shape)
    assert want["SUM(A.v1)"] > 2 ** 300
    for plan in AGG_PLANS[family]:
        _check_exact(_q1(execute(inst, plan, stream, engine="local", max_work=float("inf"))), want)


def test_integer_beyond_int64_is_refused_local(tmp_path):
    from cepopt.errors import CepoptError

    path = tmp_path / "over.csv"
    path.write_text(f"ts,type,v1\n1,A,{V}\n2,A,{2 ** 63}\n3,B,\n")
    with pytest.raises(CepoptError, match=r"over.csv, line 3: column v1 holds '9223372036854775808', not a 64-bit"):
        read_stream_pandas(path)


#: (family, B events, a missing v1, plan) run on Spark: sums past 2^53 and past 2^300, a missing value
SPARK_AGG_CASES = (("sharon", 1, False, None), ("sharon", 1, True, "greedy"), ("gloria", 300, True, "gloria"),
                   ("hamlet", 1, True, "dynamic"), ("hamlet", 300, True, None))


@pytest.mark.spark
def test_integer_sums_exact_on_both_engines_spark(spark, tmp_path, monkeypatch):
    """Spark gives the local engine's exact values and digest (sums past 2^53 and 2^300, a missing
    value), in one task and on the partitioned path (long columns cross as value and null flag); its
    preview prints the integers; an integer past int64 is the local engine's error."""
    from cepopt.errors import CepoptError
    from cepopt.executor import api
    from cepopt.pipeline import execute

    for index, (family, bs, missing, plan) in enumerate(SPARK_AGG_CASES):
        inst = _agg_instance(tmp_path, family)
        stream, shape = _agg_stream(tmp_path, bs, missing)
        local = execute(inst, plan, stream, engine="local", max_work=float("inf"))
        with monkeypatch.context() as m:
            if index % 2:  # every other case on the partitioned path (a tiny stream runs in one task)
                m.setattr(api, "TINY_ROWS", 0)
                m.setattr(api, "TINY_BYTES", 0)
            got = execute(inst, plan, stream, spark=spark, max_work=float("inf"))
        _check_exact(_q1(got), _expected(family, shape))
        assert (got.digest(), got.row_count()) == (local.digest(), local.row_count()), (family, plan)
        if bs == 1:
            assert str(3 * V) in got.preview().to_string()
        got.release()
    over = tmp_path / "over.csv"
    over.write_text(f"ts,type,v1\n1,A,{V}\n2,A,{2 ** 63}\n3,B,\n")
    with pytest.raises(CepoptError, match=r"over.csv, line 3: column v1 holds '9223372036854775808', not a 64-bit"):
        execute(_agg_instance(tmp_path, "sharon"), None, str(over), spark=spark)


def test_integer_sums_exact_from_an_embedded_stream_local():
    """An embedded stream (event dicts) with a missing value keeps its integers exact."""
    from cepopt.instance import Instance
    from cepopt.pipeline import execute
    from cepopt.syntax import parse_queries

    events = [{"ts": i, "type": "A", "v1": V} for i in (1, 2, 3)] + [{"ts": 4, "type": "A"}, {"ts": 5, "type": "B"}]
    inst = Instance("gloria", parse_queries(AGG_QUERIES["gloria"]), Statistics(rates={"A": 1.0, "B": 1.0}),
                    name="embedded", stream=tuple(events))
    _check_exact(_q1(execute(inst, None, None, engine="local")), _expected("gloria", {"subsets": 1, "a": 4}))


def test_parquet_integer_column_with_a_null_stays_exact_local(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "s.parquet"
    values = pa.array([BIG + 1, None, -BIG - 3], pa.int64())
    pq.write_table(pa.table({"ts": [1, 2, 3], "type": ["A", "A", "A"], "v1": values}), path)
    assert read_stream_pandas(path)["v1"].tolist() == [BIG + 1, None, -BIG - 3]
