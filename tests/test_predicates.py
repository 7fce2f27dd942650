"""The one comparison of the project (cepopt.predicates): SQL's treatment of missing values, scalar and
vectorised alike."""

from __future__ import annotations

import math
import operator

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cepopt.model import COMPARISON_OPS
from cepopt.predicates import OPS, compare, compare_arrays, is_missing

MISSING = [None, math.nan, np.float64("nan"), np.float32("nan"), pd.NA]
MISSING_IDS = ["None", "nan", "np.float64-nan", "np.float32-nan", "pd.NA"]
PYTHON = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
          ">=": operator.ge}


def test_the_table_has_every_operator_of_the_model():
    assert set(OPS) == set(COMPARISON_OPS)


@pytest.mark.parametrize("op", COMPARISON_OPS)
@pytest.mark.parametrize("missing", MISSING, ids=MISSING_IDS)
def test_a_comparison_with_a_missing_value_on_either_side_is_not_true(op, missing):
    assert is_missing(missing)
    for present in (0, 5, 2.5, "a"):
        assert compare(op, missing, present) is False
        assert compare(op, present, missing) is False
    assert compare(op, missing, missing) is False
    assert compare(op, None, math.nan) is False and compare(op, math.nan, None) is False


@pytest.mark.parametrize("op", COMPARISON_OPS)
def test_present_values_compare_as_python_does(op):
    for a, b in [(1, 2), (2, 1), (3, 3), (3, 3.0), (-0.0, 0.0), ("a", "b"), ("b", "b"), (True, 1)]:
        assert not is_missing(a) and not is_missing(b)
        assert compare(op, a, b) is PYTHON[op](a, b)
    # values of types without an order: the ordering comparisons are not true, = and != as in Python
    assert compare(op, "a", 1) is (op == "!=")
    assert compare(op, 1, "a") is (op == "!=")


values = st.one_of(st.none(), st.just(math.nan), st.integers(-2, 2), st.sampled_from([-1.5, 0.5, 2.0]))
words = st.one_of(st.none(), st.just(math.nan), st.sampled_from(["a", "b", "c"]))


def _layouts(column: list):
    """The shapes a column takes in the kernels: pandas Series as read, NumPy object and float arrays."""
    yield pd.Series(column)
    yield np.array(column, dtype=object)
    if all(v is None or isinstance(v, int | float) for v in column):
        yield np.array([math.nan if v is None else v for v in column], dtype=float)
        yield pd.Series(column, dtype="Float64")


@given(st.sampled_from(COMPARISON_OPS), st.one_of(st.lists(values, max_size=8), st.lists(words, max_size=8)),
       st.one_of(values, words), st.data())
def test_vectorised_compare_is_the_scalar_compare(op, column, scalar, data):
    """Column against a constant (a filter) and column against column (a condition), every layout."""
    other = data.draw(st.lists(st.one_of(values, words), min_size=len(column), max_size=len(column)))
    for col in _layouts(column):
        want = [compare(op, v, scalar) for v in column]
        assert compare_arrays(op, col, scalar).tolist() == want
        assert compare_arrays(op, scalar, col).tolist() == [compare(op, scalar, v) for v in column]
        for oth in _layouts(other):
            got = compare_arrays(op, col, oth)
            assert got.dtype == bool
            assert got.tolist() == [compare(op, a, b) for a, b in zip(column, other, strict=True)]
