"""A block of a Gloria plan (a Q-set of one transition; cepopt/gloria/plan.py says what a plan is).

A module of its own, in plain Python: :class:`Block` subclasses ``tuple``, which mypyc cannot compile as
a native class, while the functions over blocks that node generation calls thousands of times live in a
compiled module (cepopt/gloria/canonical.py, cepopt/gloria/compiled.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from cepopt.errors import CepoptError

__all__ = ["Block"]


class Block(tuple):
    """One Q-set of a transition: ``queries`` (sorted names) and ``snapshot`` (None = unshared).

    Immutable, and stored as the tuple ``(queries, snapshot)``: blocks key the graph build's
    dictionaries and sets and are sorted there thousands of times per workload, and a tuple hashes,
    compares and orders in C. The tuple order is the canonical block order (queries, then snapshot
    type): an unshared block holds one query and a shared one at least two, so two blocks with the same
    queries are both shared or both unshared, and None is never compared with a type."""

    def __new__(cls, queries: Iterable[str], snapshot: str | None = None) -> Block:
        queries = tuple(sorted(queries))
        if not queries:
            raise CepoptError("a Gloria block needs at least one query")
        if snapshot is None and len(queries) != 1:
            raise CepoptError(f"unshared block {list(queries)} must hold exactly one query")
        if snapshot is not None and len(queries) < 2:
            raise CepoptError(f"shared block {list(queries)} must hold at least two queries")
        block = tuple.__new__(cls, (queries, snapshot))
        block.__dict__["members"] = frozenset(queries)  # a shared block is tested against many nodes
        return block

    #: the queries as a set, built with the block
    members: frozenset[str]
    if TYPE_CHECKING:  # the two properties' types, for type checkers and the compiled modules (compiled.py)
        @property
        def queries(self) -> tuple[str, ...]: ...

        @property
        def snapshot(self) -> str | None: ...
    else:
        queries = property(itemgetter(0), doc="The queries, sorted by name.")
        snapshot = property(itemgetter(1), doc="The snapshot type, None for an unshared block.")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Block is immutable: cannot set {name!r}")

    def __reduce__(self):
        return (Block, tuple(self))

    def __repr__(self) -> str:
        return f"Block(queries={self[0]!r}, snapshot={self[1]!r})"

    @property
    def shared(self) -> bool:
        return self[1] is not None

    def resnapshot(self, snapshot: str) -> Block:
        """The shared block of the same queries with snapshot type ``snapshot``.

        Why not ``Block(self.queries, snapshot)``: the queries are sorted and checked already and their
        set is built; node generation makes every local snapshot (P2) and every Kleene ``(Q_K)^X`` this
        way, about 160 blocks per published 100-query workload, in under half the constructor's time
        (0.5 against 1.3 us)."""
        if snapshot is None or len(self[0]) < 2:
            raise CepoptError(f"block {list(self[0])} cannot be shared with snapshot {snapshot!r}")
        block = tuple.__new__(Block, (self[0], snapshot))
        block.__dict__["members"] = self.__dict__["members"]
        return block

    def to_json(self) -> dict:
        return {"queries": list(self[0]), "snapshot": self[1]}
