"""Stream readers (error paths), generator specs and generator determinism."""

from __future__ import annotations

import pandas as pd
import pytest

from cepopt.errors import CepoptError, UnknownNameError
from cepopt.executor.streams import (
    _in_time_order,
    parse_generator_spec,
    read_stream,
    read_stream_pandas,
    resolve_stream_pandas,
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
    assert df["ts"].tolist() == [1, 2] and df["type"].tolist() == ["A", "B"]
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
    assert read_stream_pandas(path)["ts"].tolist() == [1, 3]
    pd.DataFrame({"ts": [1.5], "type": ["A"]}).to_parquet(tmp_path / "f.parquet")
    with pytest.raises(CepoptError, match="row 0: time stamp ts is not an integer"):
        read_stream_pandas(tmp_path / "f.parquet")


def test_hamlet_reader(shared_dir):
    df = generate("hamlet", file="Syn_TestStream")
    assert len(df) > 0 and df["ts"].is_monotonic_increasing
    assert df["type"].str.startswith("T").all()
    first = generate("hamlet", file="Stream_shared_5", events=2000)
    assert len(first) == 2000


@pytest.mark.spark
def test_spark_reader_errors(spark, tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("ts,type,v\n1,A,2\n2,B,1\n")
    assert dict(read_stream(good, spark).dtypes)["ts"] == "bigint"
    bad = tmp_path / "bad.csv"
    bad.write_text("ts,type\n1,A\n2,B\nx,C\n")
    with pytest.raises(CepoptError, match=r"bad.csv, line 4: time stamp ts is not an integer: 'x'"):
        read_stream(bad, spark)
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("t,type\n1,A\n")
    with pytest.raises(CepoptError, match="no column 'ts'"):
        read_stream(nocol, spark)


@pytest.mark.spark
def test_spark_reader_sorts_by_time_stably(spark, tmp_path):
    # the pandas reader sorts; the Spark reader returned the file order (join-order ids followed it)
    path = tmp_path / "unsorted.csv"
    path.write_text("ts,type,v\n3,C,1\n1,A,2\n3,B,3\n2,D,4\n1,E,5\n")
    rows = [(r["ts"], r["type"]) for r in read_stream(path, spark).collect()]
    assert rows == [(1, "A"), (1, "E"), (2, "D"), (3, "C"), (3, "B")]  # ties keep the file order
    expected = read_stream_pandas(path)
    assert rows == list(zip(expected["ts"], expected["type"], strict=True))
    parquet = tmp_path / "unsorted.parquet"
    pd.read_csv(path).to_parquet(parquet)
    assert [(r["ts"], r["type"]) for r in read_stream(parquet, spark).collect()] == rows


@pytest.mark.spark
def test_spark_reader_sees_disorder_between_partitions(spark, tmp_path):
    # every partition is sorted, but the file's second half comes earlier in time
    n = 20_000
    ts = list(range(n // 2, n)) + list(range(n // 2))
    path = tmp_path / "halves.csv"
    pd.DataFrame({"ts": ts, "type": "A"}).to_csv(path, index=False)
    sorted_path = tmp_path / "sorted.csv"
    pd.DataFrame({"ts": sorted(ts), "type": "A"}).to_csv(sorted_path, index=False)
    old = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "16k")
    try:
        raw = spark.read.csv(str(path), header=True, inferSchema=True)
        assert raw.rdd.getNumPartitions() > 1
        assert not _in_time_order(raw)
        assert _in_time_order(spark.read.csv(str(sorted_path), header=True, inferSchema=True))  # not re-sorted
        assert [r["ts"] for r in read_stream(path, spark).select("ts").collect()] == sorted(ts)
        assert [r["ts"] for r in read_stream(sorted_path, spark).select("ts").collect()] == sorted(ts)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", old)
