"""Readers for the GLORIA authors' published workloads (skipped when ../shared is absent)."""

from __future__ import annotations

import pytest

from cepopt.errors import CepoptError
from cepopt.instances.gloria_reader import import_workload, read_frequencies
from cepopt.solve import solve


def paths(shared_dir, rel):
    base = shared_dir / "anchors-data" / "gloria"
    return base / "workloads" / rel, base / "event_type_frequencies.csv"


def test_frequencies(shared_dir):
    _, freq = paths(shared_dir, "")
    bus = read_frequencies(freq, "bus")
    assert bus["QOS"] == 959 and len(bus) == 199
    with pytest.raises(CepoptError, match="--dataset"):
        read_frequencies(freq, "plane")


@pytest.mark.parametrize("dataset,rel,n", [
    ("bus", "bus/MixWorkload/workload_12.txt", 12),
    ("taxi", "taxi/KleeneWorkload/kleeneLength/workload_2.txt", 100),
    ("stock", "stock/MixWorkload/workload_12.txt", 12),
])
def test_import_and_solve(shared_dir, dataset, rel, n):
    wl, freq = paths(shared_dir, rel)
    inst = import_workload(wl, freq, dataset)
    assert inst.problem == "gloria" and len(inst.workload) == n
    rates = read_frequencies(freq, dataset)
    for t in inst.workload.event_types():
        assert inst.statistics.rate(t) == rates.get(t, min(rates.values()))
    published = solve(inst, "gloria")
    exact = solve(inst, "cpsat", time_limit=30, params={"candidates": "safe"})
    assert exact.status == "optimal"
    assert exact.objective <= published.objective


def test_missing_frequency_noted(shared_dir):
    wl, freq = paths(shared_dir, "stock/MixWorkload/workload_120.txt")
    inst = import_workload(wl, freq, "stock")
    assert "AAL" in inst.description
    with pytest.raises(CepoptError, match="AAL"):
        import_workload(wl, freq, "stock", max_missing=0)


def test_import_round_trip(shared_dir, tmp_path):
    from cepopt.instance import load, save

    wl, freq = paths(shared_dir, "bus/SEQWorkload/workload_20.txt")
    inst = import_workload(wl, freq, "bus")
    back = load(save(inst, tmp_path / "x.json"))
    assert back.workload == inst.workload
    assert solve(back, "gloria").objective == solve(inst, "gloria").objective
