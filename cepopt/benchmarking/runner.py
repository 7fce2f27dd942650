"""Running cells: each in its own process, ``jobs`` at a time, locally or inside Spark tasks.

A cell runs in a child forked from the process that holds its instance (the parent has imported cepopt,
so a cell costs a fork, not an interpreter start). The child caps its address space with
``resource.setrlimit(RLIMIT_AS)`` (``memory_mb``, counted from the size it had at the fork), solves,
and sends back its row. What can go wrong stays in the cell: a Python error is status "error", a
MemoryError (the cap reached in Python code) "memory", a child that dies without a row (a native
crash, a native allocation past the cap, a signal) "crashed", and a child still running ``kill_after``
seconds after it started is killed with every process it started (its process group): "killed".
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import resource
import signal
import socket
import time
import traceback
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cepopt.benchmarking.grid import Cell
from cepopt.benchmarking.progress import Recorder
from cepopt.errors import CepoptError

__all__ = ["Limits", "fork_safe_threads", "run_cell", "run_isolated", "spark_rows", "warm_up"]


@dataclass(frozen=True)
class Limits:
    """Per cell: the method's ``time_limit`` (None: none), the address-space cap in MB above the
    worker's size (None: none) and the wall time after which the cell's process is killed (None: never)."""

    time_limit: float | None = None
    memory_mb: float | None = None
    kill_after: float | None = None

    @staticmethod
    def default_kill_after(time_limit: float | None) -> float | None:
        """Twice the limit plus 10 s: room for building the problem and a method that overshoots a little."""
        return None if time_limit is None else 2 * time_limit + 10


def _row(cell: Cell, **values: Any) -> dict[str, Any]:
    from cepopt.registry import family

    return {"instance": cell.instance_id, "family": cell.family, "sense": family(cell.family).sense,
            "method": cell.label, "method_name": cell.method, "params": dict(cell.params), "seed": cell.seed,
            "repeat": cell.repeat, "host": socket.gethostname(), **values}


def run_cell(cell: Cell, instance: Any, time_limit: float | None) -> dict[str, Any]:
    """Solve one cell in this process: its row (status, objective, bound, times, progress, message)."""
    from cepopt.formulations.native import solver_settings
    from cepopt.registry import solve

    start = time.perf_counter()
    recorder = Recorder(start)
    try:
        with solver_settings(progress=recorder):
            sol = solve(instance, cell.method, time_limit=time_limit, seed=cell.seed, params=cell.params)
    except MemoryError:
        return _row(cell, status="memory", time_s=time.perf_counter() - start,
                    message="MemoryError: the cell's memory cap was reached")
    except Exception as exc:  # noqa: BLE001 -- a failing cell is a result, the others go on
        message = str(exc) if isinstance(exc, CepoptError) else f"{type(exc).__name__}: {exc}"
        return _row(cell, status="error", time_s=time.perf_counter() - start, message=message)
    elapsed = time.perf_counter() - start
    status = "memory" if sol.status == "error" and sol.stats.get("memory_error") else sol.status
    return _row(cell, status=status, objective=sol.objective, objective_name=sol.objective_name, bound=sol.bound,
                gap=sol.gap, time_s=elapsed, method_time_s=sol.time_s, message=sol.message,
                progress=recorder.trajectory(sol.objective, sol.bound, elapsed, sol.sense))


def _child(conn, cell: Cell, instance: Any, limits: Limits) -> None:
    try:
        os.setpgid(0, 0)  # its own process group: a kill reaches the solver processes it starts too
        if limits.memory_mb is not None:
            size = _address_space_bytes()
            cap = size + int(limits.memory_mb * 2**20)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        row = run_cell(cell, instance, limits.time_limit)
        row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        conn.send(row)
    except BaseException:  # noqa: BLE001 -- report anything rather than die silently
        try:
            conn.send(_row(cell, status="error", message=traceback.format_exc(limit=-1)))
        except BaseException:  # noqa: BLE001
            pass
    finally:
        conn.close()
        os._exit(0)  # skip the parent's atexit handlers (a Spark session, pools) inherited by the fork


def _address_space_bytes() -> int:
    """This process's virtual size (``/proc/self/statm``; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@dataclass
class _Running:
    process: Any
    conn: Any
    cell: Cell
    started: float


def _finish(job: _Running, killed: bool, limits: Limits) -> dict[str, Any]:
    row = None
    if not killed and job.conn.poll():
        try:
            row = job.conn.recv()
        except (EOFError, OSError):
            row = None
    wall = time.perf_counter() - job.started
    if killed:
        try:
            os.killpg(job.process.pid, signal.SIGKILL)
        except OSError:  # the group is gone already (or was never made)
            job.process.kill()
    job.process.join()
    job.conn.close()
    if row is None:
        if killed:
            row = _row(job.cell, status="killed", time_s=wall,
                       message=f"still running after {limits.kill_after:g} s: killed")
        else:
            code = job.process.exitcode
            how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            row = _row(job.cell, status="crashed", time_s=wall, message=f"the cell's process died ({how})")
    row["wall_s"] = wall
    return row


def fork_safe_threads() -> bool:
    """Have numba's parallel kernels use a fork-safe threading layer (tbb, else its own work queue; GNU
    OpenMP aborts a child forked after it ran). False when a layer already runs in this process: then
    :func:`warm_up` must not run parallel kernels before the forks."""
    import numba

    try:
        numba.threading_layer()
        return numba.threading_layer() != "omp"
    except ValueError:  # no parallel kernel has run yet: the layer can still be chosen
        numba.config.THREADING_LAYER = "forksafe"
        return True


def _smallest_bundled() -> dict[str, Any]:
    """family -> its smallest bundled instance."""
    from cepopt.instance import bundled_names, bundled_path, load

    out: dict[str, Any] = {}
    for name in sorted(bundled_names(), key=lambda n: bundled_path(n).stat().st_size):
        inst = load(name)
        out.setdefault(inst.problem, inst)
    return out


def _warm_one(instance: Any, method: str, params: dict, time_limit: float) -> None:
    from cepopt.registry import solve

    try:
        solve(instance, method, time_limit=time_limit, params=params)
    except Exception:  # noqa: BLE001 -- warming is best effort; the cell reports its own error
        pass


def _probe(instance: Any, method: str, params: dict, time_limit: float) -> None:
    _warm_one(instance, method, params, time_limit)
    os._exit(0)


#: the (family, method, options) this process has warmed (a Spark worker runs many cells)
_WARMED: set[tuple[str, str, str]] = set()


def warm_up(cells: Iterable[Cell], time_limit: float = 2.0, jobs: int = 1) -> list[str]:
    """Before forking: solve the family's smallest bundled instance once with each method of the cells, so
    that imports, compiled kernels (numba) and solver start-up are paid here, once, and not in every cell
    (where they would count in the method's time). Each warm-up first runs in a forked probe (``jobs`` at
    once): a method whose probe dies (a crash) or overruns is not warmed here, so that it cannot take this
    process down. Returns the methods warmed ("family/method")."""
    from cepopt.registry import family

    if not fork_safe_threads():
        return []
    ctx = multiprocessing.get_context("fork")
    smallest = _smallest_bundled()
    todo = []
    for key in dict.fromkeys((c.family, c.method, json.dumps(dict(c.params), sort_keys=True, default=str))
                             for c in cells):
        family(key[0])
        if key[0] in smallest and key not in _WARMED:
            _WARMED.add(key)
            todo.append((key, (smallest[key[0]], key[1], json.loads(key[2]), time_limit)))
    passed = []
    for batch in (todo[i:i + max(jobs, 1)] for i in range(0, len(todo), max(jobs, 1))):
        probes = [ctx.Process(target=_probe, args=args, daemon=True) for _, args in batch]
        for probe in probes:
            probe.start()
        for (key, args), probe in zip(batch, probes):
            probe.join(4 * time_limit + 10)
            if probe.exitcode is None:
                probe.kill()
                probe.join()
            if probe.exitcode == 0:
                passed.append((key, args))
    for _, args in passed:
        _warm_one(*args)
    return [f"{key[0]}/{key[1]}" for key, _ in passed]


def run_isolated(tasks: Iterable[tuple[Cell, Any]], jobs: int, limits: Limits,
                 warm: bool = True) -> Iterator[dict[str, Any]]:
    """Run every (cell, instance) in its own forked process, ``jobs`` at once; yield rows as cells finish
    (``warm``: :func:`warm_up` first)."""
    if jobs < 1:
        raise CepoptError(f"--jobs: expected a positive integer, got {jobs}")
    ctx = multiprocessing.get_context("fork")
    pending = deque(tasks)
    if warm and pending:
        from cepopt.formulations.native import native_output_to_stderr

        with native_output_to_stderr():
            warm_up((cell for cell, _ in pending), jobs=jobs)
    running: dict[Any, _Running] = {}
    while pending or running:
        while pending and len(running) < jobs:
            cell, instance = pending.popleft()
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(send, cell, instance, limits), daemon=True)
            proc.start()
            send.close()
            running[proc.sentinel] = _Running(proc, receive, cell, time.perf_counter())
        timeout = _next_deadline(running.values(), limits)
        ready = multiprocessing.connection.wait([*running, *(j.conn for j in running.values())], timeout)
        now = time.perf_counter()
        for key, job in list(running.items()):
            done = key in ready or job.conn in ready
            overdue = limits.kill_after is not None and now - job.started > limits.kill_after
            if done or overdue:
                del running[key]
                yield _finish(job, killed=overdue and not job.conn.poll(), limits=limits)


def _next_deadline(running: Iterable[_Running], limits: Limits) -> float | None:
    if limits.kill_after is None:
        return None
    now = time.perf_counter()
    return max(0.0, min(j.started + limits.kill_after - now for j in running) + 0.01)


def spark_rows(tasks: list[tuple[Cell, Any]], master: str, limits: Limits) -> Iterator[dict[str, Any]]:
    """Run the cells as Spark tasks, one Spark job of one task per cell, as many at once as the cluster has
    cores (a job per cell, so that each row is appended as soon as its cell is done; inside the task the
    cell is forked from the Python worker as in a local run)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from cepopt.executor.session import get_spark

    sc = get_spark(master).sparkContext

    def one(task: tuple[Cell, Any]) -> dict[str, Any]:
        return sc.parallelize([task], 1).map(lambda t: next(run_isolated([t], 1, limits))).collect()[0]

    with ThreadPoolExecutor(max(1, sc.defaultParallelism)) as pool:
        for done in as_completed([pool.submit(one, task) for task in tasks]):
            yield done.result()
