"""The one comparison of the project: ``left op right`` for filters, conditions and edge predicates.

Semantics (SQL's three-valued logic, collapsed to "holds or not"): a comparison with a **missing**
value on either side is not true, for every operator, ``!=`` included. Missing is ``None`` (JSON
``null``, a Spark ``null``), a float NaN (pandas' empty CSV cell, of any float type) and pandas'
``NA`` / ``NaT``. Present values compare as Python compares them; an ordering between values that
have none (text against a number) is not true, while ``=`` / ``!=`` between them give False / True.

The specs are silent on missing values; SQL's rule is what Spark does with ``null`` (a comparison
with null is null, which a filter or join condition drops), so the brute-force oracles, the pandas
kernels and the Spark plans agree by construction. One point of Spark needs help: it compares a NaN
double as a number (NaN = NaN, NaN > every number) and groups it apart from null. Streams therefore
turn NaN into null where they enter Spark (``cepopt.executor.streams.nan_to_null``: the stream
readers, ``to_spark``, ``cepopt.executor.api.execute`` given a Spark DataFrame, and the join evaluator's
``prepare_events``); after that a Spark comparison built from :data:`OPS` has this module's meaning.

* :data:`OPS`: the operator table (``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``: the model's
  ``COMPARISON_OPS``), plain ``operator`` functions, so it applies to Python values, NumPy arrays,
  pandas Series and Spark Columns alike; it does *not* handle missing values by itself;
* :func:`is_missing`, :func:`compare`: one value, one comparison;
* :func:`compare_arrays`: the same comparison element by element on NumPy arrays, pandas Series or
  scalars (vectorised; an element-wise Python loop only where NumPy cannot compare the values).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

# pandas is imported where it is needed: the optimizers import this module (Hamlet's edge predicates)
# and need no pandas, which costs a third of a second to import.

__all__ = ["OPS", "compare", "compare_arrays", "is_missing"]

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def is_missing(value: Any) -> bool:
    """Whether ``value`` is a missing value: None, a NaN of any float type, pandas NA or NaT."""
    if value is None:
        return True
    if isinstance(value, int | str):
        return False
    if isinstance(value, float):  # NumPy's float64 too
        return value != value
    import pandas as pd

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # not a scalar: a value, not a missing one
        return False


def compare(op: str, left: Any, right: Any) -> bool:
    """``left op right``; False when either side is missing or the values have no order.

    >>> compare("<", 1, 2), compare("!=", None, 2), compare("!=", 2, float("nan")), compare("<", "a", 1)
    (True, False, False, False)
    """
    if is_missing(left) or is_missing(right):
        return False
    try:
        return bool(OPS[op](left, right))
    except TypeError:
        return False


def _values(x: Any) -> Any:
    return x.to_numpy() if hasattr(x, "to_numpy") else x  # a pandas Series or Index


def compare_arrays(op: str, left: Any, right: Any) -> np.ndarray:
    """:func:`compare` element by element (NumPy broadcasting: either side may be a scalar), as a bool array.

    >>> compare_arrays("!=", np.array([1.0, np.nan, 3.0]), 3).tolist()
    [True, False, False]
    """
    import pandas as pd

    a, b = _values(left), _values(right)
    fn = OPS[op]
    try:
        with np.errstate(invalid="ignore"):
            ok = np.asarray(fn(a, b), dtype=bool)
    except TypeError:  # values without an order (None in an object array, text against numbers), or pd.NA
        ok = np.asarray(np.frompyfunc(lambda x, y: compare(op, x, y), 2, 1)(a, b), dtype=bool)
    return ok & ~(np.asarray(pd.isna(a)) | np.asarray(pd.isna(b)))
