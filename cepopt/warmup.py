"""``cepopt warmup``: compile every Numba kernel into the shared kernel cache (cepopt/cache.py) before a
user waits for it, and say how long each took.

A kernel is compiled for the argument types of its call, so each step runs the code that calls it on a
small input of the real types: the join-order DPs' kernels directly (both the serial and the parallel
DP-LD), the solvers' pre-processing (milp-order's sparse DP, milp-tree's split enumeration) through a
solve of the bundled ``joinorder-e6``, and the executors' kernels through a local-engine execution of each
family's bundled example (Sharon's loops compiled, whatever the stream's size). The JVM's class-data
archive of Spark is written too, unless ``--no-spark`` (executor/session.py). A second warmup loads everything from
the cache: its times are the loading cost that every new process pays.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from cepopt.cache import numba_cache_dir

__all__ = ["STEPS", "warmup"]


def _joinorder_dps() -> None:
    from cepopt.joinorder import dp_fast, dp_ld_fast

    dp_ld_fast.warm_kernels(2)
    dp_ld_fast.warm_kernels(dp_ld_fast._PARALLEL_N)
    dp_fast.warm_kernels()


def _joinorder_models() -> None:
    from cepopt.registry import solve

    for method in ("milp-order", "milp-tree"):
        solve("joinorder-e6", method, time_limit=60)


def _execute(name: str, plans: tuple[str, ...], stream: str | None = None, **options) -> Callable[[], None]:
    """Execute ``name`` locally under each of ``plans`` (shared and not: they call different kernels)."""
    def run() -> None:
        from cepopt.pipeline import execute

        for plan in plans:
            execute(name, plan, stream=stream, engine="local", **options).release()

    return run


def _spark_job(spark) -> None:
    """A small execution on Spark: the classes it loads go into the archive."""
    from cepopt.pipeline import execute

    execute("sharon-example3", engine="spark", spark=spark).release()


#: the stream of the examples that embed none (a small one: the kernels' types, not their work, matter)
_STREAM = "gen:workload:events=500,seed=1"

#: (what is compiled, how): the steps of :func:`warmup`, in order
STEPS: list[tuple[str, Callable[[], None]]] = [
    ("join-order DP kernels (dp-ld, dp-b)", _joinorder_dps),
    ("join-order model kernels (milp-order, milp-tree)", _joinorder_models),
    ("Sharon executor kernels", _execute("sharon-example3", ("nonshared", "sharon"), jit=True)),
    ("Hamlet executor kernels", _execute("hamlet-example", ("nonshared", "static", "dynamic"))),
    ("Gloria executor kernels", _execute("gloria-e6", ("nonshared", "gloria"), _STREAM)),
    ("join-order executor", _execute("joinorder-e6", ("trivial", "dp-b"), _STREAM)),
]


def warmup(report: Callable[[str], None] = print, *, spark: bool = True) -> float:
    """Run every step of :data:`STEPS` (and the Spark archive's with ``spark``), reporting each one's
    seconds through ``report``; the total seconds."""
    report(f"compiled kernels: {numba_cache_dir()}")
    steps = list(STEPS)
    if spark:
        from cepopt.executor.session import write_cds_archive

        steps.append(("Spark's class-data archive", lambda: write_cds_archive(_spark_job) or None))
    total = time.perf_counter()
    for label, step in steps:
        start = time.perf_counter()
        step()
        report(f"  {label:50s} {time.perf_counter() - start:7.2f} s")
    seconds = time.perf_counter() - total
    report(f"warm in {seconds:.1f} s")
    return seconds
