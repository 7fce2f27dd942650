"""Block decomposition (formulations/blocks.py) and the fast GWMIN ratio are exact:

* on random vertex-weighted graphs made of several components (isolated vertices, pairs, larger
  parts), the MWIS model solved block by block equals the undecomposed solve and brute force, with
  CP-SAT and with the MILP backends; the blocks are the graph's components;
* extended cliques are cliques of the graph and keep the optimum;
* GWMIN with float ratios picks exactly what it picks with exact Fractions.
"""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.formulations.blocks import ENUMERATE, blocks
from cepopt.formulations.model import Model
from cepopt.formulations.sharon import extended_cliques, solve_sharon_model
from cepopt.sharon import gwmin as gw
from cepopt.sharon.graph import SharonGraph, Vertex


@st.composite
def graphs(draw):
    """Disjoint union of 1-5 random parts of 1-6 vertices; integer weights 1-20."""
    n, edges = 0, []
    for _ in range(draw(st.integers(1, 5))):
        k = draw(st.integers(1, 6))
        pairs = list(combinations(range(n, n + k), 2))
        edges += [e for e in pairs if draw(st.booleans())]
        n += k
    weights = [draw(st.integers(1, 20)) for _ in range(n)]
    return n, edges, weights


def _model(n, edges, weights, cliques=None) -> Model:
    model = Model("mwis", "max")
    model.add_vars([f"x{i}" for i in range(n)], obj=list(weights))
    for c in cliques if cliques is not None else edges:
        model.add_row(list(c), [1] * len(c), None, 1)
    return model


def _brute(n, edges, weights) -> int:
    best = 0
    for mask in range(1 << n):
        if all(not (mask >> i & 1 and mask >> j & 1) for i, j in edges):
            best = max(best, sum(w for i, w in enumerate(weights) if mask >> i & 1))
    return best


def _components(n, edges) -> list[set[int]]:
    adj = {i: set() for i in range(n)}
    for i, j in edges:
        adj[i].add(j)
        adj[j].add(i)
    seen, out = set(), []
    for s in range(n):
        if s in seen:
            continue
        comp, stack = set(), [s]
        while stack:
            i = stack.pop()
            if i not in comp:
                comp.add(i)
                stack.extend(adj[i] - comp)
        seen |= comp
        out.append(comp)
    return out


@settings(max_examples=20, derandomize=True, deadline=None)
@given(graphs())
def test_block_solve_equals_whole_solve_and_brute_force(g):
    n, edges, weights = g
    model = _model(n, edges, weights)
    best = _brute(n, edges, weights)
    assert sorted(map(set, blocks(n, model.rows)), key=min) == sorted(_components(n, edges), key=min)
    runs = [solve_sharon_model(model, b, time_limit=10, seed=0, split=split)
            for b in ("cpsat", "highs", "scip") for split in (True, False)]
    runs.append(solve_sharon_model(model, "highs", time_limit=10, seed=0, options={"presolve": "off"}))
    for r in runs:
        assert r.status == "optimal", r.backend
        assert r.objective == best and r.bound == pytest.approx(best)
        assert all(not (r.x[i] and r.x[j]) for i, j in edges)
        assert sum(w for w, xi in zip(weights, r.x, strict=True) if xi) == best
    assert runs[0].exact and runs[0].bound == best  # CP-SAT on integer weights: an exact proof
    stats = runs[0].stats
    comps = _components(n, edges)
    assert stats["blocks"] == len(comps) and stats["largest_block"] == max(map(len, comps))
    assert stats["enumerated_variables"] == sum(len(c) for c in comps if len(c) <= ENUMERATE)


def _sharon_graph(n, edges, weights) -> SharonGraph:
    """A Sharon graph with the given conflicts: every edge is a query in which its two ends overlap."""
    queries = {i: set() for i in range(n)}
    starts = {}
    for k, (i, j) in enumerate(edges):
        q = f"q{k}"
        queries[i].add(q)
        queries[j].add(q)
        starts[q] = {(f"P{i}",): 0, (f"P{j}",): 0}
    vertices = [Vertex((f"P{i}",), frozenset(queries[i]), weights[i]) for i in range(n)]
    return SharonGraph(vertices, starts)


@settings(max_examples=20, derandomize=True, deadline=None)
@given(graphs())
def test_extended_cliques_are_cliques_and_keep_the_optimum(g):
    n, edges, weights = g
    graph = _sharon_graph(n, edges, weights)
    edge_set = {frozenset(e) for e in edges}
    cliques = extended_cliques(graph, graph.cliques())
    for c in cliques:
        assert all(frozenset(p) in edge_set for p in combinations(c, 2))
    res = solve_sharon_model(_model(n, edges, weights, cliques), "cpsat", time_limit=10, seed=0)
    assert res.status == "optimal" and res.objective == _brute(n, edges, weights)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(graphs(), st.integers(1, 4))
def test_gwmin_float_ratio_matches_fractions(g, factor):
    n, edges, weights = g
    graph = _sharon_graph(n, edges, [w * factor for w in weights])  # many exact ties
    fast = gw.gwmin(graph)
    assert gw._ratio_of(graph) is gw._float_ratio
    exact = gw._ratio_of
    try:
        gw._ratio_of = lambda graph: gw._ratio
        assert gw.gwmin(graph) == fast
    finally:
        gw._ratio_of = exact


@pytest.mark.parametrize("backend", ["highs", "scip", "cbc", "cpsat"])
def test_model_container_backends(backend):
    """The model container on every backend: <=, >= and = rows, bounds, minimise, a constant."""
    from cepopt.formulations.model import solve

    # min 3a + 2b + 4c + 1  s.t.  a + b + c >= 2,  b - c = 0,  a + c <= 1.5 ; a, b, c in {0, 1} (c continuous
    # for the MILPs)
    m = Model("rows", "min")
    a, b, c = m.var("a"), m.var("b"), m.var("c", integer=backend == "cpsat")
    m.minimize(3 * a + 2 * b + 4 * c + 1)
    m.add(a + b + c >= 2)
    m.add(b - c == 0)
    m.add_row([0, 2], [1, 1], None, 1.5)
    res = solve(m, backend, time_limit=10)
    assert res.status == "optimal" and res.objective == pytest.approx(7.0)
    assert res.value(b) == pytest.approx(1) and res.value(c) == pytest.approx(1)


@pytest.mark.parametrize("split", [True, False])
@pytest.mark.parametrize("backend", ["highs", "scip"])
def test_a_failing_solver_is_an_error_not_an_empty_plan(backend, split):
    """A solver that fails on a block (here: an option it does not know) makes the whole model an
    error with the solver's message; before, the failed block counted as an all-zero timeout and
    the model came back "feasible" with objective 0."""
    model = _model(5, [(0, 1), (1, 2), (2, 3), (3, 4)], [3, 4, 5, 6, 7])
    res = solve_sharon_model(model, backend, time_limit=10, seed=0, split=split, options={"no_such/option": 1})
    assert (res.x, res.status, res.objective, res.bound) == (None, "error", None, None)
    assert "no_such/option" in res.message
