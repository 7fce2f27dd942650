"""Readers for the GLORIA authors' published workloads (skipped when ../shared is absent)."""

from __future__ import annotations

import pytest

from cepopt.errors import CepoptError
from cepopt.instances.gloria_reader import import_workload, read_frequencies, read_workload
from cepopt.registry import solve


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
    assert exact.stats["candidate_status"] == "optimal"
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


HEADER = "dataset,class,event_type,frequency\n"


@pytest.mark.parametrize("body,match", [
    ("stock\n", r"f\.csv:2: expected 4 fields"),
    ("stock,x,A,1\n\nstock,x,B,nan\n", r"f\.csv:4: frequency must be a finite number >= 0"),
    ("stock,x,A," + "9" * 200_000 + "\n", r"f\.csv:2: not valid CSV"),
], ids=["short-row", "nan-after-blank-line", "huge-field"])
def test_bad_frequency_rows(tmp_path, body, match):
    path = tmp_path / "f.csv"
    path.write_text(HEADER + body)
    with pytest.raises(CepoptError, match=match):
        read_frequencies(path, "stock")


@pytest.mark.parametrize("name,read", [("f.csv", lambda p: read_frequencies(p, "stock")), ("w.txt", read_workload)],
                         ids=["frequencies", "workload"])
def test_non_utf8_file_names_line(tmp_path, name, read):
    path = tmp_path / name
    path.write_bytes(HEADER.encode() + b"stock,x,A\xff,1\n")
    with pytest.raises(CepoptError, match=rf"{name}:2: not UTF-8 text \(byte 0xff\)"):
        read(path)
