"""The driver JVM's class-data archive (executor/session.py): named after the jars it was made from."""

from __future__ import annotations

import os

import pyspark

from cepopt.executor.session import cds_options


def _archive(options: list[str]) -> str:
    (flag,) = [o for o in options if o.startswith("-XX:") and ("Archive" in o)]
    return flag.split("=", 1)[1].rsplit("/", 1)[-1].split(".jsa")[0]


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
