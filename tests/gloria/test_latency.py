"""The published Java optimizer latencies are matched to the workload files they measured
(experiments/gloria_latency.py): every table row names an existing file whose queries have the
parameters the row states (query count, Kleene length, Kleene layers, Kleene ratio)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cepopt.experiments.gloria_latency import (
    COLUMNS,
    TABLES,
    _rows,
    published_latencies,
    time_in_fresh_process,
    time_search,
)
from cepopt.experiments.gloria_optimizers import GLORIA_DATA
from cepopt.model import Kleene, Seq, Type

pytestmark = pytest.mark.skipif(not (GLORIA_DATA / "output_csv").is_dir(),
                                reason="the published Gloria data (../shared/anchors-data/gloria) is absent")

#: the two matches whose file holds more queries than the table's QueryNum (module docstring)
AMBIGUOUS = {"bus_varyQueryNum.csv": 2, "bus_mixWorkload_varyKRatio.csv": 2}


def _workload(rel: str):
    from cepopt.instances.gloria_reader import read_workload

    return read_workload(GLORIA_DATA / "workloads" / rel)


def _kleenes(pattern, depth: int = 0):
    """(Kleene node, nesting depth) of every Kleene sub-pattern."""
    if isinstance(pattern, Kleene):
        yield pattern, depth + 1
        yield from _kleenes(pattern.inner, depth + 1)
    elif isinstance(pattern, Seq):
        for item in pattern.items:
            yield from _kleenes(item, depth)


def _length(kleene: Kleene) -> int:
    inner = kleene.inner
    return 1 if isinstance(inner, Type) else len(inner.items)


def test_every_table_row_names_an_existing_file_and_every_median_is_the_rows_median():
    latencies = published_latencies(GLORIA_DATA)
    assert {t.csv for t in TABLES} == {p.name for p in (GLORIA_DATA / "output_csv").glob("*.csv")}
    assert len(latencies) == 108
    for rel, lat in latencies.items():
        assert (GLORIA_DATA / "workloads" / rel).is_file(), rel
        table = next(t for t in TABLES if t.csv == lat.table)
        rows = [r for r in _rows(GLORIA_DATA / "output_csv" / lat.table) if table.workload(r) == rel]
        assert len(rows) == lat.iterations >= 10
        for method, column in COLUMNS.items():
            values = sorted(float(r[column]) for r in rows)
            assert values[0] <= lat.median_ms[method] <= values[-1]
            assert sum(v < lat.median_ms[method] for v in values) <= len(values) / 2


def test_mapped_files_have_the_parameters_their_table_states():
    for table in TABLES:
        seen = set()
        for row in _rows(GLORIA_DATA / "output_csv" / table.csv):
            rel = table.workload(row)
            if rel in seen:
                continue
            seen.add(rel)
            queries = list(_workload(rel))
            factor = AMBIGUOUS.get(table.csv, 1)
            assert len(queries) == factor * int(row["QueryNum"]), rel
            kleene = [q for q in queries if any(True for _ in _kleenes(q.pattern))]
            if "K_ratio" in row:
                assert len(kleene) == round(float(row["K_ratio"]) * len(queries)), rel
            if "kleeneLength" in rel:
                assert {_length(k) for q in kleene for k, d in _kleenes(q.pattern) if d == 1} \
                    == {int(row["K_length"])}, rel
            if "KleeneLayers" in rel:
                assert {max(d for _, d in _kleenes(q.pattern)) for q in kleene} == {int(row["K_layers"])}, rel
            if "SEQWorkload" in rel:
                assert not kleene, rel


def test_files_without_a_published_latency_are_the_documented_ones():
    latencies = published_latencies(GLORIA_DATA)
    rest = sorted(p.relative_to(GLORIA_DATA / "workloads").as_posix()
                  for p in (GLORIA_DATA / "workloads").rglob("workload_*.txt")
                  if p.relative_to(GLORIA_DATA / "workloads").as_posix() not in latencies)
    assert all(r.startswith(("stock/GloriaVSHamletWorkload/", "taxi/MixWorkload/kleeneRatio/")) or r in (
        "stock/KleeneWorkload/workload_20.txt", "bus/KleeneWorkload/kleeneLength/workload_1.txt",
        "taxi/KleeneWorkload/kleeneLength/workload_1.txt") for r in rest), rest
    assert len(rest) == 128 - 108


def test_no_tables_no_latencies(tmp_path: Path):
    assert published_latencies(tmp_path) == {}


def test_time_search_times_the_build_and_the_search_once_per_repeat(monkeypatch):
    """Each repeat is one interval of each clock around the problem build and the method (a fake clock
    that ticks once per reading gives 1 per repeat)."""
    import dataclasses
    from types import SimpleNamespace

    import cepopt.experiments.gloria_latency as gl
    from cepopt import registry
    from cepopt.instances import load

    ticks = {"cpu": 0.0, "wall": 0.0}

    def tick(kind):
        def read() -> float:
            ticks[kind] += 1.0
            return ticks[kind]
        return read

    builds = []
    family = registry.family("gloria")
    monkeypatch.setattr(gl, "time", SimpleNamespace(process_time=tick("cpu"), perf_counter=tick("wall")))
    counted = dataclasses.replace(family, build=lambda inst: builds.append(1) or family.build(inst))
    monkeypatch.setattr(registry, "family", lambda name: counted)
    assert time_search(load("gloria-fig7"), "gloria", repeats=3) == (1.0, 1.0)
    assert len(builds) == 3
    # warm-up runs build and solve too, but read no clock
    assert time_search(load("gloria-fig7"), "gloria", repeats=3, warmups=2) == (1.0, 1.0)
    assert len(builds) == 3 + 5


def test_time_in_fresh_process_times_every_method_and_the_parse():
    from cepopt.instances.gloria_reader import import_workload

    path = GLORIA_DATA / "workloads" / "stock/MixWorkload/workload_12.txt"
    inst = import_workload(path, GLORIA_DATA / "event_type_frequencies.csv", "stock")
    times = time_in_fresh_process(inst, path, ("gloria", "greedy"), repeats=2, warmups=1)
    assert set(times) == {"gloria", "greedy", "parse", "compiled_modules"}
    from cepopt.registry import solve

    # the worker runs the code this process runs (compiled, or pure under CEPOPT_PURE_PYTHON=1)
    assert list(times["compiled_modules"]) == solve("gloria-fig7", "gloria").stats["compiled_modules"]
    assert all(len(times[m]) == 2 and min(times[m]) > 0 for m in ("gloria", "greedy"))  # (cpu, wall) seconds
    assert times["parse"] > 0


def test_a_failing_timing_process_raises_with_its_error():
    from cepopt.instances import load

    with pytest.raises(RuntimeError, match="no-such-method"):
        time_in_fresh_process(load("gloria-fig7"), GLORIA_DATA / "workloads" / "stock/MixWorkload/workload_12.txt",
                              ("no-such-method",), repeats=1)
