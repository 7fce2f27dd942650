"""The scope layout (cepopt/hamlet/scope.py): the rows of a time-ordered stream of one partition key
are laid out window by window without a sort (``_window_runs``); they must be exactly the rows of the
general layout (every (event, window) pair, ordered by scope, time and stream order)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.hamlet.scope import _scope_rows, _window_runs, class_layout, window_bounds


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 60), max_size=40), st.integers(1, 12), st.integers(1, 12), st.integers(0, 6),
       st.integers(0, 12))
def test_window_runs_are_the_general_layout(ts, length, slide, first, count):
    ts = np.sort(np.array(ts, dtype=np.int64))
    lo, hi = window_bounds(ts, length, slide)
    lo = np.maximum(lo, first)
    hi = np.minimum(hi, first + count - 1)
    src, window = _window_runs(lo, hi)
    want_src, want_window, _key, _scope = _scope_rows(lo, hi, np.zeros(len(ts), dtype=np.int64), ts)
    assert src.tolist() == want_src.tolist()
    assert window.tolist() == want_window.tolist()
    # and every pair is there once: event i in window k iff k*S <= t_i < k*S + W (within the bounds)
    pairs = {(i, k) for i, t in enumerate(ts.tolist()) for k in range(first, first + count)
             if k * slide <= t < k * slide + length}
    assert set(zip(src.tolist(), window.tolist(), strict=True)) == pairs


def test_layout_of_keys_and_disorder_matches_the_time_ordered_one():
    """A stream out of time order takes the general path: the same scopes, times and ties."""
    from cepopt.hamlet.problem import compile_workload
    from cepopt.model import Kleene, Query, Seq, Type, Window, Workload

    wl = Workload((Query(Seq((Type("A"), Kleene(Type("B")))), Window(6, 3)),))
    cls = compile_workload(wl)[0]
    rng = np.random.default_rng(3)
    events = pd.DataFrame({"ts": np.sort(rng.integers(0, 40, 60)), "type": rng.choice(["A", "B", "C"], 60)})
    fast = class_layout(cls, events, (2, math.inf))
    shuffled = class_layout(cls, events.sample(frac=1.0, random_state=1), (2, math.inf))
    for lay in (shuffled,):
        assert lay.scope_window.tolist() == fast.scope_window.tolist()
        assert lay.scope_start.tolist() == fast.scope_start.tolist()
        assert lay.ts.tolist() == fast.ts.tolist()
        assert np.array_equal(lay.tie, fast.tie)


def _segments_by_hand(tie, relevant, is_e, scope_of, ts, pane):
    """The burst segmentation written per tie group in Python (cepopt.hamlet.graphlets module docstring)."""
    n = len(tie)
    solo, burst_of, starts, cont = [False] * n, [-1] * n, [], []
    groups: list[list[int]] = []
    for r in range(n):
        if tie[r] == r:
            groups.append([])
        groups[-1].append(r)
    prev = None                                            # (scope, e_only, pane) of the last kept group
    for rows in groups:
        has_e = any(is_e[i] for i in rows)
        has_other = any(relevant[i] and not is_e[i] for i in rows)
        if not (has_e or has_other):
            continue
        a = rows[0]
        scope, pid = scope_of[a], (ts[a] // pane if pane else 0)
        e_only = has_e and not has_other
        prev_e = prev is not None and prev[1] and prev[0] == scope
        if e_only:
            if not (prev_e and prev[2] == pid):
                starts.append(a)
                cont.append(prev_e)
            for i in rows:
                burst_of[i] = len(starts) - 1 if is_e[i] else -1
        else:
            for i in rows:
                solo[i] = bool(is_e[i])
        prev = (scope, e_only, pid)
    return solo, burst_of, starts, cont


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from("ABCD")), max_size=50), st.integers(2, 9),
       st.integers(1, 9), st.sampled_from([0, 1, 2, 3]))
def test_burst_segments_match_the_definition(rows, length, slide, pane):
    from cepopt.hamlet.graphlets import _segments
    from cepopt.hamlet.problem import compile_workload
    from cepopt.model import Kleene, Query, Seq, Type, Window, Workload

    wl = Workload((Query(Seq((Type("A"), Kleene(Type("B")), Type("C"))), Window(length, min(slide, length))),))
    cls = compile_workload(wl)[0]
    events = pd.DataFrame(rows, columns=["ts", "type"]) if rows else pd.DataFrame({"ts": [], "type": []})
    lay = class_layout(cls, events.astype({"ts": "int64", "type": "object"}))
    relevant = lay.masks.any(axis=0)
    is_e = relevant & (lay.tcode == lay.type_code("B"))
    got = _segments(lay, relevant, is_e, pane)
    want = _segments_by_hand(lay.tie.tolist(), relevant.tolist(), is_e.tolist(), lay.scope_of().tolist(),
                             lay.ts.tolist(), pane)
    assert [np.asarray(x).tolist() for x in got] == [list(w) for w in want]
