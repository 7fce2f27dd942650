"""The GLORIA authors' published optimizer latencies, matched to the workload files they measured.

The authors published, next to their workloads (``anchors-data/gloria/workloads``), the latency of their
Java optimizers (``anchors-data/gloria/output_csv/*.csv``: columns ``NoPrune Optimizer``, ``Normal
Optimizer`` = the GLORIA search, ``Greedy Optimizer``, in milliseconds, one row per iteration). The tables
name no file, so this module says which file each table row measured. ``cepopt experiment
gloria-optimizers`` times our ``gloria`` / ``noprune`` / ``greedy`` on the same files
(:func:`time_search`) and reports the ratio. The Java figures were measured on the authors' machine, not
on the one that times ours: the ratio compares implementations only roughly.

How the tables were matched (file names, query counts, the parameter columns of each table; checked by
tests/gloria/test_latency.py on the data):

================================================  ========================================================
table                                             workload file (under ``workloads/``)
================================================  ========================================================
``varyQueryNum.csv`` (QueryNum, K_percent = 0.0)  ``stock/SEQWorkload/workload_{QueryNum}.txt``
``varyKleeneLength.csv``                          ``stock/KleeneWorkload/kleeneLength/workload_{K_length}.txt``
``varyKleeneLayers.csv``                          ``stock/KleeneWorkload/KleeneLayers/workload_{K_layers}.txt``
``stock_mixWorkload_varyQueryNum.csv``            ``stock/MixWorkload/workload_{QueryNum}.txt``
``{bus,taxi}_varyQueryNum.csv`` (taxi:            ``{bus,taxi}/SEQWorkload/workload_{QueryNum}.txt``
``taxivaryQueryNum.csv``)
``{bus,taxi}_varyKleeneLength.csv``               ``{bus,taxi}/KleeneWorkload/kleeneLength/workload_{K_length}.txt``
``{bus,taxi}_varyKleeneLayers.csv``               ``{bus,taxi}/KleeneWorkload/KleeneLayers/workload_{K_layers}.txt``
``{bus,taxi}_mixWorkload_varyQueryNum.csv``       ``{bus,taxi}/MixWorkload/workload_{QueryNum}.txt``
``bus_mixWorkload_varyKRatio.csv``                ``bus/MixWorkload/kleeneRatio/workload_{10 K_ratio}.txt``
================================================  ========================================================

* The unprefixed tables are stock: the stock workloads are the only ones without a dataset prefix in
  the authors' layout, their Kleene-length files run from 2 to 10 exactly as the table's ``K_length``
  (bus and taxi also have a ``workload_1``, which no table measured), and a SEQ table's ``K_percent`` is 0.
* Kleene length: ``workload_k`` has one Kleene sub-pattern of k types; Kleene layers: ``workload_k``
  nests k Kleene layers; the Mix files hold ``QueryNum`` queries (K_length 10, K_layers 2 as the
  table says); every mapped file's query count equals the table's ``QueryNum``, except:
* The authors' harness (LeiMa0324/Gloria, ``src/main/java/experiment/OptimizerExperiments.java``, read for
  this mapping, nothing copied) opens exactly these paths: ``SEQWorkload/workload_{queryNum}``,
  ``kleeneLength/workload_{K_length}``, ``kleeneLayers/workload_{K_layers}``,
  ``MixWorkload/workload_{12 i}`` and ``kleeneRatio/workload_{(int)(10 k_ratio)}``, and reads the
  whole file. Its timer (``WorkloadAnalyzer.analyzeAndOptimize``, ``System.currentTimeMillis``) covers
  reading and parsing the file, grouping the queries into mini-workloads, building the graphs and the
  path search; the event frequencies (``DatasetSchema``) are loaded before it starts.
* **ambiguous** ``bus/SEQWorkload/workload_N.txt`` holds 2N queries (q0..q{2N-1}), the table says
  ``QueryNum`` = N (the file name). The table's Normal memory for bus is linear in N and within 0.01 %
  of taxi's at the same N (200 queries there), which suggests the file the authors timed held N
  queries (the published files were regenerated later?). We time the whole file (twice the queries:
  the ratio is then conservative) and flag the row.
* ``bus_mixWorkload_varyKRatio.csv``: its ``QueryNum`` = 50 is a constant label in the harness; it read
  the whole ``kleeneRatio/workload_k.txt`` (100 queries, of which 10 k are Kleene: the ratio k / 10).
  Flagged as the other mismatch, though here the 100 queries are what Java ran.
* ``bus_mixWorkload_varyQueryNum.csv`` holds three runs of 16 iterations per point (48 rows): the
  median is over all 48.
* No published optimizer latency: ``stock/GloriaVSHamletWorkload/*`` (used for the executor),
  ``stock/KleeneWorkload/workload_20.txt``, ``{bus,taxi}/KleeneWorkload/kleeneLength/workload_1.txt``,
  ``taxi/MixWorkload/kleeneRatio/*``; ``output_csv/executor/*`` are executor tables.
* The first iterations of a Java run include JIT warm-up (e.g. 2243 ms then 980 ms); the median over
  all iterations is what we compare to, as the tables give no other summary.
"""

from __future__ import annotations

import csv
import functools
import pickle
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["COLUMNS", "Latency", "TABLES", "published_latencies", "time_in_fresh_process", "time_parse",
           "time_search"]

#: our method -> the table's column of the same optimizer
COLUMNS = {"noprune": "NoPrune Optimizer", "gloria": "Normal Optimizer", "greedy": "Greedy Optimizer"}


@dataclass(frozen=True)
class Table:
    """One published latency table: its file, the dataset, the workload folder, the column naming the file."""

    csv: str
    dataset: str
    folder: str
    key: str  # the table column whose value names the workload file

    def workload(self, row: dict[str, str]) -> str:
        value = float(row[self.key])
        number = round(10 * value) if self.key == "K_ratio" else round(value)
        return f"{self.dataset}/{self.folder}/workload_{number}.txt"


def _tables() -> tuple[Table, ...]:
    out = [Table("varyQueryNum.csv", "stock", "SEQWorkload", "QueryNum"),
           Table("varyKleeneLength.csv", "stock", "KleeneWorkload/kleeneLength", "K_length"),
           Table("varyKleeneLayers.csv", "stock", "KleeneWorkload/KleeneLayers", "K_layers"),
           Table("stock_mixWorkload_varyQueryNum.csv", "stock", "MixWorkload", "QueryNum"),
           Table("taxivaryQueryNum.csv", "taxi", "SEQWorkload", "QueryNum"),
           Table("bus_varyQueryNum.csv", "bus", "SEQWorkload", "QueryNum"),
           Table("bus_mixWorkload_varyKRatio.csv", "bus", "MixWorkload/kleeneRatio", "K_ratio")]
    for dataset in ("bus", "taxi"):
        out += [Table(f"{dataset}_varyKleeneLength.csv", dataset, "KleeneWorkload/kleeneLength", "K_length"),
                Table(f"{dataset}_varyKleeneLayers.csv", dataset, "KleeneWorkload/KleeneLayers", "K_layers"),
                Table(f"{dataset}_mixWorkload_varyQueryNum.csv", dataset, "MixWorkload", "QueryNum")]
    return tuple(out)


TABLES = _tables()


@dataclass(frozen=True)
class Latency:
    """The published latencies of one workload file: median ms per method over ``iterations`` rows."""

    workload: str
    table: str
    queries: int  # the table's QueryNum
    iterations: int
    median_ms: dict[str, float]


def _rows(path: Path) -> list[dict[str, str]]:
    # one table's header carries blanks before its first quoted name: strip blanks and quotes
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = [h.strip().strip('"') for h in next(reader)]
        return [dict(zip(header, (v.strip() for v in row), strict=True)) for row in reader if row]


@functools.lru_cache(maxsize=4)
def published_latencies(data: Path) -> dict[str, Latency]:
    """Workload path (relative to ``data/workloads``) -> its published latencies; {} when the tables are
    absent (``data`` = ``anchors-data/gloria``). Read once per folder (cached: do not modify it)."""
    out: dict[str, Latency] = {}
    for table in TABLES:
        path = data / "output_csv" / table.csv
        if not path.is_file():
            continue
        groups: dict[str, list[dict[str, str]]] = {}
        for row in _rows(path):
            groups.setdefault(table.workload(row), []).append(row)
        for workload, rows in groups.items():
            medians = {m: statistics.median(float(r[c]) for r in rows) for m, c in COLUMNS.items()}
            out[workload] = Latency(workload, table.csv, int(rows[0]["QueryNum"]), len(rows), medians)
    return out


def time_search(instance, method: str, repeats: int = 3, warmups: int = 0) -> tuple[float, float]:
    """(median process CPU seconds, median wall seconds) of ``method`` on ``instance`` over ``repeats``,
    after ``warmups`` untimed runs.

    Timed: from the parsed queries and the event frequencies to the chosen plan: the problem build
    (template, pools, pair terms), the candidate graph (node generation, edges, pruning), the search and
    the plan decoded from the chosen nodes. Not timed: reading and parsing the workload file (which the
    Java timer also covers: :func:`time_parse`), re-scoring the plan with the cost model."""
    from cepopt import registry

    fam = registry.family("gloria")
    fn = registry.method("gloria", method).fn
    for _ in range(warmups):
        fn(fam.build(instance))
    cpu, wall = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        result = fn(fam.build(instance))
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        if result.plan is None:
            raise RuntimeError(f"{method}: no plan ({result.status}: {result.message})")
    return statistics.median(cpu), statistics.median(wall)


def time_parse(path: Path, repeats: int = 3) -> float:
    """Median process CPU seconds to read and parse one published workload file (the part of the Java
    timer that :func:`time_search` leaves out)."""
    from cepopt.instances.gloria_reader import read_workload

    cpu = []
    for _ in range(repeats):
        c0 = time.process_time()
        read_workload(path)
        cpu.append(time.process_time() - c0)
    return statistics.median(cpu)


def _timings(instance, path: Path, methods: tuple[str, ...], repeats: int, warmups: int) -> dict:
    """:func:`time_search` of each method, :func:`time_parse` of the file, and which GLORIA modules ran
    compiled (cepopt/gloria/compiled.py)."""
    from cepopt.gloria import compiled_modules

    out: dict = {m: time_search(instance, m, repeats, warmups) for m in methods}
    out["parse"] = time_parse(path, repeats)
    out["compiled_modules"] = compiled_modules()
    return out


#: the fresh process: reads the pickled arguments of :func:`_timings` on stdin, writes its result on stdout
_WORKER = ("import pickle, sys; from cepopt.experiments.gloria_latency import _timings; "
           "sys.stdout.buffer.write(pickle.dumps(_timings(*pickle.loads(sys.stdin.buffer.read()))))")


def time_in_fresh_process(instance, path: Path, methods: Sequence[str], repeats: int,
                          warmups: int = 2) -> dict:
    """``{method: (cpu s, wall s)}`` (:func:`time_search`), ``{"parse": cpu s}`` (:func:`time_parse`) and
    ``{"compiled_modules": names}`` (the GLORIA modules that ran compiled), measured in a new Python
    process that holds nothing but ``instance``.

    Why a process of its own: the same search timed inside the experiment's process, whose heap holds the
    run's instances, solver models and results, took 10-50 % longer (more memory for the allocator and
    the cyclic collector to walk) than in a fresh process, which is how a user runs ``cepopt solve``.
    Process CPU time is the figure: it leaves out the time other processes take from a shared machine.
    A plain interpreter started with the arguments pickled on stdin (not multiprocessing's spawn, which
    re-imports the caller's main script)."""
    args = pickle.dumps((instance, Path(path), tuple(methods), repeats, warmups))
    done = subprocess.run([sys.executable, "-c", _WORKER], input=args, capture_output=True, check=False)
    if done.returncode:
        raise RuntimeError(f"timing worker failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return pickle.loads(done.stdout)
