"""Options in canonical form: a plan's blocks sorted, and blocks cut to the queries of an edge.

Compiled with the search's other hot modules (cepopt/gloria/compiled.py): node generation and the path
search call these once per part and per predecessor node, thousands of times per published workload,
and a call into a Python function from compiled code costs more than the work. cepopt/gloria/plan.py
re-exports both.
"""

from __future__ import annotations

from collections.abc import Iterable

from cepopt.gloria.block import Block

__all__ = ["distinct_blocks", "queries_of", "restrict_blocks", "sort_blocks"]


def queries_of(block: Block) -> tuple[str, ...]:
    """A block's queries (``block[0]``; Block is the tuple (queries, snapshot)), typed as a tuple so that
    compiled code loops over them natively rather than through the iterator protocol."""
    return block[0]


def distinct_blocks(blocks: tuple[Block, ...]) -> tuple[Block, ...]:
    """The blocks without repeats, in order of first occurrence: ``tuple(dict.fromkeys(blocks))``, with a
    dictionary display that compiled code builds natively (``dict.fromkeys`` is a generic call)."""
    return tuple({block: None for block in blocks})


def sort_blocks(blocks: Iterable[Block]) -> tuple[Block, ...]:
    """The blocks in canonical order (:class:`Block`: tuple order)."""
    return tuple(sorted(blocks))


def restrict_blocks(blocks: Iterable[Block], queries: frozenset[str]) -> tuple[list[Block], list[str]]:
    """``blocks`` cut to ``queries``: the shared blocks that keep at least two queries (snapshot kept, so
    they can be REUSEd) and the queries left unshared (unshared before, or a shared block cut to one
    query by a fork, A8)."""
    shared: list[Block] = []
    unshared: list[str] = []
    for block in blocks:
        sub = [q for q in queries_of(block) if q in queries]  # native; frozenset.intersection is a call
        if not sub:
            continue
        if block[1] is not None and len(sub) >= 2:  # the block itself when it keeps every query
            shared.append(block if len(sub) == len(block[0]) else Block(tuple(sub), block[1]))
        else:
            unshared.extend(sub)
    return shared, unshared
