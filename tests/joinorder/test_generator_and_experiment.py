"""The generator (`cepopt generate joinorder`) and the quick form of `cepopt experiment joinorder-scaling`."""

import argparse
import math

import pytest

from cepopt.errors import CepoptError
from cepopt.instance import from_json, to_json
from cepopt.instances import joinorder_generator as gen
from cepopt.solve import solve


def _args(**kw):
    parser = argparse.ArgumentParser()
    gen.configure(parser)
    ns = parser.parse_args([])
    ns.seed = kw.pop("seed", 0)
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


@pytest.mark.parametrize("preset", sorted(gen.PRESETS))
@pytest.mark.parametrize("kind", gen.KINDS)
def test_generated_instances_solve_and_round_trip(preset, kind):
    inst = gen.generate(_args(size=6, seed=3, preset=preset, kind=kind, kleene=1, negation=1))
    again = from_json(to_json(inst))
    assert to_json(again) == to_json(inst)
    assert to_json(gen.generate(_args(size=6, seed=3, preset=preset, kind=kind, kleene=1, negation=1))) == \
        to_json(inst)  # seed-only randomness
    s = solve(again, "dp-ld")
    assert s.status in ("optimal", "feasible") and math.isfinite(s.objective)


def test_preset_shapes():
    paper = gen.make_instance(10, seed=1)
    assert paper.workload[0].window.length == 1200
    assert len(paper.statistics.selectivities) == 5
    assert all(0.002 <= v <= 0.88 for _, v in paper.statistics.selectivities)
    small = gen.make_instance(10, seed=1, preset="small-window")
    # W r < 5 (the paper's W = 0.1 s, rates 1-45) with a window of one time unit: rates 0.1-4.5
    assert small.workload[0].window.length == 1
    assert all(0.1 <= r <= 4.5 for _, r in small.statistics.rates)
    dense = gen.make_instance(10, seed=1, preset="dense")
    assert len(dense.statistics.selectivities) == 45 // 4
    assert all(0.5 <= v <= 0.95 for _, v in dense.statistics.selectivities)
    with pytest.raises(CepoptError):
        gen.make_instance(0)
    with pytest.raises(CepoptError):
        gen.make_instance(4, preset="nope")


def test_quick_experiment(tmp_path):
    from cepopt.experiments.framework import get_experiment, run_experiment

    exp = get_experiment("joinorder-scaling")
    out = run_experiment(exp, quick=True, out_dir=tmp_path, progress=False)
    df = out.frame
    assert set(df["method"]) >= {"dp-ld", "dp-b", "greedy", "milp-order", "milp-tree"}
    exact = df[df["method"].isin(["dp-ld", "dp-b", "milp-order", "milp-tree"])]
    assert (exact["status"] == "optimal").all()
    assert (df["cost_ratio"].dropna() >= 1 - 1e-9).all()
    assert (exact["cost_ratio"] - 1).abs().max() < 1e-6
    assert out.markdown_path is not None and out.markdown_path.exists()
    assert list(tmp_path.glob("*.png"))
    # the scale sweep's quick points: only the exact methods named run there (hard preset included)
    sweep = df[df["n"] == 8]
    assert set(sweep["method"]) == {"dp-b", "milp-tree", "milp-order", "dp-ld"}
    assert set(sweep["preset"]) == {"paper", "hard"}
    assert "| milp-order | 40 | all |" in out.markdown_path.read_text()


@pytest.mark.parametrize("out", ["file", "file/sub"])
def test_experiment_out_must_be_a_folder(tmp_path, out):
    from cepopt.experiments.framework import get_experiment, run_experiment

    (tmp_path / "file").write_text("")
    with pytest.raises(CepoptError, match=r"file.*: cannot write the results there"):
        run_experiment(get_experiment("joinorder-scaling"), quick=True, out_dir=tmp_path / out, progress=False)


@pytest.mark.parametrize("predicates", [-3, 1000, 11])
def test_predicates_out_of_range(predicates):
    with pytest.raises(CepoptError, match=r"--predicates: must be in 0\.\.10 .* got"):
        gen.make_instance(5, predicates=predicates)


@pytest.mark.parametrize("predicates", [0, 10])
def test_predicates_bounds(predicates):
    assert len(gen.make_instance(5, predicates=predicates).statistics.selectivities) == predicates


def test_each_condition_reads_its_own_attribute():
    q = gen.make_instance(8, seed=2, predicates=6).workload[0]
    attrs = [(c.left.attr, c.right.attr) for c in q.conditions]
    assert all(a == b for a, b in attrs) and len({a for a, _ in attrs}) == len(attrs) == 6


def test_windows_below_the_time_unit_are_refused():
    with pytest.raises(CepoptError, match="--window must be at least 1 time unit"):
        gen.make_instance(4, window=0.1)


def test_generator_warns_when_streams_are_beyond_executing(capsys):
    gen.generate(_args(size=6, seed=3))  # paper: W = 1200 s, rates up to 45/s
    assert "beyond executing" in capsys.readouterr().err
    gen.generate(_args(size=6, seed=3, preset="small-window"))
    assert capsys.readouterr().err == ""
