"""The instance library: its status rules, the shipped solution file, the listing, and verify catching a
recorded optimum that the exact methods do not prove."""

import json
import math

import pandas as pd

from cepopt.benchmarking import library, library_data
from cepopt.benchmarking.grid import resolve_instances
from cepopt.cli import main


def _cells(rows):
    base = {"family": "sharon", "sense": "max", "time_limit": 10.0}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_status_rules():
    frame = _cells([
        {"instance": "a", "method": "cpsat-compact", "status": "optimal", "objective": 7.0, "bound": 7.0},
        {"instance": "a", "method": "milp-compact", "status": "optimal", "objective": 7.0, "bound": 7.0},
        {"instance": "b", "method": "cpsat-compact", "status": "optimal", "objective": 7.0, "bound": 7.0},
        {"instance": "b", "method": "milp-compact", "status": "feasible", "objective": 6.0, "bound": 9.0},
        {"instance": "c", "method": "cpsat-compact", "status": "feasible", "objective": 5.0, "bound": 9.0},
        {"instance": "c", "method": "milp-compact", "status": "feasible", "objective": 6.0, "bound": 8.0},
        {"instance": "d", "method": "cpsat-compact", "status": "optimal", "objective": 7.0, "bound": 7.0},
        {"instance": "d", "method": "milp-compact", "status": "optimal", "objective": 8.0, "bound": 8.0},
    ])
    got = {e["instance"]: e for e in library._summarise(frame, "easy")}
    assert got["a"]["status"] == "optimal" and got["a"]["verified_by"] == ["cpsat-compact", "milp-compact"]
    assert got["b"]["status"] == "proven-once" and got["b"]["best_objective"] == 7.0
    # open: the best objective (max) and the tightest upper bound of the two
    assert (got["c"]["status"], got["c"]["best_objective"], got["c"]["best_bound"]) == ("open", 6.0, 8.0)
    assert got["d"]["status"] == "disagree"


def test_the_shipped_library():
    rows = library.entries()
    by_family = pd.DataFrame(rows).groupby("family").size()
    assert set(by_family.index) == set(library.TIERS) and (by_family >= 30).all()
    for e in rows:
        assert e["tier"] in ("easy", "medium", "hard") and e["status"] in ("optimal", "proven-once", "open")
        if e["status"] == "optimal":
            assert len(e["verified_by"]) == min(2, len(library.EXACT[e["family"]]))
            assert math.isclose(e["best_objective"], e["best_bound"], rel_tol=1e-6, abs_tol=1e-6)
        if e["best_objective"] is not None and e["best_bound"] is not None:  # the bound is on the right side
            gap = e["best_bound"] - e["best_objective"]
            gap = gap if e["sense"] == "max" else -gap  # >= 0: no plan beats a proven bound
            assert gap >= -1e-6 * max(1.0, abs(e["best_objective"]))
    assert any(e["status"] != "optimal" for e in rows if e["tier"] == "hard")  # the frontier is not empty
    assert {r.id for r in resolve_instances(["library:easy"])} == {e["instance"] for e in library.entries("easy")}


def test_listing(capsys):
    assert main(["instances", "--library", "easy", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed == library.entries("easy")
    assert main(["instances", "--library", "nope"]) == 2


def test_verify_reports_a_wrong_recorded_optimum(monkeypatch, tmp_path):
    picked = [e for e in library.entries("easy") if e["status"] == "optimal" and e["family"] == "joinorder"][:2]
    wrong = dict(picked[1], best_objective=picked[1]["best_objective"] + 1.0)
    monkeypatch.setattr(library, "entries", lambda tier=None: [picked[0], wrong])
    problems = library.verify("easy", tmp_path, jobs=2)
    assert {p["instance"] for p in problems} == {wrong["instance"]}
    assert len(problems) == len(library.EXACT["joinorder"])  # both exact methods disagree with it


def test_benchmark_library_option_runs_the_tier(monkeypatch, tmp_path, capsys):
    from cepopt.benchmarking.results import read_results

    picked = [e for e in library.entries("easy") if e["family"] == "joinorder"][:1]
    monkeypatch.setattr(library_data, "entries", lambda tier=None: picked)
    assert main(["benchmark", "--library", "easy", "-m", "greedy", "-m", "dp-ld", "--out", str(tmp_path),
                 "--no-report"]) == 0
    frame = read_results(tmp_path / "results.csv")
    assert set(frame["instance"]) == {picked[0]["instance"]} and set(frame["method"]) == {"greedy", "dp-ld"}
    proved = frame.set_index("method").loc["dp-ld"]
    assert math.isclose(proved["objective"], picked[0]["best_objective"], rel_tol=1e-9)
