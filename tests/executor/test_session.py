"""The driver JVM's class-data archive (executor/session.py): named after the jars it was made from, never
left half-written; and no process of a command outlives it (issue 35)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pyspark
import pytest

from cepopt.executor.session import _archive_path, cds_options


def _archive(options: list[str] | None = None) -> str:
    return _archive_path().name.split(".jsa")[0]


def test_reinstalled_jars_name_a_new_archive(tmp_path, monkeypatch):
    """A JVM refuses, silently, an archive of jars since rewritten (start-up then costs twice as much):
    jars with new times must give a new archive name."""
    fake = tmp_path / "site" / "pyspark"
    (fake / "jars").mkdir(parents=True)
    jar = fake / "jars" / "spark-core.jar"
    jar.write_bytes(b"jar")
    monkeypatch.setattr(pyspark, "__file__", str(fake / "__init__.py"))
    monkeypatch.setenv("CEPOPT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CEPOPT_SPARK_CDS", raising=False)
    first = _archive(cds_options())
    assert first == _archive(cds_options())  # the same jars: the same name
    for tmp in (tmp_path / "cache" / "cds").glob("*.tmp"):
        tmp.unlink()
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 10 ** 9))
    assert _archive(cds_options()) != first


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_partial_archive_is_removed_never_mapped(tmp_path, monkeypatch):
    """An interrupted dump (its writer gone) leaves ``NAME.PID.tmp``: removed, not promoted to the archive."""
    monkeypatch.setenv("CEPOPT_CACHE", str(tmp_path))
    monkeypatch.delenv("CEPOPT_SPARK_CDS", raising=False)
    final = _archive_path()
    partial = final.with_name(f"{final.name}.{_dead_pid()}.tmp")
    partial.write_bytes(b"\0" * (2 << 20))
    options = cds_options()
    assert not partial.exists() and not final.exists()
    assert not any("Archive" in o for o in options)  # a plain run neither maps nor writes an archive


def _processes_with(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "environ").read_bytes():
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
        except OSError:
            continue
    return found


@pytest.mark.spark
def test_a_spark_command_leaves_no_process_and_no_partial_file(tmp_path):
    """``cepopt execute`` on Spark under ``subprocess.run(capture_output=True)``: when it returns, no process
    it started (the JVM, the Python workers) is alive, and the cache holds no partial archive."""
    marker = f"CEPOPT_TEST_MARK={uuid.uuid4().hex}"
    env = {**os.environ, "CEPOPT_CACHE": str(tmp_path), marker.split("=")[0]: marker.split("=")[1]}
    env.pop("NUMBA_CACHE_DIR", None)
    cepopt = Path(sys.executable).with_name("cepopt")
    done = subprocess.run([str(cepopt), "execute", "sharon-example3", "--plan", "nonshared"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "COUNT(*)" in done.stdout
    assert _processes_with(marker) == []
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.mark.spark
def test_warmup_writes_the_archive_whole_and_later_runs_map_it(tmp_path, monkeypatch):
    """``write_cds_archive`` (``cepopt warmup``) waits for its JVM's dump, then renames it: the archive
    exists, no partial file is left, no process survives, and a later start maps it."""
    marker = uuid.uuid4().hex
    env = {**os.environ, "CEPOPT_CACHE": str(tmp_path), "CEPOPT_TEST_MARK": marker}
    env.pop("CEPOPT_SPARK_CDS", None)
    code = "from cepopt.executor.session import write_cds_archive; print(write_cds_archive())"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    written = Path(done.stdout.strip().splitlines()[-1])
    assert written.is_file() and written.stat().st_size > 1 << 20
    assert not list(tmp_path.rglob("*.tmp"))
    assert _processes_with(marker) == []
    monkeypatch.setenv("CEPOPT_CACHE", str(tmp_path))
    monkeypatch.delenv("CEPOPT_SPARK_CDS", raising=False)
    assert f"-XX:SharedArchiveFile={written}" in cds_options()
