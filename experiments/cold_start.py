"""cold-start (issue 35): the wall time of a command's first run (empty caches: no compiled kernel, no
Spark archive) against its second (warm caches), each in a new process, with the machine's load.

A point is one command. Its cold run gets a new, empty ``$CEPOPT_CACHE`` (``NUMBA_CACHE_DIR`` unset, so
the kernels go under it: cepopt/cache.py), its warm run the same folder again; ``after_warmup`` is a third
run in a new cache filled by ``cepopt warmup`` first (the full grid only). The report gives the times,
warm/cold ratios and each run's 1-minute load average. ``--quick``: the two join-order DPs on
``joinorder-e6`` (seconds). Full: ``solve`` with every exact method on each family's bundled example,
``execute`` of the examples with embedded streams on both engines, and ``cepopt demo``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cepopt.experiments.framework import Experiment, markdown_table

__all__ = ["EXPERIMENT", "timed"]

#: each family's bundled example (solved with every exact method of its family)
EXAMPLES = ("sharon-fig4", "hamlet-example", "gloria-e6", "joinorder-e6")


def _cepopt() -> list[str]:
    return [sys.executable, "-m", "cepopt.cli"]


def grid(quick: bool) -> list[dict]:
    if quick:
        return [{"command": f"solve joinorder-e6 --method {m}"} for m in ("dp-ld", "dp-b")]
    from cepopt.registry import methods

    points = []
    for name in EXAMPLES:
        exact = [m for m, meth in methods(name.split("-")[0]).items() if meth.exact]
        points += [{"command": f"solve {name} --method {m}"} for m in exact]
    for name in ("sharon-example3", "hamlet-example"):
        points += [{"command": f"execute {name} --engine {e}"} for e in ("local", "spark")]
    points.append({"command": "demo"})
    return points


def timed(command: str, cache: Path, timeout: float = 3600.0) -> tuple[float, float, int]:
    """(wall seconds, 1-minute load before, exit status) of ``cepopt COMMAND`` in a new process whose
    cache folder is ``cache``; waited for with its output captured (a process left behind would hold it)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["CEPOPT_CACHE"] = str(cache)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run([*_cepopt(), *command.split()], env=env, capture_output=True, timeout=timeout)
    return time.perf_counter() - start, load, done.returncode


def run(point: dict) -> dict:
    """Cold, warm and (the full grid: not in ``--quick``'s join-order solves) after-warmup wall times."""
    command = point["command"]
    warmup = not command.startswith("solve joinorder")
    root = Path(tempfile.mkdtemp(prefix="cepopt-cold-"))
    try:
        cold, cold_load, code = timed(command, root / "cache")
        warm, warm_load, code2 = timed(command, root / "cache")
        row = {"cold_s": cold, "warm_s": warm, "cold_over_warm": cold / warm if warm else float("nan"),
               "cold_load": cold_load, "warm_load": warm_load, "status": max(code, code2)}
        if warmup:
            timed("warmup", root / "warmed")
            row["after_warmup_s"], row["after_warmup_load"], _ = timed(command, root / "warmed")
        return row
    finally:
        shutil.rmtree(root, ignore_errors=True)


def report(df, out_dir: Path) -> str:
    cols = [c for c in ("command", "cold_s", "warm_s", "cold_over_warm", "after_warmup_s", "cold_load",
                        "warm_load", "status") if c in df.columns]
    return (f"Wall seconds of each command's first run (empty caches) and second (warm), new processes, "
            f"{os.cpu_count()} cores; loads are the 1-minute load averages before each run.\n\n"
            + markdown_table(df, cols, floatfmt=".3g") + "\n")


EXPERIMENT = Experiment(
    name="cold-start",
    description="First run (empty caches) against second run of solve, execute and demo, in new processes",
    grid=grid,
    run=run,
    report=report,
)
