"""Readers for the GLORIA authors' published workloads and event-type frequency table.

The published files (paper ref [9]; specs/gloria.md §8.1) are

* ``workloads/{stock,bus,taxi}/**/workload_N.txt``: queries in the papers' text syntax, one block per
  query (``q0`` / ``RETURN ...`` / ``PATTERN ...`` / ``WHERE ...`` / ``GROUP-BY ...`` /
  ``WITHIN 10 min SLIDE 5 min``), parsed with :func:`cepopt.syntax.parse_queries`;
* ``event_type_frequencies.csv`` with columns ``dataset,class,event_type,frequency``.

:func:`import_workload` turns one workload into a ``gloria`` instance whose ``statistics.rates`` are the
frequencies of the data set (the paper's f(E)); ``cepopt import gloria WORKLOAD.txt --frequencies
FREQ.csv --dataset stock|bus|taxi -o INSTANCE.json`` calls it.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from cepopt.allocation import collector_paused
from cepopt.errors import CepoptError
from cepopt.model import Statistics
from cepopt.textio import read_text

__all__ = ["DATASETS", "import_workload", "read_frequencies", "read_workload"]

DATASETS = ("stock", "bus", "taxi")


def read_frequencies(path: str | Path, dataset: str) -> dict[str, float]:
    """Event type -> frequency for one data set of ``event_type_frequencies.csv``."""
    if dataset not in DATASETS:
        raise CepoptError(f"--dataset: must be one of {', '.join(DATASETS)}, got {dataset!r}")
    path = Path(path)
    rows = csv.DictReader(read_text(path).splitlines())
    columns = ("dataset", "event_type", "frequency")
    try:
        missing = set(columns) - set(rows.fieldnames or ())
        if missing:
            raise CepoptError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
        out: dict[str, float] = {}
        for row in rows:
            line = rows.line_num
            if any(row[c] is None for c in columns):  # DictReader fills a short row with None
                raise CepoptError(f"{path}:{line}: expected {len(rows.fieldnames)} fields, got fewer")
            if row["dataset"].strip() != dataset:
                continue
            try:
                value = float(row["frequency"])
            except ValueError:
                raise CepoptError(f"{path}:{line}: frequency {row['frequency']!r} is not a number") from None
            if not (math.isfinite(value) and value >= 0):
                raise CepoptError(f"{path}:{line}: frequency must be a finite number >= 0")
            out[row["event_type"].strip()] = int(value) if value.is_integer() else value
    except csv.Error as exc:
        raise CepoptError(f"{path}:{rows.reader.line_num}: not valid CSV ({exc})") from None
    if not out:
        raise CepoptError(f"{path}: no frequencies for data set {dataset!r}")
    return out


def read_workload(path: str | Path):
    """The Workload of one published workload file."""
    from cepopt.syntax import parse_queries

    path = Path(path)
    text = read_text(path)
    try:
        with collector_paused():  # cepopt/allocation.py: tokens and pattern nodes hold no cycles
            return parse_queries(text)
    except CepoptError as exc:
        raise CepoptError(f"{path.name}: {exc}") from None


def import_workload(workload_path: str | Path, frequencies_path: str | Path, dataset: str, *,
                    max_missing: int = 3):
    """One published workload as a ``gloria`` Instance (rates = the data set's frequencies).

    The published table lacks a few types the workloads use (stock: ``AAL``); up to ``max_missing``
    such types get the data set's smallest frequency, which the instance description records.
    """
    from cepopt.instance import Instance

    workload_path = Path(workload_path)
    freq = read_frequencies(frequencies_path, dataset)
    workload = read_workload(workload_path)
    types = workload.event_types()
    unknown = sorted(t for t in types if t not in freq)
    if len(unknown) > max_missing:
        raise CepoptError(f"{workload_path.name}: event type(s) {', '.join(unknown[:5])} have no frequency "
                          f"for data set {dataset!r} in {Path(frequencies_path).name}")
    low = min(freq.values())
    rates = {t: freq.get(t, low) for t in types}
    rel = "/".join(workload_path.parts[-4:])
    name = f"gloria-{dataset}-" + "-".join(p.removesuffix(".txt") for p in workload_path.parts[-3:])
    note = (f"; no published frequency for {', '.join(unknown)}: set to the data set's minimum {low}"
            if unknown else "")
    return Instance(problem="gloria", workload=workload, statistics=Statistics(rates=rates), name=name,
                    description=f"GLORIA authors' published workload {rel} ({len(workload)} queries, "
                                f"{dataset} frequencies{note})")
