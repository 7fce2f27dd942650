"""Issue 21 part 6: the parser and the printer agree at every depth the parser accepts.

Patterns are built inside out from a random chain of operators (NOT, KL, postfix +, SEQ, AND, OR, with
sibling leaves) up to and beyond MAX_PATTERN_DEPTH; whatever the model accepts prints to text that
parses back to the same pattern, and a chain one level too deep is refused by the model with a
ModelError. The same chains written as text, in every spelling the parser takes (``NOT p``, ``NOT(p)``,
``KL(p)``, ``p+``, ``(p)``), parse or fail with a QuerySyntaxError, and what parses round-trips.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cepopt.errors import ModelError, QuerySyntaxError
from cepopt.model import MAX_PATTERN_DEPTH, And, Kleene, Not, Or, Query, Seq, Type, Window
from cepopt.syntax import format_pattern, format_query, parse_pattern, parse_query
from tests.fuzz.budget import box, budget

OPERATORS = ("NOT", "KL", "SEQ", "AND", "OR")
NARY = {"SEQ": Seq, "AND": And, "OR": Or}
depths = st.one_of(st.sampled_from([1, 2, MAX_PATTERN_DEPTH - 1, MAX_PATTERN_DEPTH, MAX_PATTERN_DEPTH + 1]),
                   st.integers(1, MAX_PATTERN_DEPTH + 2))
leaves = st.sampled_from([Type("A"), Type("B", "b"), Type("C")])


@st.composite
def chains(draw):
    """A pattern of the drawn height (or a ModelError when above the limit) and the operator chain."""
    height = draw(depths)
    ops = draw(st.lists(st.sampled_from(OPERATORS), min_size=height - 1, max_size=height - 1))
    sides = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=height - 1,
                          max_size=height - 1))
    return draw(leaves), ops, sides


def build(leaf, ops, sides):
    p = leaf
    for op, (before, after) in zip(ops, sides):
        if op == "NOT":
            p = Not(p)
        elif op == "KL":
            p = Kleene(p)
        else:
            p = NARY[op]((Type("D"),) * before + (p,) + (Type("E"),) * after)
    return p


@budget(60)
@given(chains())
def test_model_patterns_print_and_parse_back_at_every_depth(chain):
    leaf, ops, _ = chain
    with box():
        try:
            p = build(*chain)
        except ModelError as exc:
            assert len(ops) + 1 > MAX_PATTERN_DEPTH
            assert "nested more than" in str(exc)
            return
        assert len(ops) + 1 <= MAX_PATTERN_DEPTH
        assert parse_pattern(format_pattern(p)) == p
        q = Query(p, Window(5))
        assert parse_query(format_query(q)) == q


def spell(leaf, ops, sides, spelling):
    text = format_pattern(leaf)
    for i, (op, (before, after)) in enumerate(zip(ops, sides)):
        variant = spelling[i % len(spelling)]
        if op == "NOT":
            text = f"NOT {text}" if variant == 0 else f"NOT({text})" if variant == 1 else f"NOT ({text})"
        elif op == "KL":
            text = f"KL({text})" if variant != 0 or "NOT" in text[:3] or " " in text else f"{text}+"
        else:
            items = ["D"] * before + [text] + ["E"] * after
            text = f"{op}({', '.join(items)})" if variant != 2 or op != "SEQ" else f"({', '.join(items)})"
    return text


@budget(60)
@given(chains(), st.lists(st.integers(0, 2), min_size=1, max_size=5))
def test_text_at_every_depth_parses_or_fails_cleanly_and_round_trips(chain, spelling):
    text = spell(*chain, spelling)
    with box():
        try:
            p = parse_pattern(text)
        except QuerySyntaxError as exc:
            assert "nested more than" in str(exc)
            return
        assert parse_pattern(format_pattern(p)) == p


@pytest.mark.parametrize("op", OPERATORS + ("PLUS",))
def test_a_chain_of_one_operator_at_the_limit(op):
    """The regression of issue 21: 100 (and up to MAX - 1) nested NOTs did not parse back."""
    p = Type("A")
    for _ in range(MAX_PATTERN_DEPTH - 1):
        p = {"NOT": Not, "KL": Kleene, "PLUS": Kleene}.get(op, lambda x, o=op: NARY[o]((x, Type("B"))))(p)
    assert parse_pattern(format_pattern(p)) == p
    with pytest.raises(ModelError, match="nested more than"):
        Not(p)


def test_one_hundred_nots_round_trip():
    text = "PATTERN " + "NOT " * 100 + "A WITHIN 5"
    q = parse_query(text)
    assert parse_query(format_query(q)) == q
    assert format_pattern(parse_pattern("NOT(" * 100 + "A" + ")" * 100)) == "NOT(" * 100 + "A" + ")" * 100
