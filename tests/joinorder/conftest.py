"""Helpers shared by the join-order tests."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from cepopt.joinorder.problem import from_arrays


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0)


@st.composite
def cost_instances(draw, n_min: int = 2, n_max: int = 6, exact: bool = False):
    """(W, r, sel) with Fractions (exact) or floats: rates 1..45, about n/2 predicate pairs with
    selectivity in (0, 1], some filters."""
    n = draw(st.integers(n_min, n_max))
    if exact:
        w = Fraction(draw(st.integers(1, 20)))
        r = [Fraction(draw(st.integers(1, 45)), draw(st.integers(1, 4))) for _ in range(n)]
        sel = [[Fraction(1)] * n for _ in range(n)]
        sv = st.fractions(min_value=Fraction(1, 500), max_value=1, max_denominator=500)
    else:
        w = float(draw(st.sampled_from([1, 10, 1200])))
        r = [draw(st.floats(1, 45)) for _ in range(n)]
        sel = [[1.0] * n for _ in range(n)]
        sv = st.floats(0.002, 1.0)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), max_size=max(1, n), unique=True)) if pairs else []
    for i, j in chosen:
        sel[i][j] = sel[j][i] = draw(sv)
    for i in draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True)):
        sel[i][i] = draw(sv)
    return w, r, sel


def problem_of(w, r, sel, **kw):
    return from_arrays(float(w), np.array([float(x) for x in r]),
                       np.array([[float(x) for x in row] for row in sel]), **kw)


@st.composite
def seq_orders(draw, n: int):
    """A ``seq`` argument of ``from_arrays`` ([R-SEQ-EXACT]): None (no order term), "chain", or a
    random series-parallel order over a random subset of the n events, as its SEQ operators."""
    kind = draw(st.sampled_from(["chain", "sp", "none"]))
    if kind == "none" or n < 2:
        return None
    if kind == "chain":
        return "chain"
    items = draw(st.permutations(range(n)))
    items = items[:draw(st.integers(2, n))]
    blocks: list[list[list[int]]] = []

    def build(xs: list[int]) -> None:
        if len(xs) == 1:
            return
        cuts = sorted(draw(st.lists(st.integers(1, len(xs) - 1), min_size=1, max_size=len(xs) - 1,
                                    unique=True)))
        parts = [xs[a:b] for a, b in zip([0, *cuts], [*cuts, len(xs)], strict=True)]
        if draw(st.booleans()):  # SEQ of the parts, else AND
            blocks.append(parts)
        for part in parts:
            build(part)

    build(list(items))
    return blocks or None


def order_pairs_of(seq, n: int) -> set[tuple[int, int]]:
    """The (earlier, later) index pairs a ``seq`` argument orders."""
    if seq is None:
        return set()
    blocks = [[[i] for i in range(n)]] if seq == "chain" else seq
    return {(x, y) for block in blocks for a, ca in enumerate(block) for cb in block[a + 1:]
            for x in ca for y in cb}
