"""The engines (executor/engines.py) on a toy compiled plan: the local engine equals brute force, Spark
equals the local engine (digest, rows, counters), and errors on workers come back as one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.errors import CepoptError
from cepopt.executor.engines import prepare_partition, run_local
from cepopt.executor.results import digest, results_frame

from .toy_plan import brute_force, random_events, toy_plan


def _expected(plan, events):
    return results_frame([(*k, v) for k, v in brute_force(plan, events).items()])


@pytest.mark.parametrize("block", [None, 3, 4, 50])
@pytest.mark.parametrize("keys", [(), ("g",)])
def test_local_engine_equals_brute_force(block, keys):
    events = random_events(400, seed=1)
    plan = toy_plan(keys=keys, block=block)
    run = run_local(plan, events)
    expected = _expected(plan, events)
    assert run.digest == digest(expected) and run.rows == len(expected)
    assert run.metrics["stream_events"] == len(events) and run.metrics["partitions"] > 0
    big = run.results[run.results["aggregate"] == "BIG"]["value"]
    assert all(isinstance(v, int) and v >= 2 ** 100 for v in big)


@settings(max_examples=25)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 5), st.integers(0, 10_000))
def test_local_engine_any_window_and_block(length, slide, block, seed):
    events = random_events(120, seed=seed, span=40)
    plan = toy_plan(length=length, slide=slide, block=max(block, -(-length // slide)))
    assert run_local(plan, events).digest == digest(_expected(plan, events))


def test_input_step_orders_ties_canonically():
    a = pd.DataFrame({"ts": [2, 1, 2, 2], "type": ["B", "A", "A", "B"], "v": [3.0, 1.0, 2.0, 1.0]})
    assert prepare_partition(a).equals(prepare_partition(a.iloc[::-1]))
    assert prepare_partition(a)["type"].tolist() == ["A", "A", "B", "B"]


def test_local_engine_raises_the_kernels_error():
    with pytest.raises(CepoptError, match="toy kernel: met an event of type B"):
        run_local(toy_plan(fail_on="B"), random_events(50))


@pytest.mark.spark
@pytest.mark.parametrize("single", [False, True])
@pytest.mark.parametrize("block,keys", [(None, ("g",)), (3, ("g",)), (2, ())])
def test_spark_engine_equals_local(spark, block, keys, single):
    from cepopt.executor.engines import run_spark
    from cepopt.executor.streams import to_spark

    events = random_events(500, seed=4)
    plan = toy_plan(keys=keys, block=block)
    local = run_local(plan, events)
    remote = run_spark(plan, to_spark(events, spark).repartition(3), spark, single=single)
    try:
        assert (remote.digest, remote.rows) == (local.digest, local.rows)
        for name in ("reads", "windows", "partitions", "events"):
            assert remote.metrics[name] == local.metrics[name], name
        back = remote.results.toPandas()
        assert digest(back) == local.digest and back["value"].map(type).eq(str).all()
    finally:
        remote.results.unpersist()


@pytest.mark.spark
@pytest.mark.parametrize("single", [False, True])
def test_spark_engine_errors_are_one_line(spark, tmp_path, single):
    from cepopt.executor.engines import run_spark
    from cepopt.executor.streams import read_stream, to_spark

    with pytest.raises(CepoptError, match=r"^toy kernel: met an event of type B$"):
        run_spark(toy_plan(fail_on="B"), to_spark(random_events(50), spark), spark, single=single)
    with pytest.raises(CepoptError, match=r"^the Spark job failed on a worker: ValueError: toy bug on B$"):
        run_spark(toy_plan(fail_on="B", python_error=True), to_spark(random_events(50), spark), spark, single=single)
    bad = tmp_path / "bad.csv"
    bad.write_text("ts,type,g,v\n1,A,0,1\n2,B,0,2\n3.5,A,1,3\n4,C,1,4\n")
    with pytest.raises(CepoptError, match=r"^.*bad\.csv, line 4: time stamp ts is not an integer: '3\.5'$"):
        run_spark(toy_plan(), read_stream(bad, spark), spark, source=str(bad), single=single)


@pytest.mark.spark
def test_spark_engine_writes_results(spark, tmp_path):
    from cepopt.executor.engines import run_spark
    from cepopt.executor.streams import to_spark

    events = random_events(200, seed=2)
    plan = toy_plan()
    out = tmp_path / "res.csv"
    remote = run_spark(plan, to_spark(events, spark), spark, output=str(out))
    remote.results.unpersist()
    back = pd.read_csv(out, dtype={"value": str}, keep_default_na=False) if out.is_file() else \
        pd.concat([pd.read_csv(f, dtype={"value": str}, keep_default_na=False) for f in out.glob("part-*.csv")])
    assert digest(back) == run_local(plan, events).digest
    assert np.isin(["query", "group", "window", "aggregate", "value"], back.columns).all()


@pytest.mark.spark
@pytest.mark.parametrize("length,slide,k", [(10, 3, 4), (7, 7, 2), (3, 10, 1), (1200, 300, 64), (2.5, 0.5, 5),
                                            (0.7, 0.1, 8)])
def test_spark_blocks_equal_window_blocks(spark, length, slide, k):
    """The Spark block columns (long or decimal arithmetic) are :func:`window_blocks` on any time stamp,
    negative and far beyond 2^53 included, fractional windows too."""
    from cepopt.executor.engines import BLOCK, _spark_class
    from cepopt.executor.partitions import PartitionClass, window_blocks

    rng = np.random.default_rng(7)
    ts = np.concatenate([rng.integers(-50, 400, 300), [0, 1, -1, length, slide],
                         [2 ** 53 + 1, 2 ** 53 + 3, 2 ** 58 + 1],  # window indexes stay below 2^63
                         [2 ** 62 + 12345, 2 ** 62 - 1] if float(slide).is_integer() else []]).astype(np.int64)
    cls = PartitionClass(types=("A",), columns=("ts", "type"), keys=(), length=length, slide=slide,
                         windows_per_block=k)
    events = spark.createDataFrame(pd.DataFrame({"ts": ts, "type": "A"}))
    sdf, blocked = _spark_class(cls, events)
    got = sorted(map(tuple, sdf.select("ts", BLOCK).orderBy("ts", BLOCK).toPandas().to_numpy().tolist()))
    first, last = window_blocks(ts, cls)
    want = sorted((int(t), int(b)) for t, f, la in zip(ts, first, last, strict=True) for b in range(f, la + 1))
    assert blocked and got == want


def test_local_engine_reports_progress_during_one_long_partition():
    """Issue 35: a partition that takes long (its kernels compiling) is reported while it runs, with what
    runs (class, partition of how many), not only once it is done."""
    import io
    import time as clock
    from dataclasses import dataclass

    from cepopt.executor.engines import Progress

    @dataclass(frozen=True)
    class Slow:
        inner: object

        @property
        def classes(self):
            return self.inner.classes

        def run(self, index, events, block):
            clock.sleep(0.6)
            return self.inner.run(index, events, block)

    out = io.StringIO()
    plan, events = toy_plan(keys=(), block=None), random_events(30)
    got = run_local(Slow(plan), events, progress=Progress(after=0.1, every=0.2, stream=out))
    assert digest(got.results) == digest(run_local(plan, events).results)
    lines = out.getvalue().splitlines()
    assert any("running partition 1 of 1" in line for line in lines), lines
    assert all(line.startswith("cepopt: execute: ") for line in lines)
