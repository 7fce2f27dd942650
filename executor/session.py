"""The Spark session: ``local[*]`` by default with the UI off; a cluster through ``master`` or
``CEPOPT_SPARK_MASTER``. One session per process, reused while the master asked for is its master.

Start-up is checked before the JVM starts where it can be (the master URL's form, a standalone
master's host and port reachable, Java present), and any failure to start is one
:class:`~cepopt.errors.CepoptError` line, never a Java stack trace.

Environment:

* ``CEPOPT_SPARK_MASTER``: the master when none is given (``local[*]`` otherwise);
* ``PYSPARK_PYTHON``: the workers' Python (on a cluster, an interpreter with cepopt installed on every
  worker); when unset, a local master runs the driver's own interpreter, a cluster Spark's default;
* ``CEPOPT_SHUFFLE_PARTITIONS``: ``spark.sql.shuffle.partitions``; unset (and not set in Spark's own
  configuration), the cluster's default parallelism;
* ``CEPOPT_DRIVER_MEMORY``: ``spark.driver.memory`` of a local driver (default 2g);
* ``CEPOPT_SPARK_CDS``: ``0`` turns off the class-data archive below;
* ``CEPOPT_SPARK_LOG``: where the JVM's own stderr goes (Spark's log at ERROR, the JVM's warnings such
  as ``Using incubator modules``, the Python workers' stderr): by default the file
  ``$CEPOPT_CACHE/logs/spark-PID.log`` (appended to; removed after a week unwritten), so that a
  failure reaches the user as cepopt's one line only; ``stderr`` (``cepopt ... --verbose``) leaves it
  on stderr; any other value is the file to write it to.

Start-up cost (most of a small run's time is the JVM's own: class loading, JIT): the driver JVM uses an
application class-data archive of Spark's classes (JDK CDS), written by ``cepopt warmup`` into
``$CEPOPT_CACHE/cds`` (default ``~/.cache/cepopt``; about 170 MB; :func:`write_cds_archive`: a temporary
name renamed once its JVM has exited, partial files of interrupted dumps removed) and mapped by every
run, which halves the JVM's start-up CPU (named after pyspark's jars and their times: the JVM silently refuses an
archive of jars since reinstalled). A ``small`` run (a stream of a few MB) also runs the JIT's first tier only
and the serial collector, which halves it again; large runs keep the JVM's defaults.

The JVM ends with the command: :func:`stop_spark` (also run at the interpreter's exit) waits for it and
its Python workers, so that no process outlives ``cepopt`` or holds its caller's output pipes.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import re
import shutil
import socket
import sys
from pathlib import Path

from cepopt.cache import cache_dir, numba_cache_dir
from cepopt.errors import CepoptError

__all__ = ["check_master", "get_spark", "stop_spark", "write_cds_archive"]

_SESSION = None
_MASTER: str | None = None

#: log4j2 configuration of the driver: errors only, and no task-failure stack traces (a failing task's
#: error reaches the user as one line through the engine)
LOG4J = Path(__file__).with_name("log4j2.properties")

_LOCAL = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?$|local-cluster\[\d+,\s*\d+,\s*\d+\]$")
_SCHEMES = ("spark://", "yarn", "k8s://", "mesos://")


def check_master(master: str) -> None:
    """A CepoptError unless ``master`` is a Spark master URL whose standalone hosts answer (3 s)."""
    if _LOCAL.match(master) or master in ("yarn",) or master.startswith(("k8s://", "mesos://")):
        return
    if not master.startswith("spark://"):
        raise CepoptError(f"--master {master!r}: not a Spark master URL (local[*], local[N], spark://HOST:PORT, "
                          "yarn, k8s://...)")
    for hostport in master[len("spark://"):].split(","):
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise CepoptError(f"--master {master!r}: expected spark://HOST:PORT")
        try:
            socket.create_connection((host, int(port)), timeout=3).close()
        except OSError as exc:
            raise CepoptError(f"--master {master}: cannot reach the Spark master at {host}:{port} "
                              f"({exc.strerror or exc})") from None


def _log_target() -> Path | None:
    """The file the JVM's stderr goes to (None: stderr itself); see ``CEPOPT_SPARK_LOG``."""
    setting = os.environ.get("CEPOPT_SPARK_LOG", "")
    if setting == "stderr":
        return None
    if setting:
        return Path(setting)
    return cache_dir() / "logs" / f"spark-{os.getpid()}.log"


def _drop_old_logs(folder: Path, days: float = 7.0) -> None:
    """Remove the default logs (``spark-PID.log``) not written for ``days``."""
    import time

    for old in folder.glob("spark-*.log"):
        with contextlib.suppress(OSError):
            if time.time() - old.stat().st_mtime > days * 86400:
                old.unlink()


@contextlib.contextmanager
def _jvm_stderr():
    """While the JVM is launched, file descriptor 2 is the log file, which the JVM (and the Python
    workers it starts) inherit as their stderr; this process's stderr is back once it is running.
    Yields the log's path (None: nothing redirected)."""
    target = _log_target()
    if target is None:
        yield None
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        log = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        _drop_old_logs(target.parent)
    except OSError:
        yield None  # no log file: Spark's output stays on stderr rather than being lost
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(log, 2)
        yield target
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


def missing_cepopt(text: str) -> CepoptError | None:
    """The one line for a job whose workers' Python has no cepopt (a cluster without
    ``PYSPARK_PYTHON``), or None for any other failure."""
    if not re.search(r"No module named '?cepopt", text):
        return None
    python = os.environ.get("PYSPARK_PYTHON")
    now = f"it is {python}" if python else "it is unset"
    return CepoptError(f"the Spark workers' Python cannot import cepopt: set PYSPARK_PYTHON to a Python with "
                       f"cepopt installed on every worker ({now}; README: Running on a cluster)")


def _check_java() -> None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return
    if shutil.which("java") is None:
        raise CepoptError("cannot start Spark: no Java found (install Java 17 or 21, or set JAVA_HOME)")


def _first_line(exc: BaseException) -> str:
    """The informative line of a Python, Py4J or Java error: the first Java/Python exception's message
    when there is one (a Py4J error starts with "An error occurred while calling ..."), else the first
    line that is not a stack frame."""
    text = str(exc)
    found = re.search(r"^[:\s]*(?:[\w$]+\.)*[\w$]*(?:Exception|Error)\b:?\s*(.+)$", text, re.M)
    if found and found.group(1).strip():
        return found.group(1).strip()[:300]
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "Traceback", "File ", "py4j")):
            return re.sub(r"^\S*(Exception|Error):\s*", "", line)[:300]
    return type(exc).__name__


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _archive_path() -> Path:
    """The class-data archive of this pyspark, Java and jars (its folder created)."""
    import pyspark

    java = shutil.which("java") or ""
    home = os.environ.get("JAVA_HOME", "")
    # the jars' times: an archive of jars since reinstalled is refused by the JVM without a word
    # (and start-up takes twice as long), so a reinstall must name a new archive
    jars = Path(pyspark.__file__).parent / "jars"
    stamp = max((f.stat().st_mtime_ns for f in jars.glob("*.jar")), default=0) if jars.is_dir() else 0
    key = hashlib.sha1(f"{pyspark.__file__}|{pyspark.__version__}|{home}|{os.path.realpath(java)}|{stamp}"
                       .encode())
    folder = cache_dir() / "cds"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"spark-{pyspark.__version__}-{key.hexdigest()[:12]}.jsa"


def drop_partial_archives(folder: Path) -> None:
    """Remove the archives being written (``NAME.PID.tmp``) whose writer is gone: an interrupted dump
    (never promoted: the JVM refuses a half-written archive only after paying for reading it)."""
    for tmp in folder.glob("*.jsa.*.tmp"):
        pid = tmp.name.rsplit(".", 2)[-2]
        if not pid.isdigit() or not _pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                tmp.unlink()


#: JVM options of a quiet archive (the JVM's own CDS warnings off)
_CDS_QUIET = ["-Xlog:disable", "-Xlog:all=error:stderr"]


def cds_options() -> list[str]:
    """JVM options of the class-data archive: map it when there is one (``cepopt warmup`` writes it:
    :func:`write_cds_archive`); a run never writes it, as the JVM would at its exit, for up to minutes
    after the command that started it."""
    if os.environ.get("CEPOPT_SPARK_CDS", "1") == "0":
        return []
    try:
        final = _archive_path()
        drop_partial_archives(final.parent)
        return [f"-XX:SharedArchiveFile={final}", *_CDS_QUIET] if final.is_file() else []
    except OSError:
        return []


def write_cds_archive(job=None, timeout: float = 600.0) -> Path | None:
    """Write the class-data archive (``cepopt warmup``): a JVM that runs ``job(spark)`` (a typical small
    run: the classes it loads are the ones archived; default a count) and dumps them at its exit, under a
    temporary name renamed once the JVM has exited cleanly (a reader never sees a partial file). Waits
    for that JVM; the archive, or None (CDS off, or the dump failed)."""
    if os.environ.get("CEPOPT_SPARK_CDS", "1") == "0":
        return None
    final = _archive_path()
    drop_partial_archives(final.parent)
    tmp = final.with_name(f"{final.name}.{os.getpid()}.tmp")
    stop_spark()
    global _CDS_DUMP
    _CDS_DUMP = [f"-XX:ArchiveClassesAtExit={tmp}", *_CDS_QUIET]
    try:
        spark = get_spark(small=True)
        (job or (lambda session: session.range(10).count()))(spark)
        code = stop_spark(timeout=timeout)
    finally:
        _CDS_DUMP = None
    if code == 0 and tmp.is_file() and tmp.stat().st_size > 1 << 20:
        os.replace(tmp, final)
        return final
    with contextlib.suppress(OSError):
        tmp.unlink()
    return None


#: the archive options of the next JVM, set by :func:`write_cds_archive` only
_CDS_DUMP: list[str] | None = None


def _builder(master: str, small: bool = False):
    from pyspark.sql import SparkSession

    local = master.startswith("local")
    if local and "PYSPARK_PYTHON" not in os.environ:
        # the workers of a local master must run this interpreter (the one with cepopt installed)
        os.environ["PYSPARK_PYTHON"] = sys.executable
    opts = [f"-Dlog4j2.configurationFile={LOG4J.as_uri()}", *(_CDS_DUMP or cds_options())]
    if small:
        opts += ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    java_opts = " ".join(opts)
    builder = (
        SparkSession.builder.master(master)
        .appName("cepopt")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if local:
        builder = builder.config("spark.driver.memory", os.environ.get("CEPOPT_DRIVER_MEMORY", "2g"))
        # the workers read the driver's compiled kernels (cepopt/cache.py); a cluster's workers use their own
        builder = builder.config("spark.executorEnv.NUMBA_CACHE_DIR", str(numba_cache_dir()))
    if os.environ.get("CEPOPT_SHUFFLE_PARTITIONS"):
        builder = builder.config("spark.sql.shuffle.partitions", os.environ["CEPOPT_SHUFFLE_PARTITIONS"])
    return builder


def _start(master: str, small: bool):
    """``getOrCreate`` with the JVM's stderr in the log (``CEPOPT_SPARK_LOG``); a failure is one line."""
    with _jvm_stderr() as log:
        try:
            return _builder(master, small).getOrCreate()
        except Exception as exc:  # noqa: BLE001 -- py4j, PySparkRuntimeError, Java errors: one line
            where = f" (Spark's log: {log})" if log else ""
            raise CepoptError(f"cannot start Spark on {master}: {_first_line(exc)}{where}") from None


def get_spark(master: str | None = None, *, small: bool = False):
    """The process-wide SparkSession of ``master``.

    ``master`` None: the running session whatever its master (one the caller started included), else
    one on ``CEPOPT_SPARK_MASTER`` or ``local[*]``. A master other than the running session's stops that
    session and starts one on ``master`` (Spark allows one context per process). The UI and most logging
    are off; Arrow is on for pandas UDFs; ``spark.sql.shuffle.partitions`` is the cluster's parallelism
    unless set. ``small`` (a hint for a new session): the run reads a small stream, start the JVM for a
    short life.
    """
    global _SESSION, _MASTER
    if _SESSION is not None and (master is None or master == _MASTER):
        if _SESSION.sparkContext._jsc is not None:  # not stopped behind our back
            return _SESSION
    if _SESSION is not None:
        stop_spark(end_jvm=False)  # another master: a new context in the same JVM
    elif master is None:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:  # the caller's own session: use it as it is
            _SESSION, _MASTER = active, active.sparkContext.master
            return active
    master = master or os.environ.get("CEPOPT_SPARK_MASTER") or "local[*]"
    check_master(master)
    _check_java()
    session = _start(master, small)
    sc = session.sparkContext
    if sc.master != master:  # a session someone else started in this process
        session.stop()
        session = _start(master, small)
        sc = session.sparkContext
    sc.setLogLevel("ERROR")
    if not sc.getConf().contains("spark.sql.shuffle.partitions"):
        session.conf.set("spark.sql.shuffle.partitions", str(max(1, sc.defaultParallelism)))
    _SESSION, _MASTER = session, master
    return session


def stop_spark(timeout: float = 30.0, *, end_jvm: bool = True) -> int | None:
    """Stop the session and (``end_jvm``) the JVM this process started, waiting (``timeout`` seconds, then
    kill) for it to exit with the Python workers it started: no process of a command outlives it, nor
    holds its caller's output pipes. The JVM's exit status, or None (no JVM ended)."""
    global _SESSION, _MASTER
    if _SESSION is not None:
        _SESSION.stop()
    _SESSION, _MASTER = None, None
    return _end_jvm(timeout) if end_jvm else None


def _end_jvm(timeout: float) -> int | None:
    """End the gateway JVM that pyspark launched in this process (it exits when its standard input
    closes), so that a later session starts a new one."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return None
    with contextlib.suppress(Exception):  # a gateway already gone: its JVM is ending
        gateway.shutdown()
    with contextlib.suppress(OSError):
        proc.stdin.close()
    try:
        code = proc.wait(timeout)
    except Exception:  # noqa: BLE001 -- subprocess.TimeoutExpired: it must not outlive us
        proc.kill()
        code = proc.wait()
    SparkContext._gateway = SparkContext._jvm = None
    return code


@atexit.register
def _at_exit() -> None:
    if _SESSION is not None:
        with contextlib.suppress(Exception):
            stop_spark()
