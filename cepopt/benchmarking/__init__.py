"""cepopt.benchmarking: compare methods across instance sets (``cepopt benchmark``, ``cepopt.benchmark``).

* :mod:`~cepopt.benchmarking.grid`: instance and method specs, the cells (instance x method x seed x repeat);
* :mod:`~cepopt.benchmarking.runner`: each cell in its own process (``jobs`` at once) or as Spark tasks;
* :mod:`~cepopt.benchmarking.results`: the results CSV, appended per cell, resumable;
* :mod:`~cepopt.benchmarking.progress`: primal and dual bound over time, Berthold's integrals;
* :mod:`~cepopt.benchmarking.metrics`: performance profiles, PAR10, shifted geometric mean, win/tie/loss;
* :mod:`~cepopt.benchmarking.report`: ``cepopt benchmark report DIR`` (markdown, PNG, CSV).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cepopt.errors import CepoptError

__all__ = ["BenchmarkRun", "RESULTS_NAME", "benchmark"]

#: the results file inside the output folder
RESULTS_NAME = "results.csv"


@dataclass
class BenchmarkRun:
    results_path: Path
    total: int  # cells of the grid
    ran: int  # run now
    skipped: int  # found in the results file (resumed)
    failed: int  # run now without a plan through a fault (error, crashed, killed, memory)
    seconds: float  # the whole call
    warm_s: float = 0.0  # of which warming the methods up before the cells (runner.warm_up)


def benchmark(instances: Sequence[Any] | str, methods: Sequence[str] | None = None, *,
              time_limit: float | None = None, seeds: Any = None, repeats: int = 1, jobs: int | None = None,
              memory_mb: float | None = None, kill_after: float | None = None,
              out: str | os.PathLike = "cepopt-results/benchmark", master: str | None = None, resume: bool = True,
              command: str | None = None, progress: bool = False) -> BenchmarkRun:
    """Run every (instance, method entry, seed, repeat) cell not yet in ``out/results.csv``; append its row.

    ``instances`` and ``methods`` are specs (:mod:`cepopt.benchmarking.grid`; named Instance objects
    too); ``seeds`` a count, ``"A..B"``, ``"A,B"`` or a list; ``jobs`` cells at once (default: the core
    count); ``memory_mb`` the address space a cell may add to its process; ``kill_after`` the wall seconds
    after which a cell's process is killed (default 2 x time_limit + 10). With ``master`` the cells run as
    Spark tasks on that cluster. See docs/BENCHMARK.md.
    """
    from tqdm import tqdm

    from cepopt.benchmarking.grid import build_cells, parse_methods, parse_seeds, resolve_instances
    from cepopt.benchmarking.results import FAILED, ResultsFile
    from cepopt.benchmarking.runner import Limits, run_isolated, spark_rows, warm_up
    from cepopt.experiments.framework import run_metadata
    from cepopt.params import check_time_limit

    started = time.perf_counter()
    time_limit = check_time_limit(time_limit, "--time-limit")
    from cepopt.instance import Instance

    refs = resolve_instances([instances] if isinstance(instances, str | Instance) else instances)
    cells = build_cells(refs, parse_methods(methods), parse_seeds(seeds), repeats)
    jobs = jobs if jobs is not None else os.cpu_count() or 1
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise CepoptError(f"--jobs: expected a positive integer, got {jobs!r}")
    limits = Limits(time_limit, memory_mb, kill_after if kill_after is not None else
                    Limits.default_kill_after(time_limit))
    if master:
        from cepopt.executor.session import check_master

        check_master(master)
    results = ResultsFile(Path(out) / RESULTS_NAME, resume=resume)
    by_id = {r.id: r.instance for r in refs}
    pending = [(c, by_id[c.instance_id]) for c in cells if c.key not in results.keys]
    meta = run_metadata(command)
    warm_s = 0.0
    if pending and not master:
        from cepopt.formulations.native import native_output_to_stderr

        warm_start = time.perf_counter()
        with native_output_to_stderr():
            warm_up((cell for cell, _ in pending), jobs=jobs)
        warm_s = time.perf_counter() - warm_start
    rows = spark_rows(pending, master, limits) if master and pending else run_isolated(pending, jobs, limits,
                                                                                      warm=False)
    failed = 0
    for row in tqdm(rows, total=len(pending), desc="benchmark", disable=not progress):
        failed += row["status"] in FAILED
        load = meta["meta_load"]
        try:
            load = round(os.getloadavg()[0], 2)
        except OSError:
            pass
        results.append({**row, "time_limit": time_limit, **meta, "meta_host": row.get("host", ""),
                        "meta_load": load})
    return BenchmarkRun(results.path, len(cells), len(pending), len(cells) - len(pending), failed,
                        time.perf_counter() - started, warm_s)
