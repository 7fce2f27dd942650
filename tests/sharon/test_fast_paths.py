"""The fast paths of the Sharon models agree with their plain definitions: the hoisted gains loop with
CostModel.gain, the clique-cover and per-position gain bounds with the optima they bound."""

from __future__ import annotations

from hypothesis import given, settings

from cepopt.instance import Instance
from cepopt.sharon.problem import SharonProblem
from cepopt.solve import solve
from tests.sharon.test_properties import workloads


@settings(max_examples=25, derandomize=True, deadline=None)
@given(workloads())
def test_gains_and_bounds(data):
    w, stats, comb = data
    problem = SharonProblem.from_workload(w, stats, comb=comb, expand=True, subsets="all", max_options=None)
    for (_, p), queries in problem.candidates.items():
        placed = [(q, problem.starts[q][p]) for q in sorted(queries)]
        assert problem.cost.gains(len(p), placed) == [problem.cost.gain(q, s, len(p)) for q, s in placed]
    inst = Instance("sharon", w, stats, params={"comb": comb})
    best_all = solve(inst, "cpsat-compact", params={"subsets": "all"}).objective
    assert problem.cell_bound() >= best_all
    original = SharonProblem.from_workload(w, stats, comb=comb, expand=False)
    assert original.original.cover_bound() >= solve(inst, "cpsat", params={"expand": False}).objective
