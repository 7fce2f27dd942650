"""The partition-kernel protocol's exact merge and window blocks (executor/partitions.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cepopt.executor.partitions import PartitionClass, merge_partials, partial_rows, window_blocks


def test_merge_is_exact_beyond_int64_and_independent_of_order():
    big = 2 ** 200 + 7
    rows = [("q", "", 0, "COUNT(*)", "sum", big), ("q", "", 0, "COUNT(*)", "sum", big + 1),
            ("q", "", 0, "MIN(A.x)", "min", 5), ("q", "", 0, "MIN(A.x)", "min", -2.5),
            ("q", "", 0, "AVG(A.x)", "avg", 7, 2), ("q", "", 0, "AVG(A.x)", "avg", 2, 1)]
    a = merge_partials(partial_rows(rows))
    b = merge_partials(partial_rows(rows[::-1]))
    got = dict(zip(a["aggregate"], a["value"], strict=True))
    assert got == {"COUNT(*)": 2 * big + 1, "MIN(A.x)": -2.5, "AVG(A.x)": 3.0}
    assert a.equals(b)


@given(st.lists(st.floats(-1e12, 1e12, allow_nan=False), min_size=1, max_size=30))
def test_float_sums_do_not_depend_on_the_partitioning(xs):
    rows = [("q", "g", 1, "SUM(A.x)", "sum", x) for x in xs]
    forward = merge_partials(partial_rows(rows))["value"].iloc[0]
    backward = merge_partials(partial_rows(rows[::-1]))["value"].iloc[0]
    assert forward == backward


@given(st.integers(1, 20), st.integers(1, 20), st.integers(1, 8), st.lists(st.integers(0, 500), max_size=40))
def test_an_event_reaches_every_block_of_its_windows(length, slide, k, ts):
    cls = PartitionClass(("A",), ("ts", "type"), (), float(length), float(slide), max(k, -(-length // slide)))
    lo, hi = window_blocks(np.array(ts, dtype=np.int64), cls)
    kk = cls.windows_per_block
    for t, b_lo, b_hi in zip(ts, lo, hi, strict=True):
        windows = [w for w in range(0, t // slide + 1) if w * slide <= t < w * slide + length]
        assert {w // kk for w in windows} == set(range(b_lo, b_hi + 1))
        assert b_hi - b_lo <= 1
