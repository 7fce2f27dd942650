"""Pausing Python's cyclic garbage collector while a big acyclic structure is built.

Parsing a workload file and GLORIA's problem build and candidate graph allocate tens of thousands of
small tuples, lists, dicts and sets (tokens and pattern nodes; blocks, options, rows, pair terms) that
form no reference cycles: reference counting frees them. Each 700 allocations the cyclic collector
scans the youngest of them, every few such scans the older ones, and now and then the whole heap,
which in a process holding the instance, the results and pandas is most of the time spent: on the
published 100-query workloads these collections took about 15 % of the GLORIA search (2.8 of 19 ms) and
16 % of reading the file (2 of 12 ms). Those steps therefore run with the collector paused and restore
it after, as it was.

What the block built and keeps (the problem, the parsed workload) would then be scanned once by the
first young collection after it: about 0.3 ms per published workload, 3 % of the compiled GLORIA
search. On leaving, the block therefore moves every tracked object straight into the oldest generation
(``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no scan), where only a full collection looks
at it. The cost of that: young cyclic garbage that other code left in the process is also promoted and
waits for the next full collection (memory held longer, never leaked). It is skipped when some objects
are frozen already (``gc.get_freeze_count() > 0``): unfreezing would thaw somebody else's.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector disabled; re-enable it after (also on an
    exception) only if it was enabled before, so nested or concurrent uses never leave it off; what the
    block built is moved to the oldest generation first (module docstring).

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
        if gc.get_freeze_count() == 0:  # nobody else's frozen objects would be thawed
            gc.freeze()  # every tracked object to the permanent generation, no scan, young count 0
            gc.unfreeze()  # ... and back, into the oldest generation
        gc.enable()
