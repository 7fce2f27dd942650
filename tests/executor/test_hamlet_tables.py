"""The Hamlet kernel's driver-side tables (executor/hamlet_kernel.py): the pe sets of the rows
(which candidates have a row as a predecessor) as distinct sets and an index per row."""

from __future__ import annotations

import numpy as np
import pytest

from cepopt.executor.hamlet_kernel import _pe_sets


@pytest.mark.parametrize("k", [1, 3, 8, 10, 50, 62, 63, 70])
def test_pe_sets_index_the_distinct_sets_of_the_rows(k):
    rng = np.random.default_rng(k)
    queries, types, n = k + 3, 5, 400
    masks = rng.random((queries, n)) < 0.6
    qidx = sorted(rng.choice(queries, k, replace=False).tolist())
    pte = rng.random((k, types)) < 0.5
    tcode = rng.integers(0, types, n)
    sets, inv = _pe_sets(masks, qidx, pte, tcode)
    want = [tuple(bool(masks[q, i] and pte[c, tcode[i]]) for c, q in enumerate(qidx)) for i in range(n)]
    assert sets.shape[1] == k and len(sets) == len(set(want))
    assert [tuple(r) for r in sets[inv].tolist()] == want
