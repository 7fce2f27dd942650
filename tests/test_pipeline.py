"""The pipeline (cepopt/pipeline.py) and ``cepopt execute``: steps, the local engine without a JVM,
--estimate-stats / --save-stats, --max-work, --output checks, Hamlet bursts from the stream, start-up
errors as one line, and one JSON document under --json."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from cepopt.cli import main
from cepopt.errors import CepoptError
from cepopt.instance import from_json
from cepopt.pipeline import STEPS, Execution, execute, execute_command, run

HAMLET_QUERIES = ["q1: RETURN COUNT(*) PATTERN SEQ(A, B+) WITHIN 8 SLIDE 4",
                  "q2: RETURN COUNT(*) PATTERN SEQ(C, B+) WITHIN 8 SLIDE 4"]


def test_steps_are_a_short_visible_list():
    names = [s.__name__ for s in STEPS]
    assert names == ["check_inputs", "open_stream", "derive_bursts", "estimate_statistics", "build_problem",
                     "choose_plan", "check_work", "run_plan", "report"]
    ex = run(Execution("sharon-example3", "greedy", engine="local"))
    assert ex.report["method"] == "greedy" and ex.report["results_rows"] == ex.result.row_count() > 0
    assert ex.report["objective"] == ex.family.evaluate(ex.problem, ex.plan)
    assert ex.report["operations_unit"].startswith("operations")


def test_local_engine_runs_without_a_jvm(tmp_path):
    code = ("import sys, json; from cepopt.cli import main; "
            "main(['execute', 'sharon-example3', '--engine', 'local', '--json']); "
            "print(json.dumps(sorted(m for m in ('pyspark', 'py4j') if m in sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["engine"] == "local"  # stdout is one JSON document
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []


def test_hamlet_from_queries_and_rates_takes_bursts_from_the_stream(tmp_path):
    path = tmp_path / "h.json"
    path.write_text(json.dumps({"problem": "hamlet", "name": "rates-only", "queries": HAMLET_QUERIES,
                                "statistics": {"rates": {"A": 1, "B": 4, "C": 1}}}))
    stream = tmp_path / "s.csv"
    rows = [(0, "A"), (1, "C")] + [(t, "B") for t in range(2, 8)] + [(9, "A"), (10, "B"), (11, "B")]
    pd.DataFrame(rows, columns=["ts", "type"]).to_csv(stream, index=False)
    digests = set()
    for plan in ("nonshared", "dynamic", "optimal"):
        out = execute_command(str(path), plan, str(stream), engine="local")
        assert out["bursts_from"] == str(stream) and out["results_rows"] > 0
        digests.add(out["results_digest"])
    assert len(digests) == 1
    with pytest.raises(CepoptError, match="has no embedded stream: give one with --stream"):
        execute_command(str(path), "nonshared", None, engine="local")


def test_estimate_stats_reports_what_ran_and_saves_them(tmp_path, capsys):
    inst = tmp_path / "sh.json"
    assert main(["generate", "sharon", "--queries", "6", "--length", "4", "--seed", "2", "-o", str(inst)]) == 0
    capsys.readouterr()
    saved = tmp_path / "stats" / "est.json"
    argv = ["execute", str(inst), "--engine", "local", "--plan", "greedy", "--stream",
            "gen:workload:events=3000,seed=1", "--estimate-stats", "--save-stats", str(saved), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    stats = out["estimated_statistics"]
    assert set(stats) >= {"rates"} and all(v > 0 for v in stats["rates"].values())
    assert json.loads(saved.read_text()) == stats
    # the plan and objective are those of the run: solved on the estimated statistics, re-scored
    from cepopt.instance import load
    from cepopt.model import Statistics
    from cepopt.registry import solve

    again = solve(load(str(inst)).replace(statistics=Statistics.from_json(stats)), "greedy")
    assert out["objective"] == again.objective and out["plan"] == again.plan_json
    assert main(["execute", str(inst), "--save-stats", str(saved)]) == 2
    assert "--save-stats needs --estimate-stats" in capsys.readouterr().err


def test_max_work_refuses_with_the_predicted_figure():
    with pytest.raises(CepoptError, match=r"predicted work is [0-9.e+]+ \(operations.*above the limit 1;"):
        execute_command("sharon-example3", "nonshared", None, engine="local", max_work=1)
    assert execute_command("sharon-example3", "nonshared", None, engine="local", max_work=1e6)["operations"] > 0


def test_output_is_checked_before_work(tmp_path, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("the plan ran before the output was checked")

    monkeypatch.setattr("cepopt.executor.api.execute", no_work)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(CepoptError, match="--output .*cannot write: Not a directory"):
        execute_command("sharon-example3", "nonshared", None, engine="local", output=str(blocker / "r.csv"))
    with pytest.raises(CepoptError, match="unknown results format"):
        execute_command("sharon-example3", "nonshared", None, engine="local", output=str(tmp_path / "r.txt"))


def test_local_output_keeps_exact_values(tmp_path):
    out = tmp_path / "new" / "r.csv"
    report = execute_command("sharon-example3", "nonshared", None, engine="local", output=str(out))
    assert report["output"] == str(out) and len(pd.read_csv(out)) == report["results_rows"]


@pytest.mark.parametrize("master,match", [
    ("foo://bar", "not a Spark master URL"),
    ("spark://127.0.0.1:1", "cannot reach the Spark master at 127.0.0.1:1"),
])
def test_bad_master_is_one_line_at_once(master, match, capsys, monkeypatch):
    monkeypatch.delenv("CEPOPT_SPARK_MASTER", raising=False)
    start = time.monotonic()
    assert main(["execute", "sharon-example3", "--master", master]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err and time.monotonic() - start < 15


def test_no_java_is_one_line(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "CEPOPT_SPARK_MASTER")}
    env["PATH"] = str(tmp_path)  # no java on it
    cli = Path(sys.executable).with_name("cepopt")
    done = subprocess.run([str(cli), "execute", "sharon-example3"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no Java found" in done.stderr


def test_python_api_returns_the_results():
    res = execute("sharon-example3", "greedy", engine="local")
    assert res.engine == "local" and list(res.results.columns) == ["query", "group", "window", "aggregate", "value"]
    assert res.digest() == execute(from_json({"problem": "sharon", "name": "x",
                                               "queries": [q for q in _example3_queries()],
                                               "statistics": {"rates": {"A": 1, "B": 1, "C": 1, "D": 1}},
                                               "stream": list(_example3_stream())}),
                                    "greedy", engine="local").digest()


def _example3_queries():
    from cepopt.instances import load
    from cepopt.syntax import format_query

    return [format_query(q) for q in load("sharon-example3").workload.queries]


def _example3_stream():
    from cepopt.instances import load

    return load("sharon-example3").stream


@pytest.mark.spark
def test_spark_json_is_one_document_and_matches_local(spark, capsys, tmp_path):
    assert main(["execute", "hamlet-example", "--plan", "dynamic", "--json"]) == 0
    spark_out = json.loads(capsys.readouterr().out)
    assert main(["execute", "hamlet-example", "--plan", "dynamic", "--engine", "local", "--json"]) == 0
    local_out = json.loads(capsys.readouterr().out)
    assert spark_out["results_digest"] == local_out["results_digest"]
    assert spark_out["operations"] == local_out["operations"] and spark_out["engine"] == "spark"
    out = tmp_path / "res.parquet"
    assert main(["execute", "hamlet-example", "--output", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(pd.read_parquet(out)) == report["results_rows"]


@pytest.mark.spark
def test_port_in_use_is_one_line(tmp_path):
    import os
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**{k: v for k, v in os.environ.items() if k != "CEPOPT_SPARK_MASTER"},
               "PYSPARK_SUBMIT_ARGS": f"--conf spark.driver.port={port} --conf spark.port.maxRetries=0 "
                                      "--conf spark.driver.bindAddress=127.0.0.1 pyspark-shell"}
        cli = Path(sys.executable).with_name("cepopt")
        done = subprocess.run([str(cli), "execute", "sharon-example3"], capture_output=True, text=True, env=env,
                              timeout=120)
    lines = [line for line in done.stderr.splitlines() if not line.startswith("WARNING: Using incubator")]
    assert done.returncode == 2 and len(lines) == 1 and "Address already in use" in lines[0], done.stderr
