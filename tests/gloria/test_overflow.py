"""Frequencies whose costs leave floating point are a user error at build time, not an OverflowError
in every method (integral rates give exact int costs, which float() cannot convert beyond 1.8e308)."""

from __future__ import annotations

import math

import pytest

from cepopt.errors import CepoptError
from cepopt.gloria.problem import build
from cepopt.instance import Instance
from cepopt.model import Statistics
from cepopt.registry import solve
from cepopt.syntax import parse_queries

QUERIES = parse_queries("q1: PATTERN SEQ(A, B, C) WITHIN 10\nq2: PATTERN SEQ(A, B, C)+ WITHIN 10\n"
                        "q3: PATTERN SEQ(A, B, D) WITHIN 10")


def instance(rate) -> Instance:
    return Instance("gloria", QUERIES, Statistics(rates={t: rate for t in "ABCD"}))


@pytest.mark.parametrize("rate", [1e200, 10 ** 120])
def test_overflowing_costs_are_refused_at_build(rate):
    with pytest.raises(CepoptError, match=r"^statistics.rates: costs overflow: frequencies too large"):
        build(instance(rate))
    for method in ("greedy", "exhaustive"):
        with pytest.raises(CepoptError, match="costs overflow"):
            solve(instance(rate), method)


@pytest.mark.parametrize("rate", [1e90, 10 ** 30])
def test_large_finite_costs_are_still_priced(rate):
    exact = solve(instance(rate), "exhaustive")
    assert exact.status == "optimal" and math.isfinite(exact.objective)
    assert solve(instance(rate), "greedy").objective >= exact.objective
