"""The report is regenerated from the results file alone: its tables against values computed by hand."""

import json

import pandas as pd
import pytest

from cepopt.benchmarking.report import write_report
from cepopt.benchmarking.results import ResultsFile
from cepopt.cli import main


def _row(instance, method, status, objective, time_s, progress=None, message=""):
    return {"instance": instance, "family": "toy", "sense": "max", "method": method, "method_name": method,
            "seed": 0, "repeat": 0, "status": status, "objective": objective, "time_s": time_s, "time_limit": 10.0,
            "progress": progress or {"primal": [] if objective is None else [[time_s, objective]], "dual": []},
            "message": message, "meta_version": "t", "meta_commit": "", "meta_host": "h", "meta_cores": 2,
            "meta_load": 0.5, "meta_date": "d", "meta_command": "c"}


@pytest.fixture
def results_dir(tmp_path):
    results = ResultsFile(tmp_path / "results.csv")
    # i1: a proves 10 in 2 s; b finds 8 (heuristic) in 1 s, its incumbent 4 at 0.5 s
    results.append(_row("i1", "a", "optimal", 10.0, 2.0))
    results.append(_row("i1", "b", "feasible", 8.0, 1.0, {"primal": [[0.5, 4.0], [1.0, 8.0]], "dual": []}))
    # i2: both prove 5; a in 4 s, b in 1 s
    results.append(_row("i2", "a", "optimal", 5.0, 4.0))
    results.append(_row("i2", "b", "optimal", 5.0, 1.0))
    # i3: a crashes; b proves 6 in 3 s
    results.append(_row("i3", "a", "crashed", None, 0.5, message="the cell's process died (signal 6)"))
    results.append(_row("i3", "b", "optimal", 6.0, 3.0))
    return tmp_path


def test_summary_profiles_and_failures_by_hand(results_dir):
    write_report(results_dir, plots=False)
    summary = pd.read_csv(results_dir / "summary.csv").set_index("method")
    assert summary.loc["a", "solved"] == 2 and summary.loc["b", "solved"] == 2
    assert summary.loc["a", "par10_s"] == pytest.approx((2 + 4 + 100) / 3)
    assert summary.loc["b", "par10_s"] == pytest.approx((100 + 1 + 3) / 3)
    assert summary.loc["a", "sgm_time_s"] == pytest.approx((3 * 5 * 11) ** (1 / 3) - 1)
    # objective ratios (maximisation, best known 10, 5, 6): a 1, 1, - ; b 10/8, 1, 1
    assert summary.loc["a", "mean_objective_ratio"] == pytest.approx(1.0)
    assert summary.loc["b", "mean_objective_ratio"] == pytest.approx((1.25 + 1 + 1) / 3)
    # b's primal integral on i1 over [0, 10]: 1 on [0, .5), gamma(4, 10) = .6 on [.5, 1), gamma(8, 10) = .2 after
    cells = pd.read_csv(results_dir / "cells.csv").set_index(["instance", "method"])
    assert cells.loc[("i1", "b"), "primal_integral"] == pytest.approx(0.5 + 0.3 + 0.2 * 9)
    assert cells.loc[("i3", "a"), "primal_integral"] == pytest.approx(10.0)
    profiles = pd.read_csv(results_dir / "profiles.csv")
    at_one = profiles[(profiles.tau == 1.0)].set_index(["profile", "method"])["rho"]
    # time: i1 a alone solved (ratio 1), i2 b faster (a: 4), i3 b alone
    assert at_one[("time", "a")] == pytest.approx(1 / 3) and at_one[("time", "b")] == pytest.approx(2 / 3)
    assert at_one[("objective", "a")] == pytest.approx(2 / 3) and at_one[("objective", "b")] == pytest.approx(2 / 3)
    wtl = pd.read_csv(results_dir / "win_tie_loss.csv").iloc[0]
    assert (wtl["method"], wtl["baseline"], wtl["wins"], wtl["ties"], wtl["losses"]) == ("b", "a", 1, 1, 1)
    assert pd.read_parquet(results_dir / "results.parquet")["objective"].tolist()[:2] == [10.0, 8.0]
    failures = pd.read_csv(results_dir / "failures.csv")
    assert failures[["instance", "method", "status"]].values.tolist() == [["i3", "a", "crashed"]]
    text = (results_dir / "report.md").read_text()
    assert "## toy (3 problems, maximize" in text and "signal 6" in text


def test_report_command_writes_plots_and_takes_a_baseline(results_dir, capsys):
    assert main(["benchmark", "report", str(results_dir), "--baseline", "b"]) == 0
    assert "report.md" in capsys.readouterr().out
    for name in ("toy-profile-time.png", "toy-profile-objective.png", "toy-cactus.png", "toy-gap.png"):
        assert (results_dir / name).stat().st_size > 1000
    wtl = pd.read_csv(results_dir / "win_tie_loss.csv").iloc[0]
    assert (wtl["method"], wtl["wins"], wtl["ties"], wtl["losses"]) == ("a", 1, 1, 1)
    assert json.loads(pd.read_csv(results_dir / "results.csv")["progress"][1])["primal"][0] == [0.5, 4.0]


def test_report_of_a_missing_folder_is_one_line(tmp_path, capsys):
    assert main(["benchmark", "report", str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err.startswith("cepopt: error: ")


def test_experiments_profiles_come_from_the_same_code(tmp_path):
    """profile_section (what sharon-optimizers, gloria-optimizers and joinorder-scaling call) on an
    experiment's own columns: problems are the combinations of the named columns, a missing cell is unsolved."""
    from cepopt.benchmarking.report import profile_section

    frame = pd.DataFrame({"preset": ["p", "p", "p", "q"], "n": [1, 1, 2, 1], "run": ["a", "b", "a", "a"],
                          "status": ["optimal", "optimal", "optimal", "feasible"], "log_cost": [2.0, 2.0, 3.0, 4.0],
                          "time_s": [1.0, 4.0, 2.0, 1.0]})
    text = profile_section(frame, name="exp", problem=["preset", "n"], sense="min", out_dir=tmp_path,
                           time_limit=10.0, method="run", objective="log_cost")
    assert "3 problems: preset, n" in text and "exp-profile-time.png" in text
    prof = pd.read_csv(tmp_path / "exp-profiles.csv").set_index(["profile", "method", "tau"])["rho"]
    # time: p/1 a 1 s vs b 4 s; p/2 a alone; q/1 nobody solved. b is missing on p/2 and q/1
    assert prof[("time", "a", 1.0)] == pytest.approx(2 / 3) and prof[("time", "b", 4.0)] == pytest.approx(1 / 3)
    assert prof[("objective", "b", 1.0)] == pytest.approx(1 / 3)
    summary = text.split("\n")
    row_b = next(line for line in summary if line.startswith("| exp | b |"))
    assert "| 3 | 1 | 1 | 0 | 2 |" in row_b  # cells, solved, with a plan, failed, missing
    for name in ("exp-profile-time.png", "exp-profile-objective.png", "exp-cactus.png"):
        assert (tmp_path / name).stat().st_size > 1000


def test_a_family_with_two_cost_functions_is_compared_per_cost_function(tmp_path):
    """Join order scores orders and trees by different functions: their objectives are never compared."""
    results = ResultsFile(tmp_path / "results.csv")
    for inst, a, b in (("i1", 10.0, 3.0), ("i2", 20.0, 4.0)):
        results.append({**_row(inst, "order", "optimal", a, 1.0), "sense": "min", "objective_name": "ln Cost_ord"})
        results.append({**_row(inst, "tree", "optimal", b, 1.0), "sense": "min", "objective_name": "ln Cost_tree"})
    results.append({**_row("i3", "tree", "crashed", None, 1.0), "sense": "min"})  # no plan, no objective name
    results.append({**_row("i3", "order", "optimal", 5.0, 1.0), "sense": "min", "objective_name": "ln Cost_ord"})
    write_report(tmp_path, plots=True)
    summary = pd.read_csv(tmp_path / "summary.csv").set_index("family")
    assert set(summary.index) == {"toy (ln Cost_ord)", "toy (ln Cost_tree)"}
    # each is 1 against its own kind (ordered against trees, "order" would be 10/3 and 20/4 away)
    assert summary["mean_objective_ratio"].tolist() == [1.0, 1.0]
    assert summary.loc["toy (ln Cost_tree)", "cells"] == 3 and summary.loc["toy (ln Cost_tree)", "failed"] == 1
    assert (tmp_path / "toy-ln-Cost_tree-profile-time.png").exists()
