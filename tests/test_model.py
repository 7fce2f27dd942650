"""Validation of the domain model: every constructor rejects bad values with a ModelError."""

import pytest

from cepopt.errors import CepoptError, ModelError
from cepopt.model import (
    MAX_PATTERN_DEPTH,
    Aggregate,
    And,
    AttrRef,
    Condition,
    Equivalence,
    Filter,
    Kleene,
    Not,
    Or,
    Query,
    Seq,
    Statistics,
    Type,
    Window,
    Workload,
)


def q(pattern, **kw):
    return Query(pattern, Window(10), **kw)


def test_objects_are_hashable_and_compare_by_value():
    a = q(Seq((Type("A"), Kleene(Type("B")))), where=(Equivalence("id"),))
    b = q(Seq([Type("A"), Kleene(Type("B"))]), where=[Equivalence("id")])
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1


def test_pattern_event_types_in_order_of_first_use():
    p = Seq((Type("C"), Kleene(Seq((Type("A"), Type("B")))), Type("A"), Not(Type("D"))))
    assert p.event_types() == ("C", "A", "B", "D")
    assert [t.name for t in p.leaves()] == ["C", "A", "B", "A", "D"]


@pytest.mark.parametrize("make", [
    lambda: Type("1A"), lambda: Type("SEQ"), lambda: Type("A", "b c"), lambda: Seq(()),
    lambda: Seq(("A",)), lambda: Kleene("A"), lambda: And(()), lambda: Or(()),
    lambda: Window(0), lambda: Window(-5), lambda: Window(10, 0), lambda: Window(float("inf")),
    lambda: Aggregate("MEDIAN", "A", "x"), lambda: Aggregate("SUM", "A"), lambda: Aggregate("COUNT", "A", "x"),
    lambda: Filter("A", "x", "~", 3), lambda: Filter("A", "x", "<", [1]), lambda: Filter("A", "x", "<", float("nan")),
    lambda: Condition(AttrRef("x", "a"), "<", AttrRef("x")),
    lambda: Condition(AttrRef("x", "a"), "<", AttrRef("y", "a")),
    lambda: Condition(AttrRef("x", "a"), "<", AttrRef("x", "b"), selectivity=0),
    lambda: Condition(AttrRef("x", "a"), "<", AttrRef("x", "b"), selectivity=1.5),
])
def test_invalid_objects_raise_model_error(make):
    with pytest.raises(ModelError):
        make()


def test_model_error_is_a_cepopt_error():
    assert issubclass(ModelError, CepoptError)


def test_query_rejects_unknown_references():
    p = Seq((Type("A", "a"), Type("B", "b")))
    with pytest.raises(ModelError, match="unknown event type 'Foo'"):
        q(p, where=(Filter("Foo", "x", ">", 1),))
    with pytest.raises(ModelError, match="unknown event type 'c'"):
        q(p, where=(Condition(AttrRef("x", "a"), "<", AttrRef("x", "c")),))
    with pytest.raises(ModelError, match="unknown event type 'Z'"):
        q(p, returns=(Aggregate("SUM", "Z", "x"),))
    with pytest.raises(ModelError, match="unknown event type 'Z'"):
        q(p, group_by=(AttrRef("d", "Z"),))
    # Types and variables are both valid references.
    ok = q(p, where=(Filter("A", "x", ">", 1), Filter("b", "y", "=", "Pool")))
    assert ok.type_of("b") == "B" and ok.refs() == {"A", "B", "a", "b"}


def test_query_rejects_double_binding_and_variable_type_clash():
    with pytest.raises(ModelError, match="bound twice"):
        q(Seq((Type("A", "x"), Type("B", "x"))))
    with pytest.raises(ModelError, match="also an event type"):
        q(Seq((Type("A", "B"), Type("B"))))


def test_workload_names_queries_and_rejects_duplicates():
    w = Workload((q(Type("A")), q(Type("B"), name="mine"), q(Type("C"))))
    assert w.names == ("q1", "mine", "q3")
    assert w["mine"].pattern == Type("B") and w[2].name == "q3"
    assert w.event_types() == ("A", "B", "C")
    with pytest.raises(ModelError, match="used twice"):
        Workload((q(Type("A"), name="x"), q(Type("B"), name="x")))
    with pytest.raises(ModelError, match="no query named"):
        w["nope"]


def test_window_normalises_integral_numbers():
    assert Window(600.0) == Window(600) and isinstance(Window(600.0).length, int)
    assert Window(0.5, 0.25).slide == 0.25


def test_window_slide_larger_than_length_is_refused():
    assert Window(5, 5).slide == 5  # tumbling windows are fine
    # windows [kS, kS + W) with S > W leave gaps that belong to no window: refused, not run
    with pytest.raises(ModelError, match=r"^window slide 10 is larger than window length 5: .*gaps"):
        Window(5, 10)
    with pytest.raises(ModelError, match=r"window slide 0\.5 is larger than window length 0\.25"):
        Window(0.25, 0.5)


def test_statistics_accessors_and_validation():
    s = Statistics(rates={"A": 2, "B": 0.5}, selectivities={"a,b": 0.25, "a": 0.5}, events_per_window={"A": 7})
    assert s.rate("B") == 0.5
    assert s.selectivity("b", "a") == 0.25 and s.selectivity("a", "a") == 0.5 and s.selectivity("a", "c") == 1.0
    assert s.per_window("A") == 7 and s.per_window("B", 10) == 5
    assert Statistics.from_json(s.to_json()) == s
    assert hash(s) == hash(Statistics.from_json(s.to_json()))
    with pytest.raises(ModelError, match="must be >= 0"):
        Statistics(rates={"A": -1})
    with pytest.raises(ModelError, match="unknown event type 'C'"):
        s.rate("C")
    with pytest.raises(ModelError, match="unknown event type 'C'"):
        s.require_rates(["A", "C"])
    with pytest.raises(ModelError, match="selectivity"):
        Statistics(selectivities={"a,b": 0})
    with pytest.raises(ModelError, match="twice"):
        Statistics(selectivities={"a,b": 0.1, "b,a": 0.2})


HUGE = 10**400  # a JSON integer beyond the float range


@pytest.mark.parametrize("make,message", [
    (lambda: Statistics(rates={"A": float("nan")}), "rate of 'A' must be a finite number, got nan"),
    (lambda: Statistics(rates={"A": float("inf")}), "rate of 'A' must be a finite number, got inf"),
    (lambda: Statistics(rates={"A": HUGE}), "rate of 'A' is too large"),
    (lambda: Statistics(events_per_window={"A": float("nan")}), "events per window of 'A' must be a finite number"),
    (lambda: Statistics(events_per_window={"A": float("inf")}), "events per window of 'A' must be a finite number"),
    (lambda: Statistics(events_per_window={"A": HUGE}), "events per window of 'A' is too large"),
    (lambda: Statistics(selectivities={"a,b": float("nan")}), "selectivity must be in (0, 1], got nan"),
    (lambda: Statistics(selectivities={"a": float("inf")}), "selectivity must be in (0, 1], got inf"),
    (lambda: Window(HUGE), "window length is too large"),
    (lambda: Window(5, float("nan")), "window slide must be a finite number, got nan"),
], ids=["rate-nan", "rate-inf", "rate-huge", "epw-nan", "epw-inf", "epw-huge", "sel-nan", "sel-inf", "window-huge",
        "slide-nan"])
def test_non_finite_and_huge_numbers_are_rejected(make, message):
    with pytest.raises(ModelError) as info:
        make()
    assert message in str(info.value) and len(str(info.value)) < 100


def test_pattern_height_is_bounded():
    p = Type("A")
    for _ in range(MAX_PATTERN_DEPTH - 1):
        p = Kleene(p)
    assert p.event_types() == ("A",)  # MAX_PATTERN_DEPTH levels: accepted, and walkable
    with pytest.raises(ModelError, match=f"pattern nested more than {MAX_PATTERN_DEPTH} levels deep"):
        Not(p)
    # The height is not a field: equality and repr ignore it.
    assert Kleene(Type("A")) == Kleene(Type("A"))
    assert repr(Kleene(Type("A"))) == "Kleene(inner=Type(name='A', var=None))"
