"""The Spark session: local[*] by default with the UI off; a cluster through ``master`` or
``CEPOPT_SPARK_MASTER``. One session per process, reused."""

from __future__ import annotations

import os
import sys

__all__ = ["get_spark", "stop_spark"]

_SESSION = None


def get_spark(master: str | None = None):
    """The process-wide SparkSession, created on first use.

    ``master`` (or the environment variable ``CEPOPT_SPARK_MASTER``) selects the cluster; the default
    is ``local[*]``. Arrow is enabled for pandas UDFs; the UI and most logging are off.
    """
    global _SESSION
    if _SESSION is not None:
        return _SESSION
    from pyspark.sql import SparkSession

    master = master or os.environ.get("CEPOPT_SPARK_MASTER") or "local[*]"
    # Python workers must run this interpreter (the one with cepopt installed), not whatever
    # `python3` is first on PATH; a cluster can still override it through the environment.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName("cepopt")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.shuffle.partitions", os.environ.get("CEPOPT_SHUFFLE_PARTITIONS", "4"))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", os.environ.get("CEPOPT_DRIVER_MEMORY", "4g"))
    )
    _SESSION = builder.getOrCreate()
    _SESSION.sparkContext.setLogLevel("ERROR")
    return _SESSION


def stop_spark() -> None:
    global _SESSION
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = None
