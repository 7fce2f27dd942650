"""The plan decoded from one option per pool (cost.plan_from_options) skips the constructor's check for
a query in two blocks of a transition (TransitionPlan.of_disjoint): on every plan a method returns it
must equal the checked construction, and the checked constructor must still refuse overlapping blocks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.errors import CepoptError
from cepopt.gloria import cost
from cepopt.gloria.nodes import generate
from cepopt.gloria.plan import Block, GloriaPlan, TransitionPlan
from cepopt.instances.gloria_generator import random_instance
from cepopt.registry import family


def _checked(problem, options) -> GloriaPlan:
    """plan_from_options through the constructor's checks."""
    blocks: dict = {}
    for pool in problem.pools:
        for t in pool.transitions:
            blocks.setdefault(t, []).extend(options[pool.index])
    return GloriaPlan.from_blocks(blocks)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 14), st.integers(0, 10_000))
def test_decoded_plans_equal_the_checked_construction(queries, seed):
    problem = family("gloria").build(random_instance(queries, seed, kleene=0.3, nested=0.2))
    graph = generate(problem, "noprune")
    for choice in ([0] * len(problem.pools), [len(o) - 1 for o in graph.options]):
        options = [graph.options[p][j] for p, j in enumerate(choice)]
        plan = cost.plan_from_options(problem, options)
        assert plan == _checked(problem, options)
        assert all(list(tp.blocks) == sorted(tp.blocks) for tp in plan.transitions)
    baseline = cost.baseline_options(problem)
    assert cost.plan_from_options(problem, baseline) == _checked(problem, baseline)


def test_of_disjoint_sorts_like_the_constructor():
    blocks = (Block(("q3",)), Block(("q1", "q2"), "A"), Block(("q0",)))
    assert TransitionPlan.of_disjoint("A", "B", blocks) == TransitionPlan("A", "B", blocks)


def test_the_checked_constructor_still_refuses_a_query_in_two_blocks():
    with pytest.raises(CepoptError, match="'q1' is in two blocks"):
        GloriaPlan.from_blocks({("A", "B"): [Block(("q1", "q2"), "A"), Block(("q1",))]})
