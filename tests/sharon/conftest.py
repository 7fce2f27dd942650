"""Fixtures of the Sharon tests: the bundled running example (Table 1 / Fig. 4)."""

from __future__ import annotations

import pytest

from cepopt.instance import load
from cepopt.sharon.problem import build


@pytest.fixture(scope="module")
def fig4():
    return load("sharon-fig4")


@pytest.fixture(scope="module")
def expected(fig4):
    return fig4.expected


@pytest.fixture(scope="module")
def fig4_problem(fig4):
    return build(fig4)


@pytest.fixture(scope="module")
def labels(fig4_problem, expected):
    """Vertex index of the original graph -> paper label p1..p7."""
    by_key = {(tuple(c["pattern"]), frozenset(c["queries"])): name for name, c in expected["candidates"].items()}
    return {i: by_key[(v.pattern, v.queries)] for i, v in enumerate(fig4_problem.original.vertices)}
