"""EFREQ: process events by ascending arrival frequency (Kolchinsky & Schuster §7.1, after PB-CED [6]
and the Lazy NFA [29]).

[R-EFREQ] Sorted by the raw rate ``r_i`` (a Kleene event by its rewritten rate ``r_i'``), stable, so
ties keep the pattern order. Optimal for Cost_ord when there are no predicates and no filters.

>>> import numpy as np
>>> efreq(np.log([10.0, 20.0, 5.0]))
[2, 0, 1]
"""

from __future__ import annotations

import numpy as np

__all__ = ["efreq"]


def efreq(log_rates: np.ndarray) -> list[int]:
    """Indices by ascending rate (``log_rates`` = ln(W r_i), a monotone image of r_i)."""
    return [int(i) for i in np.argsort(np.asarray(log_rates), kind="stable")]
