"""Under --json, standard output is exactly one JSON document, for every command and every registered
method of every family, on instances where each solver backend runs (issue 19 part 2). The solvers'
own words (HiGHS through MathOpt prints ``HighsMipSolverData::transformNewIntegerFeasibleSolution
tmpSolver.run();`` at the C level on the small-window join-order instance below; CBC, SCIP, CP-SAT with
``log=true``) go to stderr. ``capfd`` reads file descriptors 1 and 2, so C-level output is seen."""

from __future__ import annotations

import json

import pytest

from cepopt.cli import main
from cepopt.registry import families, methods

#: per family: the instance and, per method, the extra runs (backends) beside its default
BACKENDS = {"milp": ["highs", "scip", "cbc"], "milp-compact": ["highs", "scip", "cbc"],
            "milp-order": ["highs", "scip", "cbc"], "milp-tree": ["highs", "scip", "cbc"]}


@pytest.fixture(scope="module")
def instances(tmp_path_factory):
    out = tmp_path_factory.mktemp("json")
    jo = out / "jo.json"
    assert main(["generate", "joinorder", "--size", "20", "--seed", "5", "--preset", "small-window",
                 "-o", str(jo)]) == 0
    sh = out / "sh.json"
    assert main(["generate", "sharon", "--queries", "30", "--length", "6", "--seed", "1", "-o", str(sh)]) == 0
    return {"sharon": str(sh), "gloria": "gloria-fig7", "hamlet": "hamlet-example", "joinorder": str(jo)}


def _runs():
    for fam in families():
        for name in methods(fam):
            for backend in BACKENDS.get(name, [None]):
                yield fam, name, backend


def _one_document(capfd, argv: list[str]) -> object:
    capfd.readouterr()
    code = main(argv)
    out, err = capfd.readouterr()
    try:
        doc = json.loads(out)
    except json.JSONDecodeError as exc:  # pragma: no cover - the failure message shows the pollution
        raise AssertionError(f"{argv}: stdout is not one JSON document ({exc}): {out[:300]!r}") from None
    return code, doc, err


@pytest.mark.parametrize("fam,name,backend", list(_runs()), ids=lambda v: str(v))
def test_solve_json_is_one_document(capfd, instances, fam, name, backend):
    argv = ["solve", instances[fam], "-m", name, "--time-limit", "5", "--json"]
    if backend:
        argv += ["--param", f"backend={backend}"]
    code, doc, _ = _one_document(capfd, argv)
    assert code == 0 and doc["method"] == name and doc["status"] in ("optimal", "feasible", "timeout", "error")


def test_solver_log_goes_to_stderr(capfd):
    # sparse_dp=false: the sparse DP would prove this instance before SCIP runs
    code, doc, err = _one_document(capfd, ["solve", "joinorder-e6", "-m", "milp-order", "--param",
                                           "log=true", "--param", "backend=scip", "--param", "sparse_dp=false",
                                           "--json"])
    assert code == 0 and doc["status"] in ("optimal", "feasible")
    assert "SCIP" in err or "scip" in err.lower()


@pytest.mark.parametrize("argv", [
    ["compare", "{sharon}", "--time-limit", "5", "--json"],
    ["compare", "{joinorder}", "--methods", "dp-ld,milp-order,cpsat-order", "--time-limit", "5", "--json"],
    ["methods", "--json"],
    ["instances", "--json"],
    ["generate", "sharon", "--queries", "5", "-o", "{tmp}/g.json", "--json"],
], ids=["compare-sharon", "compare-joinorder", "methods", "instances", "generate"])
def test_other_commands(capfd, instances, tmp_path, argv):
    argv = [a.format(tmp=tmp_path, **instances) for a in argv]
    code, doc, _ = _one_document(capfd, argv)
    assert code == 0 and doc


def test_import_json(capfd, tmp_path):
    (tmp_path / "freq.csv").write_text("dataset,class,event_type,frequency\nstock,a,A,5\nstock,a,B,7\n")
    (tmp_path / "workload.txt").write_text("q0\nPATTERN SEQ(A, B) WITHIN 10 min\n")
    code, doc, _ = _one_document(capfd, ["import", "gloria", str(tmp_path / "workload.txt"), "--frequencies",
                                         str(tmp_path / "freq.csv"), "--dataset", "stock", "-o",
                                         str(tmp_path / "i.json"), "--json"])
    assert code == 0 and doc["problem"] == "gloria" and doc["queries"] == 1


def test_methods_json_lists_options():
    from cepopt.cli import _methods_json

    sharon = next(f for f in _methods_json() if f["family"] == "sharon")
    cpsat = next(m for m in sharon["methods"] if m["name"] == "cpsat")
    assert cpsat["exact"] and cpsat["options"]["workers"] == 2 and sharon["sense"] == "max"
