"""Cells in their own processes: a crash, a memory blow-up or a hang fails that cell only; the results file
resumes after a SIGKILL without losing or duplicating a cell; a changed grid runs only the missing cells."""

import csv
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cepopt import registry
from cepopt.benchmarking import benchmark
from cepopt.benchmarking.grid import parse_method, parse_seeds, resolve_instances
from cepopt.benchmarking.results import COLUMNS, ResultsFile, read_results
from cepopt.errors import CepoptError
from cepopt.instance import Instance
from cepopt.model import Query, Type, Window, Workload
from tests import toy_family


def _abort(problem, *, time_limit=None, seed=0):
    os.abort()  # a native crash: SIGABRT


def _hog(problem, *, time_limit=None, seed=0):
    import numpy as np

    np.empty(2 << 30, dtype=np.uint8)  # 2 GiB of address space (never touched): past a 512 MB cap
    return toy_family.Pick(frozenset())


def _sleepy(problem, *, time_limit=None, seed=0):
    # a solver process of its own, which the kill must take down with the cell
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    Path(os.environ["SLEEPY_PID_FILE"]).write_text(str(child.pid))
    time.sleep(60)


@pytest.fixture
def toy(monkeypatch):
    toy_family.install(monkeypatch)
    table = registry._METHODS.setdefault("toy", {})
    for name, fn in {"abort": _abort, "hog": _hog, "sleepy": _sleepy}.items():
        monkeypatch.setitem(table, name, registry.Method("toy", name, fn, name))
    return Instance("toy", Workload((Query(Type("A"), Window(1)),)), name="toy-1",
                    params={"weights": [3, 4, 5], "values": [4, 5, 6], "capacity": 7})


def _rows(path: Path) -> dict[str, dict]:
    return {r["method"]: r for r in read_results(path).to_dict("records")}


def test_a_crash_a_memory_blowup_and_a_hang_fail_their_cells_only(toy, tmp_path, monkeypatch):
    monkeypatch.setenv("SLEEPY_PID_FILE", str(tmp_path / "sleepy.pid"))
    run = benchmark([toy], ["bruteforce", "abort", "hog", "sleepy", "first:skip=1@skip1"], jobs=2,
                    memory_mb=512, kill_after=1.5, out=tmp_path)
    assert (run.total, run.ran, run.failed) == (5, 5, 3)
    rows = _rows(run.results_path)
    assert rows["bruteforce"]["status"] == "optimal" and rows["bruteforce"]["objective"] == 9.0
    assert rows["skip1"]["status"] == "feasible" and rows["skip1"]["objective"] == 5.0
    assert rows["abort"]["status"] == "crashed" and f"signal {signal.SIGABRT}" in rows["abort"]["message"]
    assert rows["hog"]["status"] == "memory"
    assert rows["sleepy"]["status"] == "killed" and rows["sleepy"]["time_s"] < 30
    solver_pid = int((tmp_path / "sleepy.pid").read_text())
    deadline = time.monotonic() + 10
    while _alive(solver_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(solver_pid), "the killed cell's own subprocess outlived it"


def _alive(pid: int) -> bool:
    """Running (a zombie, killed and not yet reaped by its orphaned parent's reaper, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def test_without_the_cap_the_hog_allocates(toy, tmp_path):
    """The cap is what fails the hog: without it the 2 GiB are granted (and never touched)."""
    run = benchmark([toy], ["hog"], jobs=1, out=tmp_path)
    assert _rows(run.results_path)["hog"]["status"] == "feasible"


def test_changed_grid_runs_only_the_missing_cells(toy, tmp_path):
    first = benchmark([toy], ["bruteforce", "first"], seeds=1, jobs=2, out=tmp_path)
    assert (first.ran, first.skipped) == (2, 0)
    second = benchmark([toy], ["bruteforce", "first", "first:skip=1@skip1"], seeds="0..1", jobs=2, out=tmp_path)
    assert (second.total, second.ran, second.skipped) == (6, 4, 2)
    frame = read_results(second.results_path)
    assert len(frame) == 6 and not frame.duplicated(["instance", "method", "seed", "repeat"]).any()
    with open(second.results_path) as fh:
        assert sum(1 for _ in fh) == 7  # header + 6: nothing written twice


def test_a_line_cut_by_a_kill_is_dropped_and_its_cell_rerun(tmp_path):
    path = tmp_path / "results.csv"
    results = ResultsFile(path)
    results.append({"instance": "a", "method": "m", "seed": 0, "repeat": 0, "status": "optimal", "objective": 1.0,
                    "message": "two\nlines, and a comma"})
    with open(path, "a") as fh:
        fh.write('b,fam,min,m,m,{},0,0,optim')  # the kill came mid-write
    again = ResultsFile(path)
    assert again.keys == {("a", "m", 0, 0)}
    again.append({"instance": "b", "method": "m", "seed": 0, "repeat": 0, "status": "feasible"})
    rows = list(csv.reader(path.open()))
    assert rows[0] == list(COLUMNS) and len(rows) == 3 and all(len(r) == len(COLUMNS) for r in rows)
    assert rows[1][COLUMNS.index("message")] == "two lines, and a comma"
    assert rows[2][:1] == ["b"] and rows[2][COLUMNS.index("status")] == "feasible"


def test_sigkill_then_resume_loses_and_duplicates_no_cell(tmp_path):
    out = tmp_path / "run"
    cli = Path(sys.executable).with_name("cepopt")
    args = [str(cli), "benchmark", "gen:joinorder:size=5,seed=0..9", "hamlet-example", "-m", "greedy", "-m",
            "efreq", "-m", "dp-b", "-m", "dynamic", "--jobs", "1", "--out", str(out), "--no-report"]
    total = 10 * 3 + 1
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    results = out / "results.csv"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and results.read_bytes().count(b"\n") > 6:
            break
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)  # the run and the cell it was running
    proc.wait()
    done_before = results.read_bytes().count(b"\n") - 1
    assert 5 <= done_before < total, "the kill must land mid-run"
    resumed = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"{total} of {total} cells" in resumed.stdout
    raw = list(csv.DictReader(results.open()))
    keys = [(r["instance"], r["method"], r["seed"], r["repeat"]) for r in raw]
    assert len(keys) == total == len(set(keys))
    # every row is the method's own answer on its instance (independent solves in this process)
    refs = {ref.id: ref.instance for ref in resolve_instances(["gen:joinorder:size=5,seed=0..9", "hamlet-example"])}
    for r in raw:
        assert r["status"] in ("optimal", "feasible"), r
        sol = registry.solve(refs[r["instance"]], r["method"], seed=int(r["seed"]))
        assert math.isclose(float(r["objective"]), sol.objective, rel_tol=1e-12), r


def test_specs_are_checked_before_any_cell_runs(tmp_path):
    assert parse_method("milp:backend=highs,threads=2@h2").params == {"backend": "highs", "threads": 2}
    assert parse_seeds("4..6") == [4, 5, 6]
    with pytest.raises(CepoptError, match="no benchmarked family"):
        benchmark(["sharon-example3"], ["dp-ld"], out=tmp_path)
    with pytest.raises(CepoptError, match="labelled 'greedy'"):
        benchmark(["sharon-example3"], ["greedy", "greedy"], out=tmp_path)
    with pytest.raises(CepoptError, match="the glob matches no file"):
        benchmark([str(tmp_path / "*.json")], out=tmp_path)
    with pytest.raises(CepoptError, match="--jobs"):
        benchmark(["sharon-example3"], jobs=0, out=tmp_path)
    with pytest.raises(CepoptError, match="seeds"):
        benchmark(["sharon-example3"], seeds="x", out=tmp_path)
    assert not (tmp_path / "results.csv").exists()


def test_generator_ranges_expand_to_every_combination():
    refs = resolve_instances(["gen:joinorder:size=3|4,kind=seq|and,seed=0..2"])
    assert len(refs) == 12 and len({r.id for r in refs}) == 12
    assert refs[0].id == "gen:joinorder:kind=seq,seed=0,size=3"
    assert {r.instance.problem for r in refs} == {"joinorder"}
