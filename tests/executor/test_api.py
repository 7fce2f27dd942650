"""executor.api and the pipeline: ExecutionResult, plan loading, results files, dispatch; the Spark engine
equals the local engine and brute force (spark marker)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cepopt.errors import CepoptError, UnknownNameError
from cepopt.executor.api import ExecutionResult, driver_module, write_results
from cepopt.executor.api import execute as execute_plan
from cepopt.executor.reference import reference_results
from cepopt.executor.results import compare_results, results_frame
from cepopt.executor.streams import resolve_stream_pandas
from cepopt.instance import from_json
from cepopt.pipeline import execute_command, load_plan
from cepopt.registry import build_problem
from cepopt.sharon.plan import SharonPlan

QUERIES = [
    "q1: RETURN COUNT(*), SUM(A.v), MAX(C.v) PATTERN SEQ(A, B, C) WHERE [g] AND A.v > 20 GROUP-BY h "
    "WITHIN 6 SLIDE 2",
    "q2: RETURN COUNT(*), AVG(B.v), COUNT(B) PATTERN SEQ(A, B, D) WHERE [g] AND A.v > 20 GROUP-BY h "
    "WITHIN 6 SLIDE 2",
    "q3: RETURN COUNT(*), MIN(D.v) PATTERN SEQ(D, A, B) WHERE [g] AND A.v > 20 GROUP-BY h WITHIN 6 SLIDE 2",
    "q4: RETURN COUNT(*) PATTERN SEQ(B, C) WITHIN 5 SLIDE 5",
]
STREAM = "gen:workload:events=300,seed=2,groups=2"


@pytest.fixture(scope="module")
def instance():
    return from_json({"problem": "sharon", "name": "api-test", "queries": QUERIES,
                      "statistics": {"rates": {"A": 3, "B": 3, "C": 1, "D": 1}}})


def test_execution_result_digest_and_summary():
    df = results_frame([("q", "", 0, "COUNT(*)", 3)])
    r = ExecutionResult(df, 10, 12.5, 0.1, {"mode": "local"})
    assert r.digest() == ExecutionResult(df.copy(), 1, None, 9.0).digest()
    assert "operations (measured): 10" in r.summary() and "mode: local" in r.summary()


def test_missing_driver_is_a_user_error():
    with pytest.raises(UnknownNameError, match="no executor for family 'nosuch'"):
        driver_module("nosuch")


def test_load_plan_variants(instance, tmp_path):
    fam, problem, _ = build_problem(instance)
    plan, info = load_plan(fam, problem, instance, "nonshared")
    assert plan == SharonPlan.empty() and info["plan_source"] == "nonshared"
    plan, info = load_plan(fam, problem, instance, "greedy")
    assert info["method"] == "greedy" and info["objective"] is not None
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(plan.to_json()))
    assert load_plan(fam, problem, instance, str(saved))[0] == plan
    saved.write_text(json.dumps({"method": "greedy", "status": "feasible", "plan": plan.to_json()}))
    assert load_plan(fam, problem, instance, str(saved))[0] == plan
    with pytest.raises(CepoptError, match="no such plan file"):
        load_plan(fam, problem, instance, str(tmp_path / "none.json"))
    with pytest.raises(CepoptError, match="unknown method"):
        load_plan(fam, problem, instance, "no-such-method")


@pytest.mark.parametrize("content,match", [
    (b'{"plan": \xff}', r":1: not UTF-8 text \(byte 0xff\)"),
    (b'{"plan": ]', ": malformed JSON at line 1, column 10: Expecting value"),
    (b"[" * 100_000, ": JSON nested too deeply"),  # deeper than the recursion limit
    (b"[1" + b"0" * 5000 + b"]", ": a JSON integer has too many digits"),  # int() refuses > 4300 digits
    (None, ": cannot read: Permission denied"),
], ids=["non-utf8", "malformed", "deep-nesting", "long-integer", "unreadable"])
def test_load_plan_bad_file(instance, tmp_path, monkeypatch, content, match):
    fam, problem, _ = build_problem(instance)
    saved = tmp_path / "plan.json"
    saved.write_bytes(content or b"[]")
    if content is None:
        def denied(*args, **kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(CepoptError, match=rf"plan\.json{match}"):
        load_plan(fam, problem, instance, str(saved))


@pytest.mark.parametrize("stream,output,match", [
    (None, None, "has no embedded stream"),
    ("nosuch.csv", None, "nosuch.csv: no such stream file"),
    ("gen:nosuch", None, "unknown stream generator 'nosuch'"),
    (STREAM, "out.txt", r"out\.txt: unknown results format"),
    ("events.txt", None, r"events\.txt: unknown stream format"),
], ids=["no-embedded", "missing-file", "unknown-generator", "bad-output", "bad-stream-format"])
def test_execute_command_checks_inputs_before_spark(instance, monkeypatch, tmp_path, stream, output, match):
    def no_spark(*args, **kwargs):
        raise AssertionError("Spark started before the inputs were checked")

    monkeypatch.setattr("cepopt.executor.session.get_spark", no_spark)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "events.txt").write_text("ts,type\n1,A\n")
    with pytest.raises(CepoptError, match=match):
        execute_command(instance, "nonshared", stream, output=output)


def test_write_results_keeps_big_ints_exact(tmp_path):
    df = results_frame([("q", "", 0, "COUNT(*)", 2 ** 80), ("q", "", 0, "AVG(B.v)", 0.5)])
    write_results(df, tmp_path / "r.csv")
    back = pd.read_csv(tmp_path / "r.csv", dtype={"value": str})
    assert back["value"].tolist() == ["0.5", str(2 ** 80)] or back["value"].tolist() == [str(2 ** 80), "0.5"]
    write_results(df, tmp_path / "r.parquet")
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == 2
    with pytest.raises(CepoptError, match="unknown results format"):
        write_results(df, tmp_path / "r.txt")


def test_local_driver_equals_brute_force_under_every_plan(instance):
    fam, problem, _ = build_problem(instance)
    events = resolve_stream_pandas(STREAM, instance)
    expected = reference_results(instance.workload, events)
    digests = set()
    for plan in (SharonPlan.empty(), SharonPlan.of([(("A", "B"), {"q1", "q2", "q3"})]),
                 SharonPlan.of([(("A", "B"), {"q1", "q2"})])):
        for block in (None, 2):
            r = execute_plan(problem, plan, events, family="sharon", engine="local", windows_per_block=block)
            assert compare_results(expected, r.results) == []
            digests.add(r.digest())
    assert len(digests) == 1


@pytest.mark.spark
def test_spark_driver_equals_local_kernels(instance, spark, tmp_path):
    from cepopt.pipeline import execute

    fam, problem, _ = build_problem(instance)
    events = resolve_stream_pandas(STREAM, instance)
    plan = SharonPlan.of([(("A", "B"), {"q1", "q2", "q3"})])
    local = execute_plan(problem, plan, events, family="sharon", engine="local", windows_per_block=2)
    remote = execute(instance, plan, events, spark=spark, windows_per_block=2)
    assert compare_results(local.results, remote.to_pandas()) == []
    assert remote.digest() == local.digest()
    assert remote.operations == local.operations and remote.metrics["mode"] == "spark"
    out = execute_command(instance, "nonshared", STREAM, output=str(tmp_path / "res.csv"))
    assert out["results_digest"] == local.digest()
    assert out["results_rows"] == len(local.results) and out["operations"] > 0
    assert out["predicted_cost"] is not None and out["plan"] == []
    written = pd.read_csv(tmp_path / "res.csv", dtype={"value": str})
    assert len(written) == out["results_rows"]  # one file, as the local engine writes


@pytest.mark.spark
def test_execute_embedded_stream_example3(spark):
    from cepopt.instances import load
    from cepopt.pipeline import execute

    inst = load("sharon-example3")  # bundled: a failure to load it is a failure, not a skip
    r = execute(inst, SharonPlan.of([(("A", "B"), set(inst.workload.names))]), spark=spark).to_pandas()
    q1 = r[(r["query"] == "q1") & (r["aggregate"] == "COUNT(*)")]
    assert q1["value"].tolist() == [7]
