"""The keys the problem build groups queries by, against the straightforward definitions.

`_class_key` reads each predicate and RETURN item once (for the compiled build); it must give the key
the model's own properties give (`Query.filters`, `.conditions`, `.equivalences`, `.aggregates`).
`_pattern_key` stands in for a Kleene sub-pattern in the Kleene groups; two keys must be equal exactly
when the patterns are.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from cepopt.gloria.problem import _class_key, _pattern_key
from cepopt.model import (
    Aggregate,
    AttrRef,
    Condition,
    Equivalence,
    Filter,
    Kleene,
    Query,
    Seq,
    Type,
    Window,
)

TYPES = ("A", "B", "C")
VARS = (None, "a", "b")


def _reference_key(q: Query) -> tuple:
    """The sharing class as the module docstring defines it, through the model's properties, with
    multisets where the build sorts (so that no order, and no None beside a string, is involved)."""
    def norm(ref):
        return q.type_of(ref) if ref is not None else None

    slide = q.window.slide if q.window.slide is not None else q.window.length
    filters = Counter((norm(p.ref), p.attr, p.op, repr(p.value)) for p in q.filters)
    conds = Counter((norm(p.left.ref), p.left.attr, p.op, norm(p.right.ref), p.right.attr) for p in q.conditions)
    group = Counter((norm(a.ref), a.attr) for a in q.group_by)
    aggs = Counter((a.func, norm(a.ref), a.attr) for a in q.aggregates if a.func in ("MIN", "MAX"))
    return (group, Counter(q.equivalences), slide, filters, conds, aggs)


@st.composite
def queries(draw) -> Query:
    var_a, var_b = draw(st.sampled_from([(None, None), ("a", None), ("a", "b")]))
    pattern = Seq((Type("A", var_a), Kleene(Type("B", var_b)), Type("C")))
    refs = [var_a or "A", var_b or "B", "C"]
    ref = st.sampled_from(refs)
    attr = st.sampled_from(["x", "y"])
    op = st.sampled_from(["<", ">", "="])
    filters = st.builds(Filter, ref, attr, op, st.one_of(st.integers(-3, 3), st.sampled_from(["u", "v"])))
    conditions = st.tuples(ref, ref, attr, attr, op).filter(lambda c: c[0] != c[1]).map(
        lambda c: Condition(AttrRef(c[2], c[0]), c[4], AttrRef(c[3], c[1])))
    where = draw(st.lists(st.one_of(filters, conditions, st.builds(Equivalence, attr)), max_size=5))
    returns = draw(st.lists(st.one_of(st.just(Aggregate("COUNT")),
                                      st.builds(Aggregate, st.sampled_from(["MIN", "MAX", "SUM"]), ref, attr)),
                            min_size=1, max_size=3))
    group_by = draw(st.lists(st.builds(AttrRef, attr, st.one_of(st.none(), ref)), max_size=2))
    window = Window(draw(st.sampled_from([10, 20])), draw(st.sampled_from([None, 5, 10])))
    return Query(pattern, window, tuple(returns), tuple(where), tuple(group_by), name="q")


@settings(max_examples=300, deadline=None)
@given(queries(), queries())
def test_class_keys_are_equal_exactly_when_the_reference_keys_are(q1, q2):
    assert (_class_key(q1) == _class_key(q2)) == (_reference_key(q1) == _reference_key(q2))
    assert _class_key(q1) == _class_key(q1)


def test_group_by_with_and_without_an_event_reference():
    """``GROUP-BY x, A.x``: a key entry without a reference beside one with (it raised TypeError)."""
    def query(*group_by: AttrRef) -> Query:
        return Query(Seq((Type("A"), Type("B"))), Window(10), group_by=group_by, name="q")

    both = query(AttrRef("x"), AttrRef("x", "A"))
    assert _class_key(both) == _class_key(query(AttrRef("x", "A"), AttrRef("x")))
    assert _class_key(both) != _class_key(query(AttrRef("x", "A"), AttrRef("x", "B")))


@st.composite
def patterns(draw, depth: int = 2):
    """Patterns of the kinds a template holds (types, SEQs, Kleene), small enough to collide often."""
    if depth == 0 or draw(st.booleans()):
        return Type(draw(st.sampled_from(TYPES)), draw(st.sampled_from(VARS)))
    if draw(st.booleans()):
        return Kleene(draw(patterns(depth - 1)))
    return Seq(tuple(draw(st.lists(patterns(depth - 1), min_size=1, max_size=2))))


@settings(max_examples=500, deadline=None)
@given(patterns(), patterns())
def test_pattern_keys_are_equal_exactly_when_the_patterns_are(p, q):
    assert (_pattern_key(p) == _pattern_key(q)) == (p == q)
    assert _pattern_key(p) == _pattern_key(p)


@settings(max_examples=200, deadline=None)
@given(queries(), st.randoms(use_true_random=False))
def test_the_class_key_ignores_the_order_of_predicates_returns_and_group_by(q, rnd):
    def shuffled(items):
        items = list(items)
        rnd.shuffle(items)
        return tuple(items)

    other = Query(q.pattern, q.window, shuffled(q.returns), shuffled(q.where), shuffled(q.group_by), name="r")
    assert _class_key(other) == _class_key(q)
