"""Regression tests: the cases listed in issue 21 in this helper's area, and what the fuzzing suite found.

Each bad input gives one clear line (a CepoptError; exit 2 on the command line). Bugs found in other
helpers' files are ``xfail(strict=True)`` with the owner in the reason: the mark fails as soon as the
bug is fixed, so that it is removed then.
"""

from __future__ import annotations

import re

import pytest

from cepopt.cli import main
from cepopt.errors import CepoptError
from cepopt.instance import load
from cepopt.registry import build_problem, solve

HUGE = 10**400


def user_error(capsys, *argv: str) -> str:
    capsys.readouterr()
    code = main(list(argv))
    _, err = capsys.readouterr()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("cepopt: error: "), err
    return err


# ---------------------------------------------------------------------------------------------
# Issue 21, part 1: tracebacks that must be one line (this helper's area)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["milp", "milp-compact", "cpsat", "greedy"])
@pytest.mark.parametrize("limit", ["inf", "1e308", "nan", "-1", "0", "1" + "0" * 400])
def test_time_limits_are_checked_before_any_solver(capsys, method, limit):
    err = user_error(capsys, "solve", "sharon-fig4", "--method", method, "--time-limit", limit)
    assert "--time-limit: must be a number of seconds in (0, 1e+07]" in err


@pytest.mark.parametrize("limit", [float("inf"), 1e308, float("nan"), -1, 0, HUGE, "abc", True])
def test_time_limits_in_the_python_api(limit):
    with pytest.raises(CepoptError, match="time limit: must be a number of seconds"):
        solve("sharon-fig4", "milp", time_limit=limit)


@pytest.mark.parametrize("method,seed", [("cpsat", "2147483648"), ("cpsat", "99999999999"), ("ii-random", "-1"),
                                         ("ii-random", "1.5"), ("greedy", "x")])
def test_seeds_out_of_range(capsys, method, seed):
    instance = "sharon-fig4" if method == "cpsat" else "joinorder-e6"
    err = user_error(capsys, "solve", instance, "--method", method, "--seed", seed)
    assert "--seed: must be an integer in [0, 2147483647]" in err
    with pytest.raises(CepoptError, match="seed: must be an integer"):
        solve(instance, method, seed=seed)


@pytest.mark.parametrize("instance,method,key", [
    ("joinorder-e6", "greedy", "alpha"),           # a problem option (cepopt/joinorder/problem.py)
    ("joinorder-e6", "cpsat-order", "scale"),      # a method option (cepopt/params.py)
    ("joinorder-e6", "milp-order", "tol"),
    ("gloria-fig7", "exhaustive", "max_plans"),
])
def test_a_float_option_given_as_a_400_digit_integer(instance, method, key):
    with pytest.raises(CepoptError, match=f"params.{key}") as info:
        solve(instance, method, params={key: HUGE})
    assert len(str(info.value)) < 400


def test_an_instance_argument_longer_than_the_file_name_limit(capsys):
    err = user_error(capsys, "solve", "x" * 5000, "--method", "greedy")
    assert "File name too long" in err and len(err) < 400
    with pytest.raises(CepoptError, match="cannot read: File name too long"):
        load("y" * 300)


@pytest.mark.parametrize("spec,message", [
    ("gen:workload:events=x", "events: expected an integer, got 'x'"),
    ("gen:workload:events=1.5", "events: expected an integer, got 1.5"),
    ("gen:workload:events=99999999999", "events: at most 5000000"),
])
def test_stream_generator_parameters_of_the_issue(spec, message):
    from cepopt.executor.streams import resolve_stream_pandas

    with pytest.raises(CepoptError, match=message):
        resolve_stream_pandas(spec, load("joinorder-e6"))


def test_generate_joinorder_size_99999_is_refused_before_it_runs(capsys, tmp_path):
    err = user_error(capsys, "generate", "joinorder", "--size", "99999", "-o", str(tmp_path / "j.json"))
    assert "argument --size: at most 1000 (the generator's stated maximum)" in err


# ---------------------------------------------------------------------------------------------
# Found by the fuzzing suite, fixed here
# ---------------------------------------------------------------------------------------------


def test_an_embedded_stream_attribute_must_be_a_scalar():
    from cepopt.errors import InstanceError
    from cepopt.instance import from_json

    doc = {"problem": "hamlet", "queries": ["q1: PATTERN SEQ(A, B+) WITHIN 10", "q2: PATTERN SEQ(C, B+) WITHIN 10"],
           "stream": [{"ts": 1, "type": "A", "g": [1, 2]}]}
    with pytest.raises(InstanceError, match=r"stream\[0\].g: must be a JSON number or string or boolean or null"):
        from_json(doc)
    doc["stream"] = [{"ts": 2**63, "type": "A"}]
    with pytest.raises(InstanceError, match=r"stream\[0\].ts: .* greater than the maximum"):
        from_json(doc)


@pytest.mark.parametrize("value,shown", [(HUGE, "of 1329 bits"), (-(2**63) - 1, str(-(2**63) - 1)),
                                         (2**63, str(2**63))])
def test_an_embedded_stream_attribute_beyond_64_bits(value, shown):
    from cepopt.errors import InstanceError
    from cepopt.instance import from_json

    doc = json_document("hamlet-example")
    doc["stream"] = [dict(doc["stream"][0]), {**doc["stream"][1], "speed": value}]
    with pytest.raises(InstanceError, match=re.escape(f"stream[1].speed: the integer {shown} is beyond the 64-bit")):
        from_json(doc)  # was OverflowError (int too large to convert to float) when the problem was built
    doc["stream"][1]["speed"] = 2**63 - 1
    build_problem(from_json(doc))


def json_document(name: str) -> dict:
    import json

    from cepopt.instance import bundled_path

    return json.loads(bundled_path(name).read_text())


@pytest.mark.parametrize("value", [{"kind": "order", "events": None}, {"kind": "order", "events": "e1e2"},
                                   {"kind": "order", "events": ["e1"], "negations": 5},
                                   {"kind": "tree", "tree": {"node": ["e1", "e2"], "not": None}},
                                   {"kind": "or", "branches": None}, {"kind": ["order"]}])
def test_malformed_join_order_plans(value):
    fam, problem, _ = build_problem(load("joinorder-e6"))
    with pytest.raises(CepoptError, match="plan"):
        fam.plan_from_json(problem, value)


def test_a_hamlet_plan_with_a_400_digit_cost():
    fam, problem, _ = build_problem(load("hamlet-example"))
    value = {"policy": "replay", "decisions": [{"type": "B", "queries": ["q1", "q2"], "cost": HUGE}]}
    with pytest.raises(CepoptError, match="plan.decisions: malformed decision"):
        fam.plan_from_json(problem, value)


@pytest.mark.parametrize("spec,message", [
    ("gen:bursty:drivers=0", "drivers: must be >= 1"),      # was ValueError: high <= 0
    ("gen:bursty:burst=1e9", "burst: must be <= 1e+06"),     # was an allocation of 10^15 run slots
    ("gen:ecommerce:rate=1e-300", "rate: must be >= 1e-06"),  # was time stamps wrapped around int64
    ("gen:stock:rate_max=2", "rate_max: must be <= 1"),
    ("gen:linear-road:lanes=0", "lanes: must be >= 1"),
    ("gen:hamlet:path=" + "x" * 300, "no such Hamlet stream file"),  # was OSError: file name too long
])
def test_stream_generator_bounds(spec, message):
    from cepopt.executor.streams import resolve_stream_pandas

    with pytest.raises(CepoptError, match=re.escape(message)):
        resolve_stream_pandas(spec, load("joinorder-e6"))


def test_bursty_keeps_a_long_kleene_type_name():
    from cepopt.instances.streams import generate

    df = generate("bursty", events=300, kleene="LongKleeneType", seed=1)
    assert "LongKleeneType" in set(df["type"]) and "Lon" not in set(df["type"])


def test_generate_hamlet_refuses_a_stream_of_thousands_of_windows(capsys, tmp_path):
    err = user_error(capsys, "generate", "hamlet", "--rate", "1", "--bursts", "-o", str(tmp_path / "h.json"))
    assert "windows (at most 200)" in err


@pytest.mark.parametrize("flags,message", [
    (["--burst", "0", "--rate", "0"], "--burst: must be >= 1, got 0.0"),  # was ZeroDivisionError
    (["--rate", "0"], "--rate: must be >= 1e-06, got 0.0"),
    (["--frequency", "1.5"], "--frequency: must be <= 1, got 1.5"),
    (["--events", "-1"], "--events: must be >= 0, got -1"),
])
def test_generate_hamlet_checks_the_stream_flags_first(capsys, tmp_path, flags, message):
    from cepopt.hamlet.generator import make_instance

    err = user_error(capsys, "generate", "hamlet", *flags, "-o", str(tmp_path / "h.json"))
    assert message in err
    options = {flags[i].lstrip("-"): float(flags[i + 1]) for i in range(0, len(flags), 2)}
    with pytest.raises(CepoptError, match=re.escape(message.split(", got")[0])):
        make_instance(**{k: int(v) if k == "events" else v for k, v in options.items()})


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_folder_that_is_no_parquet_stream_is_refused_without_a_walk(capsys, engine, monkeypatch):
    from pathlib import Path

    def no_walk(self, pattern):
        raise AssertionError(f"rglob({pattern!r}) walked {self}")

    monkeypatch.setattr(Path, "rglob", no_walk)
    for folder in ("/", "/proc"):  # was PermissionError from rglob over /proc
        err = user_error(capsys, "execute", "gloria-e6", "--stream", folder, "--engine", engine)
        assert f"{folder}: a folder without Parquet files" in err


def test_a_parquet_folder_as_spark_writes_it(tmp_path):
    import pandas as pd

    from cepopt.executor.streams import parquet_files, read_stream_pandas

    folder = tmp_path / "s.parquet"
    for key, rows in (("g=1", [3, 1]), ("g=2", [2])):
        (folder / key).mkdir(parents=True)
        pd.DataFrame({"ts": rows, "type": ["A"] * len(rows)}).to_parquet(folder / key / "part-00000-x.snappy.parquet")
    (folder / "_SUCCESS").write_text("")
    (folder / "g=1" / ".part-00000-x.snappy.parquet.crc").write_bytes(b"crc")
    (folder / "notes").mkdir()  # not key=value: not entered
    (folder / "notes" / "old.parquet").write_bytes(b"garbage")
    assert [f.relative_to(folder).as_posix() for f in parquet_files(folder, "s")] == [
        "g=1/part-00000-x.snappy.parquet", "g=2/part-00000-x.snappy.parquet"]
    df = read_stream_pandas(folder)
    assert df["ts"].tolist() == [3, 1, 2] and df["g"].tolist() == [1, 1, 2]  # file order, files in name order
    empty = tmp_path / "empty"
    (empty / "k=v").mkdir(parents=True)
    with pytest.raises(CepoptError, match="empty: a folder without Parquet files"):
        read_stream_pandas(empty)


@pytest.mark.parametrize("text,stamps", [
    ("ts,type\n68353271807575464,A\n2.0,B\n", [68353271807575464, 2]),  # was read back as ...456
    ("ts,type\n9223372036854775807,A\n-9223372036854775808,B\n", [2**63 - 1, -(2**63)]),
    ("ts,type\n 5 ,A\n1e1,B\n", [5, 10]),
])
def test_csv_time_stamps_are_read_exactly(tmp_path, text, stamps):
    from cepopt.executor.streams import read_stream_pandas

    (tmp_path / "s.csv").write_text(text)
    assert read_stream_pandas(tmp_path / "s.csv")["ts"].tolist() == stamps


@pytest.mark.parametrize("text,message", [
    ("ts,type\nTRUE\n", r"line 2: time stamp ts is not an integer: 'TRUE'"),  # was OverflowError (a bool ts)
    ("ts,type\n1e400,A\n", r"line 2: time stamp ts is beyond the 64-bit range: '1e400'"),
    ("ts,type\n1_000,A\n", r"line 2: time stamp ts is not an integer: '1_000'"),  # Python's int() reads it
    ("ts,type,v\n1,A,1\n2,A,9223372036854775808\n", r"line 3: column v holds '9223372036854775808', not a 64-bit"),
    ("ts,type,v\n1,A,1.5\n2,A,-9007199254740993\n", r"line 3: column v holds the integer '-9007199254740993'"),
])
def test_csv_values_no_engine_reads_exactly_are_refused(tmp_path, text, message):
    from cepopt.executor.streams import read_stream_pandas

    (tmp_path / "s.csv").write_text(text)
    with pytest.raises(CepoptError, match="s.csv, " + message):
        read_stream_pandas(tmp_path / "s.csv")


def test_csv_integers_within_2_to_the_53_stay_exact(tmp_path):
    from cepopt.executor.streams import read_stream_pandas

    (tmp_path / "s.csv").write_text("ts,type,v,w\n1,01,9007199254740992,1.5\n2,A,-9007199254740992,1e300\n")
    df = read_stream_pandas(tmp_path / "s.csv")
    assert df["v"].tolist() == [2**53, -(2**53)] and df["type"].tolist() == ["01", "A"]
    # an integer column is exact past 2^53 too (int64), a missing value leaving Python ints and None
    (tmp_path / "s.csv").write_text("ts,type,v\n1,A,68353271807575464\n2,A,\n3,A,-9223372036854775808\n")
    assert read_stream_pandas(tmp_path / "s.csv")["v"].tolist() == [68353271807575464, None, -(2**63)]


@pytest.mark.parametrize("columns,message", [
    ({"ts": [True, False, True]}, "column 'ts' has type bool, not a number"),  # was OverflowError
    ({"ts": [None, True, None]}, "row 0: time stamp ts is missing"),
    ({"ts": ["5", "68353271807575464", "x"]}, "row 2: time stamp ts is not an integer: 'x'"),
    ({"ts": [2**64 - 1, 0, 1]}, "row 0: time stamp ts is beyond the 64-bit range"),  # uint64
])
def test_parquet_time_stamps_that_are_no_int64(tmp_path, columns, message):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cepopt.executor.streams import read_stream_pandas

    columns = {**columns, "type": ["A", "A", "A"]}
    if columns["ts"][0] == 2**64 - 1:
        pq.write_table(pa.table({"ts": pa.array(columns["ts"], pa.uint64()), "type": columns["type"]}),
                       tmp_path / "s.parquet")
    else:
        pd.DataFrame(columns).to_parquet(tmp_path / "s.parquet")
    with pytest.raises(CepoptError, match=re.escape(f"s.parquet{'' if 'column' in message else ', '}") + ".*"
                       + re.escape(message)):
        read_stream_pandas(tmp_path / "s.parquet")


# ---------------------------------------------------------------------------------------------
# Found by the fuzzing suite in other helpers' files (xfail strict: remove the mark with the fix)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def no_spark(monkeypatch):
    from cepopt.executor import session

    def refuse(*args, **kwargs):
        raise CepoptError("(test) Spark would start here")

    monkeypatch.setattr(session, "get_spark", refuse)


def test_execute_stream_path_longer_than_the_file_name_limit():
    from cepopt.executor.streams import resolve_stream_pandas

    with pytest.raises(CepoptError, match="stream"):
        resolve_stream_pandas("x" * 300 + ".csv", load("sharon-example3"))


def test_execute_plan_name_longer_than_the_file_name_limit(capsys, no_spark):
    user_error(capsys, "execute", "sharon-example3", "--plan", "x" * 300)


@pytest.mark.parametrize("text", ["ts,type\n99999999999999999999,A\n",
                                  "ts,type\n-99999999999999999999,A\n"])
def test_csv_time_stamps_beyond_int64(tmp_path, text):
    from cepopt.executor.streams import read_stream_pandas

    (tmp_path / "s.csv").write_text(text)
    with pytest.raises(CepoptError, match="ts"):
        read_stream_pandas(tmp_path / "s.csv")



@pytest.mark.spark
def test_spark_reads_csv_numbers_as_the_local_engine_does(spark, tmp_path):
    """Both engines read a 17-digit time stamp exactly, an integer column exactly (as int64) and refuse
    an integer beyond 2^53 in a float column with the same line (a double would round it)."""
    from cepopt.executor.engines import spark_failure
    from cepopt.executor.streams import read_stream, read_stream_pandas

    def both(path):
        try:
            rows = read_stream(path, spark).collect()
        except CepoptError as exc:
            spark_side = exc
        except Exception as exc:  # noqa: BLE001 -- the job's failure, as the engines report it
            spark_side = spark_failure(exc, str(path))
        else:
            spark_side = sorted((r["ts"], r["type"], r["v"]) for r in rows)
        try:
            df = read_stream_pandas(path)
            local_side = sorted(zip(df["ts"].tolist(), df["type"].tolist(), df["v"].tolist(), strict=True))
        except CepoptError as exc:
            local_side = exc
        return spark_side, local_side

    path = tmp_path / "s.csv"
    path.write_text("ts,type,v\n68353271807575464,01,1\n2.0,B,9007199254740992\n")
    assert both(path) == ([(2, "B", 9007199254740992), (68353271807575464, "01", 1)],) * 2
    path.write_text("ts,type,v\n1,A,1\n2,A,68353271807575463\n")  # an integer column: exact past 2^53
    assert both(path) == ([(1, "A", 1), (2, "A", 68353271807575463)],) * 2
    for text in ("ts,type,v\n1,A,1.5\n2,A,68353271807575464\n", "ts,type,v\n1,A,1.5\n2,A,-99999999999999999999999\n"):
        path.write_text(text)
        spark_side, local_side = both(path)
        assert isinstance(spark_side, CepoptError) and str(spark_side) == str(local_side), (spark_side, local_side)
        assert "s.csv, line 3: column v holds the integer" in str(spark_side)
