"""The row-based edge tables (graph.EdgeTable) against the pair dictionary they stand for.

The graph build stores each edge table as one row per node of the first pool, rows shared among nodes
alike for the edge; Eq. 22, the tree DP and the node pruning read the rows, the solvers look pairs up.
Both views must be the same mapping, on random workloads and on every mode's graph."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepopt.gloria.graph import EdgeTable
from tests.gloria.test_fork_accounting import seq_forks
from tests.gloria.test_node_generation import graph_of_case
from tests.gloria.test_properties import kleene_exits, workloads

rows = st.lists(st.dictionaries(st.integers(0, 6), st.integers(0, 50), max_size=7), max_size=6).map(
    lambda rs: [sorted(r.items()) for r in rs])


def _pairs(table_rows) -> dict:
    return {(i, j): w for i, row in enumerate(table_rows) for j, w in row}


@given(rows)
def test_a_table_is_the_mapping_of_its_rows(table_rows):
    table, pairs = EdgeTable(table_rows), _pairs(table_rows)
    assert list(table.items()) == list(pairs.items()) and list(table) == list(pairs)
    assert len(table) == len(pairs) and table == pairs and dict(table) == pairs
    for i in range(len(table_rows) + 1):
        for j in range(8):
            assert ((i, j) in table) == ((i, j) in pairs)
            assert table.get((i, j)) == pairs.get((i, j))


@given(rows, st.sets(st.integers(0, 6)))
def test_keeping_columns_renumbers_them_in_order(table_rows, kept):
    index = {j: k for k, j in enumerate(sorted(kept))}
    expected = {(i, index[j]): w for (i, j), w in _pairs(table_rows).items() if j in index}
    assert dict(EdgeTable(table_rows).keep_columns(index).items()) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(workloads, kleene_exits, seq_forks), st.sampled_from(["noprune", "gloria", "safe"]))
def test_graph_tables_have_a_row_per_node_in_increasing_columns(case, mode):
    """Every node of a pool has a row, in increasing columns within the pool pair's nodes."""
    _, graph = graph_of_case(case, mode)
    if graph is None:
        return
    for (a, b), table in graph.allowed.items():
        assert isinstance(table, EdgeTable) and len(table.rows) == len(graph.options[a])
        for row in table.rows:
            columns = [j for j, _ in row]
            assert columns == sorted(set(columns)) and all(0 <= j < len(graph.options[b]) for j in columns)


one_node_rows = st.lists(st.one_of(st.just([]), st.integers(0, 3).map(lambda w: [(0, w)])), min_size=1, max_size=6)


@given(st.lists(st.tuples(one_node_rows, st.lists(st.integers(0, 3), min_size=6, max_size=6)),
                min_size=0, max_size=3), st.integers(0, 20))
def test_distance_of_a_one_node_pool_is_eq22(preds, inner):
    """pruning.distances of a one-node pool (its own path) against the general loop, reached by adding a
    second node that no row reaches: node 0's distance and arg-min edges do not depend on it."""
    from cepopt.gloria.pruning import distances

    tables = {a: EdgeTable(rows) for a, (rows, _) in enumerate(preds)}
    d_preds = {a: [float(d) for d in ds[:len(rows)]] for a, (rows, ds) in enumerate(preds)}
    one = distances(d_preds, tables, [float(inner)])
    general = distances(d_preds, tables, [float(inner), 0.0])
    assert one == ([general[0][0]], [general[1][0]])
