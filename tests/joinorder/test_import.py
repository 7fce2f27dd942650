"""`cepopt import joinorder FILE` (issue 34 part 4): the mapping to W, rates and selectivities on a
hand-made file, C_out computed by hand, and the refusals."""

from __future__ import annotations

import json
import math

import pytest

from cepopt.cli import main
from cepopt.errors import CepoptError
from cepopt.instances.joinorder_reader import import_problem, instance_from_json
from cepopt.joinorder.cost import log_c_out
from cepopt.joinorder.plans import Order, Tree
from cepopt.registry import build_problem, solve

HAND = {"name": "hand-3",
        "relations": [{"name": "title", "cardinality": 1000}, {"name": "movie_info", "cardinality": 5000},
                      {"name": "kind", "cardinality": 10}],
        "joins": [{"relations": ["title", "movie_info"], "selectivity": 0.001},
                  {"relations": [0, 2], "selectivity": 0.1},
                  {"relations": ["title", "kind"], "selectivity": 0.5}]}


def test_mapping_of_a_hand_made_file(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps(HAND))
    inst = import_problem(path)
    q = inst.workload[0]
    assert q.window.length == 1.0  # W = 1
    assert inst.statistics.rate_map == {"title": 1000.0, "movie_info": 5000.0, "kind": 10.0}  # r = |R|
    # two joins on title-kind multiply: 0.1 * 0.5
    assert inst.statistics.selectivity_map == {("movie_info", "title"): 0.001, ("kind", "title"): 0.05}
    _, problem, _ = build_problem(inst)
    # |title ⋈ kind| = 1000 * 10 * 0.05 = 500; |all| = 1000 * 5000 * 10 * 0.001 * 0.05 = 2500
    plan = Tree(Tree("title", "kind"), "movie_info")
    assert math.isclose(math.exp(log_c_out(problem, plan)), 500 + 2500, rel_tol=1e-12)
    # Cost_tree = C_out + every base relation
    sol = solve(inst, "dp-b")
    assert math.isclose(math.exp(sol.objective), 3000 + 1000 + 5000 + 10, rel_tol=1e-12)
    # an order is its left-deep tree: (movie_info, title) first costs 5000 * 1000 * 0.001 = 5000
    assert math.isclose(math.exp(log_c_out(problem, Order(("movie_info", "title", "kind")))), 5000 + 2500,
                        rel_tol=1e-12)


def test_cli_import_and_solve_print_c_out(tmp_path, capsys):
    src, out = tmp_path / "q.json", tmp_path / "inst.json"
    src.write_text(json.dumps(HAND))
    assert main(["import", "joinorder", str(src), "-o", str(out)]) == 0
    assert main(["solve", str(out), "--method", "dp-ld", "--param", "cost=tree"]) == 0
    text = capsys.readouterr().out
    assert "C_out: 3000 " in text


@pytest.mark.parametrize("change,match", [
    ({"joins": [{"relations": ["title", "kind", "movie_info"], "selectivity": 0.1}]}, "hyperedge"),
    ({"joins": [{"relations": ["title", "cast"], "selectivity": 0.1}]}, "unknown relation 'cast'"),
    ({"joins": [{"relations": ["title", "kind"], "selectivity": 1.5}]}, r"joins\[0\].selectivity"),
    ({"relations": [{"name": "a", "cardinality": 0}]}, r"relations\[0\].cardinality"),
    ({"relations": [{"name": "a", "cardinality": 3}, {"name": "a", "cardinality": 4}]}, "twice"),
    ({"relations": []}, "relations"),
])
def test_refusals_name_the_place(change, match):
    with pytest.raises(CepoptError, match=match):
        instance_from_json({**HAND, **change})
