"""Exact counts in the trend kernels (executor/exact.py): residue lanes combined by the Chinese
remainder theorem, as many lanes as the results need, so counts stay exact far beyond 2^200."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import cepopt.gloria.plan as gplan
from cepopt.executor.exact import crt, lanes_for, moduli, needed_lanes
from cepopt.executor.trend_exec import run_gloria, run_greta, run_hamlet
from cepopt.model import Kleene, Query, Seq, Type, Window, Workload


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2 ** 700), 2 ** 700), st.integers(1, 4))
def test_crt_reconstructs_signed_integers(x, extra):
    lanes = needed_lanes(abs(x).bit_length()) + extra - 1
    mods = moduli(lanes)[1:]
    residues = np.array([[x % int(p) for p in mods]], dtype=np.float64)
    assert crt(residues) == [x]


def test_lanes_cover_the_bound():
    for bits in (0, 1, 25, 50, 200, 1000):
        lanes = lanes_for(bits)
        assert sum(math.log2(p) for p in moduli(lanes)[1:]) > bits
        assert all(p < 2 ** 26 for p in moduli(lanes)[1:])


def test_counts_beyond_2_to_the_600_in_every_kernel():
    """SEQ(A, B+) over one A and n B events counts 2^n - 1 trends; SEQ(C, B+) likewise: two queries
    that share the B+ burst (Hamlet) and the (B, B) transition (Gloria)."""
    n = 600
    w = Window(10_000, 10_000)
    wl = Workload((Query(Seq((Type("A"), Kleene(Type("B")))), w), Query(Seq((Type("C"), Kleene(Type("B")))), w)))
    events = pd.DataFrame([{"ts": 0, "type": "A"}, {"ts": 0, "type": "C"}]
                          + [{"ts": i + 1, "type": "B"} for i in range(n)])
    want = {2 ** n - 1}
    names = [q.name for q in wl]
    shared = gplan.GloriaPlan.from_blocks({("B", "B"): [gplan.Block(tuple(names), "B")]})
    runs = [run_greta(wl, events), run_gloria(wl, None, events), run_gloria(wl, shared, events)]
    runs += [run_hamlet(wl, events, policy) for policy in ("static", "dynamic", "nonshared")]
    for got, _metrics in runs:
        assert len(got) == 2 and set(got["value"]) == want
    assert runs[2][1]["snapshots"] > 0 and runs[3][1]["shared_bursts"] == 1  # the plans did share


def test_crt_of_many_rows_at_every_width():
    """One call reconstructs rows of every magnitude, below and beyond int64 (the product of the
    moduli decides whether the digits are combined as int64 or as Python ints)."""
    rng = np.random.default_rng(7)
    for lanes in (1, 2, 3, 5, 9):
        big = math.prod(int(p) for p in moduli(lanes)[1:])
        xs = [0, 1, -1, big // 2, -(big // 2)] + [int(rng.integers(-2 ** 62, 2 ** 62)) % big - big // 2
                                                   for _ in range(200)]
        xs = [x if abs(x) <= big // 2 else x // 2 for x in xs]
        residues = np.array([[x % int(p) for p in moduli(lanes)[1:]] for x in xs], dtype=np.float64)
        assert crt(residues.reshape(len(xs) // 5, 5, lanes)) == xs
