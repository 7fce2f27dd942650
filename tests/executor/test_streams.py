"""Stream readers (error paths), generator specs and generator determinism."""

from __future__ import annotations

import pandas as pd
import pytest

from cepopt.errors import CepoptError, UnknownNameError
from cepopt.executor.streams import (
    parse_generator_spec,
    read_stream,
    read_stream_pandas,
    resolve_stream_pandas,
    stream_format,
)
from cepopt.instances.streams import generate, names

SMALL = {"ecommerce": {"events": 500}, "linear-road": {"events": 500}, "bursty": {"events": 500}}


def test_parse_generator_spec():
    assert parse_generator_spec("gen:ecommerce:events=200000,seed=1,rate=2.5,names=a") == (
        "ecommerce", {"events": 200000, "seed": 1, "rate": 2.5, "names": "a"})
    assert parse_generator_spec("gen:bursty") == ("bursty", {})
    with pytest.raises(CepoptError, match="key=value"):
        parse_generator_spec("gen:bursty:events")


@pytest.mark.parametrize("name", sorted(SMALL))
def test_generators_are_deterministic_per_seed(name):
    a = generate(name, seed=1, **SMALL[name])
    b = generate(name, seed=1, **SMALL[name])
    c = generate(name, seed=2, **SMALL[name])
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    assert a["ts"].dtype == "int64" and a["ts"].is_monotonic_increasing
    assert len(a) == SMALL[name]["events"]


def test_bursty_bursts_and_ecommerce_rate():
    df = generate("bursty", seed=0, events=5000, burst=50, frequency=0.3)
    runs = (df["type"] != df["type"].shift()).cumsum()
    lengths = df[df["type"] == "T0"].groupby(runs[df["type"] == "T0"]).size()
    assert 30 < lengths.mean() < 70
    ec = generate("ecommerce", seed=0, events=6000, rate=3000)
    assert ec["ts"].max() == 1 and ec["type"].nunique() == 50


def test_workload_generator_uses_the_instance():
    from cepopt.instance import from_json

    inst = from_json({"problem": "sharon", "queries": [
        "q1: RETURN COUNT(*), SUM(A.v) PATTERN SEQ(A, B) WHERE [g] AND A.x > 3 GROUP-BY h WITHIN 10 SLIDE 2"],
        "statistics": {"rates": {"A": 3, "B": 1}}})
    df = resolve_stream_pandas("gen:workload:events=4000,seed=3,groups=3", inst)
    assert set(df["type"]) == {"A", "B"}
    assert 2.5 < (df["type"] == "A").sum() / (df["type"] == "B").sum() < 3.5
    assert set(df["g"]) == {0, 1, 2} and {"h", "x", "v"} <= set(df.columns)
    assert 0.2 < (df["x"] > 3).mean() < 0.8
    pd.testing.assert_frame_equal(df, resolve_stream_pandas("gen:workload:events=4000,seed=3,groups=3", inst))


def test_unknown_generator_and_parameter():
    with pytest.raises(UnknownNameError, match="known: .*ecommerce"):
        generate("nope")
    with pytest.raises(CepoptError, match="no parameter 'bogus'"):
        generate("bursty", bogus=1)
    assert "stock" in names()


def test_embedded_stream_missing():
    from cepopt.instance import from_json

    inst = from_json({"problem": "sharon", "queries": ["q1: PATTERN SEQ(A, B) WITHIN 10"],
                      "statistics": {"rates": {"A": 1, "B": 1}}})
    with pytest.raises(CepoptError, match="no embedded stream"):
        resolve_stream_pandas(None, inst)


def test_csv_errors_name_file_and_line(tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("ts,type,v\n2,B,1\n1,A,2\n")
    df = read_stream_pandas(good)
    assert df["ts"].tolist() == [2, 1] and df["type"].tolist() == ["B", "A"]  # file order: rows number events
    missing = tmp_path / "missing.csv"
    missing.write_text("time,type\n1,A\n")
    with pytest.raises(CepoptError, match=r"missing.csv: no column 'ts'"):
        read_stream_pandas(missing)
    bad = tmp_path / "bad.csv"
    bad.write_text("ts,type\n1,A\nabc,B\n")
    with pytest.raises(CepoptError, match=r"bad.csv, line 3: time stamp ts is not an integer: 'abc'"):
        read_stream_pandas(bad)
    null = tmp_path / "null.csv"
    null.write_text("ts,type\n1,A\n,B\n")
    with pytest.raises(CepoptError, match=r"null.csv, line 3: time stamp ts is missing"):
        read_stream_pandas(null)
    with pytest.raises(CepoptError, match="no such stream file"):
        read_stream_pandas(tmp_path / "nope.csv")
    with pytest.raises(CepoptError, match="unknown stream format"):
        (tmp_path / "x.txt").write_text("ts,type\n")
        read_stream_pandas(tmp_path / "x.txt")


def test_parquet_reader(tmp_path):
    path = tmp_path / "s.parquet"
    pd.DataFrame({"ts": [3, 1], "type": ["A", "B"], "v": [1.5, 2.5]}).to_parquet(path)
    assert read_stream_pandas(path)["ts"].tolist() == [3, 1]  # file order
    pd.DataFrame({"ts": [1.5], "type": ["A"]}).to_parquet(tmp_path / "f.parquet")
    with pytest.raises(CepoptError, match="row 0: time stamp ts is not an integer"):
        read_stream_pandas(tmp_path / "f.parquet")


def test_hamlet_reader(shared_dir):
    df = generate("hamlet", file="Syn_TestStream")
    assert len(df) > 0 and df["ts"].is_monotonic_increasing
    assert df["type"].str.startswith("T").all()
    first = generate("hamlet", file="Stream_shared_5", events=2000)
    assert len(first) == 2000


def test_uris_are_not_looked_up_before_spark(tmp_path):
    # a URI is Spark's to read: no local existence check refuses it
    assert stream_format("hdfs://namenode:8020/data/events.csv") == "csv"
    assert stream_format("s3a://bucket/streams/day1.parquet") == "parquet"
    assert stream_format("s3a://bucket/streams/day1/") == "parquet"
    (tmp_path / "s.csv").write_text("ts,type\n1,A\n")
    assert stream_format((tmp_path / "s.csv").as_uri()) == "csv"
    with pytest.raises(CepoptError, match="no such stream file"):
        stream_format((tmp_path / "none.csv").as_uri())


def test_pandas_reader_names_bad_time_stamps(tmp_path):
    big = tmp_path / "big.csv"
    big.write_text("ts,type\n1,A\n99999999999999999999,B\n")
    with pytest.raises(CepoptError, match=r"big.csv, line 3: time stamp ts is beyond the 64-bit range"):
        read_stream_pandas(big)
    notype = tmp_path / "notype.csv"
    notype.write_text("ts,type\n1,A\n2,\n")
    with pytest.raises(CepoptError, match=r"notype.csv, line 3: event type is missing"):
        read_stream_pandas(notype)


def _consume(sdf, source):
    """Run a job over ``sdf`` as an engine does, with its failures as one line."""
    from cepopt.executor.engines import spark_failure

    try:
        return sdf.collect()
    except Exception as exc:  # noqa: BLE001
        raise spark_failure(exc, str(source)) from None


@pytest.mark.spark
def test_spark_reader_errors(spark, tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("ts,type,v\n1,A,2\n2,B,1\n")
    assert dict(read_stream(good, spark).dtypes)["ts"] == "bigint"
    assert dict(read_stream(good.as_uri(), spark).dtypes)["v"] == "bigint"  # an integer column: exact
    good.write_text("ts,type,v\n1,A,2\n2,B,1.5\n")
    assert dict(read_stream(good.as_uri(), spark).dtypes)["v"] == "double"
    cases = {
        "ts,type\n1,A\n2,B\nx,C\n": r"bad.csv, line 4: time stamp ts is not an integer: 'x'$",
        "ts,type\n1,A\n,B\n": r"bad.csv, line 3: time stamp ts is missing$",
        "ts,type\n1,A\n99999999999999999999,B\n": r"bad.csv, line 3: time stamp ts is beyond the 64-bit range",
        "ts,type\n1,A\n2,\n": r"bad.csv, line 3: event type is missing$",
        # v is numeric in the first rows (the declared schema), then not
        "ts,type,v\n" + "1,A,2\n" * 1001 + "2,B,abc\n": r"bad.csv, line 1003, column v: 'abc' is not a number$",
        # v holds integers in the first rows (an integer column, exact), then a decimal
        "ts,type,v\n" + "1,A,2\n" * 1001 + "2,B,2.5\n": r"bad.csv, line 1003: column v holds '2.5', not a 64-bit",
    }
    bad = tmp_path / "bad.csv"
    for text, match in cases.items():
        bad.write_text(text)
        with pytest.raises(CepoptError, match=match):
            _consume(read_stream(bad, spark), bad)
    ok = tmp_path / "ok.csv"
    ok.write_text("ts,type,v\n1.0,A,NA\n2,B,\n3,C,NaN\n")  # an integral float is a time stamp; NA is missing
    rows = _consume(read_stream(ok, spark), ok)
    assert [(r["ts"], r["v"]) for r in rows] == [(1, None), (2, None), (3, None)]
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("t,type\n1,A\n")
    with pytest.raises(CepoptError, match="no column 'ts'"):
        read_stream(nocol, spark)


@pytest.mark.spark
def test_garbage_parquet_is_one_line(spark, tmp_path):
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"PAR1 this is not parquet at all" * 10)
    with pytest.raises(CepoptError, match=r"garbage.parquet: not a readable Parquet stream"):
        read_stream(garbage, spark)
    pd.DataFrame({"ts": [1.5, 2.0], "type": ["A", "B"]}).to_parquet(tmp_path / "f.parquet")
    with pytest.raises(CepoptError, match=r"f.parquet: an event's time stamp ts is not an integer: '1.5'"):
        _consume(read_stream(tmp_path / "f.parquet", spark), tmp_path / "f.parquet")


@pytest.mark.spark
def test_results_do_not_depend_on_the_file_order(spark, tmp_path):
    """No global sort: each partition's events are ordered by the engines' input step, so an unsorted
    file (within and across Spark partitions) gives the results of the sorted stream."""
    from cepopt.executor.engines import run_local, run_spark

    from .toy_plan import random_events, toy_plan

    events = random_events(3000, seed=7, span=400)
    plan = toy_plan()
    expected = run_local(plan, events.sort_values("ts", kind="stable"))
    unsorted = tmp_path / "unsorted.csv"
    events.to_csv(unsorted, index=False)
    halves = tmp_path / "halves.parquet"
    ordered = events.sort_values("ts", kind="stable")
    pd.concat([ordered.iloc[1500:], ordered.iloc[:1500]]).to_parquet(halves)
    old = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "16k")
    try:
        for path in (unsorted, halves):
            sdf = read_stream(path, spark)
            assert path.suffix == ".parquet" or sdf.rdd.getNumPartitions() > 1
            run = run_spark(plan, sdf, spark, source=str(path))
            run.results.unpersist()
            assert (run.digest, run.rows) == (expected.digest, expected.rows)
            assert run.metrics["reads"] == expected.metrics["reads"]
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", old)
