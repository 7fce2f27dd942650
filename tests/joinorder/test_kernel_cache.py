"""DP-B's compiled kernels are loaded from numba's disk cache in a new process, not compiled again (they
were not cacheable while defined inside a function: every process spent about 5 s compiling, beyond a
short time limit)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
from cepopt.joinorder import dp_b_kernels
from cepopt.registry import solve
solve("joinorder-e6", "dp-b", params={"compile_from": 1})  # the compiled path (5 events)
from cepopt.joinorder.dp_fast import splits_of
import numpy as np
splits_of(np.ones(8, dtype=np.bool_), 3)
print(sum(k.stats.cache_hits.total() if hasattr(k.stats.cache_hits, "total") else sum(k.stats.cache_hits.values())
          for k in (dp_b_kernels.layer, dp_b_kernels.enumerate_splits)),
      sum(len(k.signatures) for k in (dp_b_kernels.layer, dp_b_kernels.enumerate_splits)))
"""


def _run() -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    hits, used = out.stdout.split()
    return int(hits), int(used)


def test_dp_b_kernels_come_from_the_cache_in_a_new_process():
    _run()  # compiles (or loads) and writes the cache
    hits, used = _run()
    assert used == 2 and hits == used
