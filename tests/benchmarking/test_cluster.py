"""A benchmark run as Spark tasks on a standalone cluster (a master and one 2-core worker on 127.0.0.1,
started as tests/executor/test_cluster.py starts them) gives the results table of a local run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cepopt.benchmarking.results import read_results
from tests.executor.test_cluster import standalone_cluster

GRID = ["sharon-example3", "hamlet-example", "gen:joinorder:size=5|7,seed=0..1", "-m", "greedy", "-m", "dp-ld",
        "-m", "dynamic", "-m", "sharon/cpsat", "--seeds", "2", "--time-limit", "20", "--no-report"]
KEY = ["instance", "method", "seed", "repeat"]


def _table(path: Path):
    frame = read_results(path)
    return frame[[*KEY, "family", "status", "objective", "bound"]].sort_values(KEY).reset_index(drop=True)


@pytest.mark.cluster
@pytest.mark.spark
def test_cells_as_spark_tasks_give_the_local_table(tmp_path):
    cli = str(Path(sys.executable).with_name("cepopt"))
    with standalone_cluster(tmp_path) as (master, env):
        local = subprocess.run([cli, "benchmark", *GRID, "--jobs", "2", "--out", str(tmp_path / "local")],
                               capture_output=True, text=True, env=env, timeout=600)
        assert local.returncode == 0, local.stderr[-2000:]
        spark = subprocess.run([cli, "benchmark", *GRID, "--master", master, "--out", str(tmp_path / "spark")],
                               capture_output=True, text=True, env=env, timeout=600)
        assert spark.returncode == 0, spark.stderr[-2000:]
    local_table, spark_table = _table(tmp_path / "local" / "results.csv"), _table(tmp_path / "spark" / "results.csv")
    assert len(local_table) == 2 * (2 + 1 + 4 * 2)  # 2 seeds; sharon: greedy, cpsat; hamlet: dynamic; joinorder: 2
    assert set(local_table["status"]) <= {"optimal", "feasible"}
    assert local_table.equals(spark_table)
    assert set(read_results(tmp_path / "spark" / "results.csv")["meta_command"].str.contains("--master")) == {True}
