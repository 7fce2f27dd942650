"""A real Spark standalone cluster (a master and one worker started from the pyspark installation on
127.0.0.1): ``cepopt execute --master spark://...`` gives, for one instance per family, the digests of
the local engine and of a local Spark master. Both processes are stopped by PID (:func:`standalone_cluster`,
also used by tests/benchmarking/test_cluster.py)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cepopt.pipeline import execute

CASES = [
    ("sharon-example3", None),
    ("hamlet-example", None),
    ("gloria-fig7", "gen:workload:events=400,seed=3"),
    ("joinorder-e1", "gen:workload:events=300,seed=2"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    import pyspark

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    with log.open("wb") as out:
        return subprocess.Popen([str(spark_class), *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL)


def _wait_for_worker(master_log: Path, procs: list[subprocess.Popen], timeout: float = 180) -> None:
    """Until the master's log says a worker registered (its log, not its web UI: a UI port another process
    took in the meantime makes Spark move the UI to the next port, and the reply would be someone else's)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError("a Spark daemon exited")
        if master_log.is_file() and "Registering worker" in master_log.read_text(errors="replace"):
            return
        time.sleep(1)
    raise TimeoutError("no worker registered with the master")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextlib.contextmanager
def standalone_cluster(tmp_path: Path):
    """A master and one 2-core worker on 127.0.0.1: yields (master URL, the environment to run cepopt in);
    both are stopped by PID on the way out."""
    with _one_cluster_at_a_time():
        yield from _cluster(tmp_path)


@contextlib.contextmanager
def _one_cluster_at_a_time():
    """A lock across pytest-xdist workers: two clusters started at once race for the free ports they
    picked (tests/executor and tests/benchmarking each start one)."""
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / "cepopt-test-standalone-cluster.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _cluster(tmp_path: Path):
    import pyspark

    port, ui = _free_port(), _free_port()
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOG_DIR": str(tmp_path), "SPARK_NO_DAEMONIZE": "1"}
    env.pop("CEPOPT_SPARK_MASTER", None)
    procs = [_start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                     "--webui-port", str(ui)], env, tmp_path / "master.log")]
    try:
        procs.append(_start(["org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host",
                             "127.0.0.1", "--cores", "2", "--memory", "2g", "--webui-port", str(_free_port()),
                             "--work-dir", str(tmp_path / "work")], env, tmp_path / "worker.log"))
        _wait_for_worker(tmp_path / "master.log", procs)
        yield f"spark://127.0.0.1:{port}", env
    finally:
        for proc in reversed(procs):
            _stop(proc)
    assert all(p.poll() is not None for p in procs)


def _local_digest(name: str, stream: str | None) -> str:
    try:
        result = execute(name, None, stream, engine="local")
    except Exception as exc:  # noqa: BLE001 -- a family that runs on Spark only
        if "runs on Spark only" in str(exc):
            return ""
        raise
    return result.digest()


@pytest.mark.cluster
@pytest.mark.spark
def test_standalone_cluster_gives_the_local_digests(spark, tmp_path):
    with standalone_cluster(tmp_path) as (master, env):
        cli = Path(sys.executable).with_name("cepopt")
        for name, stream in CASES:
            args = [str(cli), "execute", name, "--master", master, "--json"]
            args += ["--stream", stream] if stream else []
            done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
            assert done.returncode == 0, done.stderr[-2000:]
            report = json.loads(done.stdout)
            assert report["master"] == master and report["results_rows"] > 0
            on_local_master = execute(name, None, stream, spark=spark)
            assert report["results_digest"] == on_local_master.digest(), name
            on_local_master.release()
            local = _local_digest(name, stream)
            assert local in ("", report["results_digest"]), name
