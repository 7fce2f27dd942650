"""TRIVIAL: evaluate the events in the pattern's declared order (Kolchinsky & Schuster §7.1, §4.0).

The plain SASE/Cayuga NFA is the order-based plan O = the pattern order (§2.2).

>>> trivial(4)
[0, 1, 2, 3]
"""

from __future__ import annotations

__all__ = ["trivial"]


def trivial(n: int) -> list[int]:
    """The pattern order of ``n`` positive events (SEQ temporal order; AND declaration order)."""
    return list(range(n))
