"""Sharon's cost model takes one rate unit (spec A4): per-window counts for every type, or rates."""

from __future__ import annotations

import pytest

from cepopt.errors import CepoptError
from cepopt.instance import from_json
from cepopt.registry import solve


def _instance(events_per_window):
    return from_json({"problem": "sharon", "queries": ["q1: PATTERN SEQ(A,B,C) WITHIN 10 s",
                                                       "q2: PATTERN SEQ(A,B,D) WITHIN 10 s"],
                      "statistics": {"rates": {"A": 2, "B": 3, "C": 1, "D": 1},
                                     "events_per_window": events_per_window}})


def test_a_partial_per_window_map_is_refused():
    with pytest.raises(CepoptError, match="events_per_window has no count for B, C, D"):
        solve(_instance({"A": 2000}), "greedy")


def test_a_full_per_window_map_replaces_the_rates():
    per_window = solve(_instance({"A": 20, "B": 30, "C": 10, "D": 10}), "bruteforce", params={"expand": False})
    scaled = from_json({"problem": "sharon", "queries": ["q1: PATTERN SEQ(A,B,C) WITHIN 10 s",
                                                         "q2: PATTERN SEQ(A,B,D) WITHIN 10 s"],
                        "statistics": {"rates": {"A": 20, "B": 30, "C": 10, "D": 10}}})
    assert per_window.objective == solve(scaled, "bruteforce", params={"expand": False}).objective
    assert per_window.objective != solve(_instance({}), "bruteforce", params={"expand": False}).objective
