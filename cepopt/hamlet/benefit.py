"""The Hamlet benefit model (hamlet.md §4.1, Definition 4.2, Eq. 7).

    Shared(G_E, Q_E)      = b*n*s_p + s_c*k*g*t
    NonShared(G_E^i, Q_E) = k*b*n
    Benefit               = NonShared - Shared          share iff Benefit > 0

>>> benefit(4, 7, 1, 1, 2, 4, 2), benefit(4, 11, 2, 1, 2, 8, 2), benefit(4, 15, 1, 1, 2, 4, 2)
(12, -32, 44)
"""

from __future__ import annotations

__all__ = ["benefit", "nonshared_cost", "shared_cost"]


def shared_cost(b: int, n: int, s_p: int, s_c: int, k: int, g: int, t: float) -> float:
    """Eq. 7, shared part: propagate s_p snapshots over b events with n predecessors each, and
    create s_c snapshots whose per-query values read g events in t graphlets for each of k queries."""
    return b * n * s_p + s_c * k * g * t


def nonshared_cost(k: int, b: int, n: int) -> float:
    """Eq. 7, non-shared part: each of k queries propagates b events over n predecessors."""
    return k * b * n


def benefit(b: int, n: int, s_p: int, s_c: int, k: int, g: int, t: float) -> float:
    """Eq. 7: NonShared - Shared for one burst; argument order as in hamlet.md §7 T7."""
    return nonshared_cost(k, b, n) - shared_cost(b, n, s_p, s_c, k, g, t)
