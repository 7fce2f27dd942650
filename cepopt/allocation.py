"""Pausing Python's cyclic garbage collector while a big acyclic structure is built.

Parsing a workload file and GLORIA's problem build and candidate graph allocate tens of thousands of
small tuples, lists, dicts and sets (tokens and pattern nodes; blocks, options, rows, pair terms) that
form no reference cycles: reference counting frees them. Each 700 allocations the cyclic collector
scans the youngest of them, every few such scans the older ones, and now and then the whole heap,
which in a process holding the instance, the results and pandas is most of the time spent: on the
published 100-query workloads these collections took about 15 % of the GLORIA search (2.8 of 19 ms) and
16 % of reading the file (2 of 12 ms). Those steps therefore run with the collector paused and restore
it after, as it was.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector disabled; re-enable it after (also on an
    exception) only if it was enabled before, so nested or concurrent uses never leave it off.

    >>> import gc
    >>> with collector_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
