"""The experiment framework writes rows as it goes and resumes without redoing them."""

import pytest

from cepopt.entry_points import names
from cepopt.experiments.framework import Experiment, get_experiment, run_experiment


def make(calls, fail_at=None):
    def run(point):
        if point["x"] == fail_at:
            raise KeyboardInterrupt
        calls.append(point["x"])
        return [{"y": point["x"] ** 2, "kind": "a"}, {"y": -point["x"], "kind": "b"}]

    def report(df, out):
        (out / "plot.png").write_bytes(b"png")
        return f"{len(df)} rows"

    return Experiment("sq", "squares", grid=lambda quick: [{"x": x, "tag": "t"} for x in range(2 if quick else 5)],
                      run=run, report=report, paper_claim="none")


def test_rows_are_appended_and_resumed(tmp_path):
    calls = []
    with pytest.raises(KeyboardInterrupt):
        run_experiment(make(calls, fail_at=3), out_dir=tmp_path, progress=False)
    assert calls == [0, 1, 2]
    text = (tmp_path / "sq.csv").read_text().splitlines()
    assert len(text) == 1 + 6  # header + two rows per finished point
    calls.clear()
    out = run_experiment(make(calls), out_dir=tmp_path, progress=False)
    assert calls == [3, 4] and out.ran == 2 and out.skipped == 3
    assert len(out.frame) == 10 and sorted(out.frame["x"].unique()) == [0, 1, 2, 3, 4]
    assert (tmp_path / "sq.md").read_text().startswith("# sq") and (tmp_path / "plot.png").exists()
    calls.clear()
    run_experiment(make(calls), out_dir=tmp_path, progress=False, resume=False)
    assert calls == [0, 1, 2, 3, 4]


def test_quick_grid(tmp_path):
    calls = []
    out = run_experiment(make(calls), quick=True, out_dir=tmp_path, progress=False)
    assert calls == [0, 1] and len(out.frame) == 4


def test_registered_experiments_are_known():
    for name in names("experiments"):
        exp = get_experiment(name)
        assert exp.name == name and exp.grid(True), name


# ---------------------------------------------------------------------------------------------
# Issue 21 part 4 (SIGKILL-safe experiments) and issue 19 part 6 (output folder, metadata, missing data)
# ---------------------------------------------------------------------------------------------

TOY = '''
import sys, time
from cepopt.experiments.framework import Experiment, run_experiment

def run(point):
    time.sleep(0.01)
    # many rows with long text: one point's journal line spans several pages, so a kill can cut it
    return [{"i": i, "y": point["x"] * 1000 + i, "text": "z" * 200, "flag": i % 2 == 0}
            for i in range(1 + point["x"] % 40)]

EXP = Experiment("toy", "toy", grid=lambda quick: [{"x": x, "tag": "t"} for x in range(60)], run=run)
out = run_experiment(EXP, out_dir=sys.argv[1], progress=False)
print(out.complete, out.total)
'''


def _comparable(path):
    import pandas as pd

    df = pd.read_csv(path)
    return df.drop(columns=[c for c in df.columns if c.startswith("meta_") or c == "row_wall_s"])


def test_a_run_killed_at_random_moments_resumes_to_the_uninterrupted_csv(tmp_path):
    import os
    import random
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "toy.py"
    script.write_text(TOY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    whole = subprocess.run([sys.executable, str(script), str(tmp_path / "whole")], env=env, capture_output=True,
                           text=True, timeout=600)
    assert whole.returncode == 0 and whole.stdout.split() == ["60", "60"], whole.stderr
    rng = random.Random(21)
    kills = 0
    for attempt in range(40):  # kill at random moments until a run gets to the end
        proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "killed")], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if attempt < 6:
            time.sleep(rng.uniform(0.5, 3.0) + 0.5 * attempt)  # not an assertion: only where the kill lands
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
        out, err = proc.communicate(timeout=600)
        if proc.returncode == 0:
            assert out.split() == ["60", "60"], err
            break
        assert proc.returncode == -signal.SIGKILL, err
    else:
        raise AssertionError("the run never completed")
    assert kills >= 1
    killed, uninterrupted = _comparable(tmp_path / "killed" / "toy.csv"), _comparable(tmp_path / "whole" / "toy.csv")
    assert killed.equals(uninterrupted)  # row for row
    lines = [(tmp_path / run / "toy.csv").read_text().count("\n") for run in ("killed", "whole")]
    assert lines[0] == lines[1]


def test_a_cut_journal_line_is_redone_and_the_csv_holds_complete_points_only(tmp_path):
    calls = []
    exp = make(calls)
    run_experiment(exp, out_dir=tmp_path, progress=False)
    journal = tmp_path / "sq.points.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:3]) + lines[3][: len(lines[3]) // 2])  # killed while writing point 3
    (tmp_path / "sq.csv").write_text((tmp_path / "sq.csv").read_text()[:-40])  # and the CSV cut anywhere
    calls.clear()
    out = run_experiment(make(calls), out_dir=tmp_path, progress=False)
    assert calls == [3, 4] and out.complete == out.total == 5
    assert sorted(out.frame["x"]) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


def test_rows_record_version_commit_cores_load_date_and_command(tmp_path):
    import cepopt

    out = run_experiment(make([]), out_dir=tmp_path, progress=False, command="cepopt experiment sq")
    import pandas as pd

    df = pd.read_csv(out.csv_path, keep_default_na=False)
    assert set(df["meta_version"].astype(str)) == {cepopt.__version__}
    assert df["meta_cores"].iloc[0] >= 1 and df["meta_command"].iloc[0] == "cepopt experiment sq"
    assert str(df["meta_date"].iloc[0]).endswith("Z") and "meta_load" in df and "meta_commit" in df
    assert not any(c.startswith("meta_") for c in out.frame.columns)  # the report sees the results only
    text = out.markdown_path.read_text()
    assert "**Grid points:** 5 of 5 complete" in text and "cores, load" in text and "`cepopt experiment sq`" in text


def test_results_go_to_cepopt_results_in_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = run_experiment(make([]), quick=True, progress=False)
    assert out.csv_path == tmp_path / "cepopt-results" / "sq-quick" / "sq.csv"


def test_an_unwritable_output_folder_is_found_before_any_point_runs(tmp_path):
    from cepopt.errors import CepoptError

    (tmp_path / "file").write_text("")
    calls = []
    with pytest.raises(CepoptError, match="cannot write the results there"):
        run_experiment(make(calls), out_dir=tmp_path / "file" / "sub", progress=False)
    assert calls == []


def test_missing_input_data_is_reported_on_stderr_and_in_the_report(tmp_path, capsys):
    from cepopt.experiments.framework import Grid

    exp = make([])
    exp.grid = lambda quick: [{"x": 0, "tag": "t"}] + Grid(skipped=128, missing="the published workloads are absent")
    out = run_experiment(exp, out_dir=tmp_path, progress=False)
    err = capsys.readouterr().err
    assert "input data missing: 128 instance(s) skipped (the published workloads are absent)" in err
    assert err.count("\n") == 1
    assert out.skipped_inputs == 128
    assert "**Input data missing:** 128 instance(s) skipped" in out.markdown_path.read_text()


def test_gloria_optimizers_says_how_many_published_workloads_it_skips(monkeypatch, tmp_path):
    from cepopt.experiments import gloria_optimizers

    monkeypatch.setattr(gloria_optimizers, "GLORIA_DATA", tmp_path / "absent")
    grid = gloria_optimizers.grid(False)
    assert grid.skipped == 128 and "published Gloria workloads" in grid.missing
    assert grid and {point["source"] for point in grid} == {"bundled", "generated"}


def test_cpu_seconds_counts_finished_child_processes():
    """A solver run in a child process (formulations/mathopt_child.py) is counted in the experiments' CPU
    time: the child's own CPU shows in the difference of two readings."""
    import subprocess
    import sys

    from cepopt.experiments.framework import cpu_seconds

    before = cpu_seconds()
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\n"
    subprocess.run([sys.executable, "-c", burn], check=True)
    assert cpu_seconds() - before >= 0.3
