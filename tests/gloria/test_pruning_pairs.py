"""Node pruning compares two nodes of one shape block by block, pairing the blocks by position
(pruning._dominates, pruning._delta). The pairing must be the one by queries that the rule states:
for every shared block of the dropped node, the pruning node's block of the same queries."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.gloria.block import Block
from cepopt.gloria.canonical import sort_blocks
from cepopt.gloria.problem import build
from cepopt.gloria.pruning import _dominates, _shape
from cepopt.instances import load

TYPES = ("A", "B", "C", "D")
QUERIES = tuple(f"q{i}" for i in range(7))


@st.composite
def same_shape_nodes(draw):
    """Two options partitioning the same queries into the same blocks, each shared block with its own
    snapshot type in either, listed in canonical order; and frequencies of the types."""
    queries = draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=7, unique=True))
    labels = draw(st.lists(st.integers(0, 3), min_size=len(queries), max_size=len(queries)))
    groups: dict[int, list[str]] = {}
    for q, label in zip(queries, labels, strict=True):
        groups.setdefault(label, []).append(q)
    nodes = []
    for _ in range(2):
        blocks = [Block(g, draw(st.sampled_from(TYPES)) if len(g) >= 2 else None) for g in groups.values()]
        nodes.append(sort_blocks(blocks))
    freq = {x: draw(st.integers(1, 5)) for x in TYPES}
    return nodes[0], nodes[1], freq


def _dominates_by_queries(freq, keep, drop) -> bool:
    """The rule as stated: no shared block of ``drop`` has a snapshot type less frequent than that of
    the block of ``keep`` with the same queries; and the nodes differ."""
    x_keep = {block.queries: block.snapshot for block in keep}
    for block in drop:
        if block.snapshot is not None and freq[x_keep[block.queries]] > freq[block.snapshot]:
            return False
    return keep != drop


@settings(max_examples=400, deadline=None)
@given(same_shape_nodes())
def test_positional_pairing_is_the_pairing_by_queries(nodes):
    keep, drop, freq = nodes
    assert _shape(keep) == _shape(drop)
    problem = build(load("gloria-fig7"))  # a real problem (compiled code checks the type), ...
    problem.freq = freq  # ... with these frequencies: _dominates reads nothing else of it
    assert _dominates(problem, keep, drop) == _dominates_by_queries(freq, keep, drop)
