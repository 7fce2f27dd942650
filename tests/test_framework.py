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
