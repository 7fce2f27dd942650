"""``--output``: one results file, the same shape on every engine and family.

The results (executor/results.py) go to ONE file, CSV with a header or Parquet by the extension: the
local engine writes it with pandas; the Spark engine writes the cached results as one partition into
a temporary folder beside it and moves the part file to the name asked for (through Hadoop's file
system, so any URI Spark writes works), so a user finds the file they named whatever the engine.

:func:`check_output` runs before any work: a local path is probed by creating (then removing) a file
at that name, which is the one test that tells (a folder given as a file, a missing or read-only
folder, permissions, a full or read-only file system); a URI is left to Spark.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor import results as res

__all__ = ["check_output", "results_format", "write_results", "write_spark_results"]


def results_format(output: str | Path) -> str:
    """``csv`` or ``parquet`` by the extension of ``output``."""
    suffix = Path(str(output).rstrip("/")).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise CepoptError(f"--output {output}: unknown results format (use .csv or .parquet)")


def _local(output: str | Path) -> Path | None:
    from cepopt.executor.streams import is_local, local_path

    return local_path(output) if is_local(output) else None


def _cannot(output: str | Path, exc: OSError) -> CepoptError:
    return CepoptError(f"--output {output}: cannot write: {exc.strerror or exc}")


def check_output(output: str | Path) -> None:
    """A CepoptError unless ``output`` names a results file that can be written (module docstring);
    nothing is left behind (a probe file and any folder made for it are removed)."""
    results_format(output)
    path = _local(output)
    if path is None:
        return
    if path.is_dir():
        raise CepoptError(f"--output {output}: is a folder; name the results file (.csv or .parquet)")
    made = []
    try:
        for folder in reversed(path.parents):
            if not folder.exists():
                folder.mkdir()
                made.append(folder)
        if path.exists():  # an existing file: writable without touching it
            with open(path, "ab"):
                pass
        else:
            with open(path, "xb"):
                pass
            path.unlink()
    except OSError as exc:
        raise _cannot(output, exc) from None
    finally:
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                pass


def write_results(results: pd.DataFrame, output: str | Path) -> None:
    """Write a pandas results frame to the one file ``output``; values as exact text (ints can exceed
    2^63)."""
    fmt = results_format(output)
    path = _local(output)
    if path is None:
        raise CepoptError(f"--output {output}: the local engine writes local files only")
    df = results.copy()
    df["value"] = [res.value_text(v) for v in df["value"]]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "csv":
            df.to_csv(path, index=False)
        else:
            df.to_parquet(path, index=False)
    except OSError as exc:
        raise _cannot(output, exc) from None


def write_spark_results(results, output: str) -> None:
    """Write a Spark results DataFrame to the one file ``output`` (module docstring): one task writes the
    rows, sorted by key, into ``output``'s temporary sibling folder, whose part file becomes ``output``.
    A failed Spark job raises Spark's own error (the caller's engines.spark_failure makes it one line)."""
    fmt = results_format(output)
    spark = results.sparkSession
    jvm = spark.sparkContext._jvm
    target = jvm.org.apache.hadoop.fs.Path(str(output).rstrip("/"))
    fs = target.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    tmp = jvm.org.apache.hadoop.fs.Path(f"{target.toString()}.cepopt-{os.getpid()}.tmp")
    one = results.coalesce(1).sortWithinPartitions(*res.RESULT_KEYS)
    writer = one.write.mode("overwrite")
    try:
        if fmt == "csv":  # RFC 4180 quoting (quotes doubled), empty text as nothing: as pandas writes it
            writer.option("header", True).option("escape", '"').option("emptyValue", "").csv(tmp.toString())
        else:
            writer.parquet(tmp.toString())
    except Exception:  # the caller makes Spark's error one line (engines.spark_failure)
        fs.delete(tmp, True)
        raise
    if jvm.java.lang.Class.forName("org.apache.hadoop.fs.ChecksumFileSystem").isInstance(fs):
        fs = fs.getRawFileSystem()  # the local file system: move the part file without its .crc sidecar
    try:
        parts = [s.getPath() for s in fs.listStatus(tmp) if s.getPath().getName().startswith("part-")]
        if len(parts) != 1:
            raise CepoptError(f"--output {output}: Spark wrote {len(parts)} part files, expected one")
        if fs.exists(target):
            fs.delete(target, False)
        if not fs.rename(parts[0], target):
            raise CepoptError(f"--output {output}: cannot move the results file into place")
    finally:
        fs.delete(tmp, True)
