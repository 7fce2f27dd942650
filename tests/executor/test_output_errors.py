"""``--output`` and errors after Spark starts (issue 30, items 7 and 8): one results file on both engines
and for every family, checked by a probe before any work; every failure one line on stderr, exit 2."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cepopt.cli import main

JOIN = ("joinorder-e6", "--stream", "gen:workload:events=2000,seed=1")


def one_error_line(err: str, *fragments: str) -> str:
    """The one line on stderr (progress lines of a long run, `cepopt: execute: ...`, aside)."""
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("cepopt: execute: ")]
    assert len(lines) == 1, err
    assert lines[0].startswith("cepopt: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], err
    return lines[0]


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_spark(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("Spark started before --output was checked")

    monkeypatch.setattr("cepopt.executor.session.get_spark", refuse)


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_output_naming_a_folder_is_one_line_before_any_work(capsys, tmp_path, no_spark, engine):
    (tmp_path / "res.csv").mkdir()
    code, out, err = run(capsys, "execute", "sharon-example3", "--engine", engine,
                         "--output", str(tmp_path / "res.csv"))
    assert code == 2
    one_error_line(err, "res.csv", "is a folder")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc (a folder no one can write into)")
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_output_into_an_unwritable_folder_is_one_line_before_any_work(capsys, no_spark, engine):
    # /proc takes no new file even for root, whom os.access() calls writable anywhere
    code, out, err = run(capsys, "execute", "sharon-example3", "--engine", engine,
                         "--output", "/proc/cepopt-results/r.csv")
    assert code == 2
    one_error_line(err, "/proc/cepopt-results/r.csv", "cannot write")


def test_output_probe_leaves_nothing_behind(tmp_path):
    from cepopt.executor.output import check_output

    check_output(tmp_path / "a" / "b" / "r.csv")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "old.csv").write_text("kept")
    check_output(tmp_path / "old.csv")
    assert (tmp_path / "old.csv").read_text() == "kept"


def test_join_order_output_is_written_on_the_local_engine(capsys, tmp_path):
    out_file = tmp_path / "matches.csv"
    code, out, err = run(capsys, "execute", *JOIN, "--engine", "local", "--output", str(out_file), "--json")
    assert code == 0, err
    import json

    report = json.loads(out)
    assert report["output"] == str(out_file)
    written = pd.read_csv(out_file, dtype=str, keep_default_na=False)
    assert report["results_rows"] > 0 and len(written) == report["results_rows"]
    assert set(written["aggregate"]) == {"match"}


def _sorted(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, frame.astype(str).values.tolist()))


@pytest.mark.spark
@pytest.mark.parametrize("args,suffix", [(("sharon-example3",), ".csv"), (("sharon-example3",), ".parquet"),
                                         (JOIN, ".csv")], ids=["sharon-csv", "sharon-parquet", "join-csv"])
def test_output_is_one_file_of_the_same_rows_on_both_engines(capsys, tmp_path, spark, args, suffix):
    read = (lambda p: pd.read_csv(p, dtype=str, keep_default_na=False)) if suffix == ".csv" else pd.read_parquet
    frames = {}
    for engine in ("local", "spark"):
        target = tmp_path / f"{engine}{suffix}"
        code, out, err = run(capsys, "execute", *args, "--engine", engine, "--output", str(target))
        assert code == 0, err
        assert target.is_file(), f"{engine}: {target} is not one file"
        frames[engine] = read(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"local{suffix}", f"spark{suffix}"]  # no temporary left
    assert list(frames["spark"].columns) == list(frames["local"].columns)
    assert len(frames["local"]) > 0 and _sorted(frames["spark"]) == _sorted(frames["local"])


@pytest.mark.spark
def test_spark_output_of_no_rows_is_a_csv_with_its_header(spark, tmp_path):
    from cepopt.executor.output import write_spark_results
    from cepopt.executor.results import RESULT_COLUMNS, RESULT_SCHEMA

    write_spark_results(spark.createDataFrame([], RESULT_SCHEMA), str(tmp_path / "none.csv"))
    assert (tmp_path / "none.csv").read_text().splitlines() == [",".join(RESULT_COLUMNS)]


def test_the_jvm_stderr_goes_to_the_log_unless_verbose(tmp_path, monkeypatch, capfd):
    from cepopt.executor.session import _jvm_stderr

    child = [sys.executable, "-c", "import sys; sys.stderr.write('WARNING: from the JVM\\n')"]
    log = tmp_path / "spark.log"
    monkeypatch.setenv("CEPOPT_SPARK_LOG", str(log))
    with _jvm_stderr() as where:
        subprocess.run(child, check=True)  # started inside: it keeps the log as its stderr
    assert where == log and log.read_text() == "WARNING: from the JVM\n"
    assert "WARNING" not in capfd.readouterr().err
    monkeypatch.setenv("CEPOPT_SPARK_LOG", "stderr")  # what --verbose sets
    with _jvm_stderr() as where:
        subprocess.run(child, check=True)
    assert where is None and "WARNING: from the JVM" in capfd.readouterr().err


def test_verbose_option_keeps_the_spark_log_on_stderr(capsys, monkeypatch, no_spark, tmp_path):
    monkeypatch.delenv("CEPOPT_SPARK_LOG", raising=False)
    (tmp_path / "d.csv").mkdir()
    run(capsys, "execute", "sharon-example3", "--verbose", "--output", str(tmp_path / "d.csv"))
    assert os.environ.get("CEPOPT_SPARK_LOG") == "stderr"


@pytest.mark.spark
def test_workers_without_cepopt_say_to_set_pyspark_python(tmp_path):
    """A cluster whose workers' Python lacks cepopt: simulated by a worker Python that cannot import it.
    Its own JVM (PYSPARK_PYTHON is read when the context starts); stderr is one line, the JVM's
    start-up warning and Spark's ERROR lines included in none of it."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class NoCepopt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'cepopt':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NoCepopt())\n")
    worker = tmp_path / "python"
    worker.write_text(f"#!/bin/sh\nPYTHONPATH={tmp_path} exec {sys.executable} \"$@\"\n")
    worker.chmod(0o755)
    env = {**os.environ, "PYSPARK_PYTHON": str(worker), "CEPOPT_CACHE": str(tmp_path / "cache")}
    env.pop("CEPOPT_SPARK_LOG", None)
    done = subprocess.run([sys.executable, "-m", "cepopt.cli", "execute", "sharon-example3", "--master", "local[1]"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 2, done.stderr
    one_error_line(done.stderr, "PYSPARK_PYTHON", "cannot import cepopt")
