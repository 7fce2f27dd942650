"""The query language: example parses, errors with exact positions, durations, round trips, and
every published Gloria workload file."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cepopt.errors import ModelError, QuerySyntaxError
from cepopt.model import (
    COMPARISON_OPS,
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
    Type,
    Window,
    Workload,
)
from cepopt.syntax import (
    format_pattern,
    format_query,
    format_workload,
    parse_duration,
    parse_pattern,
    parse_queries,
    parse_query,
)

COUNT = Aggregate("COUNT")


# ---------------------------------------------------------------------------------------------
# Examples
# ---------------------------------------------------------------------------------------------


def test_ride_sharing_example():
    q = parse_query(
        "RETURN district, COUNT(*) PATTERN SEQ(Request, SEQ(Pickup, Travel)+, Delivery) "
        "WHERE [driver_id] AND Travel.duration > 3 GROUP-BY district WITHIN 20 min SLIDE 5 min"
    )
    assert q == Query(
        pattern=Seq((Type("Request"), Kleene(Seq((Type("Pickup"), Type("Travel")))), Type("Delivery"))),
        window=Window(1200, 300),
        returns=(AttrRef("district"), COUNT),
        where=(Equivalence("driver_id"), Filter("Travel", "duration", ">", 3)),
        group_by=(AttrRef("district"),),
    )


def test_join_order_example():
    q = parse_query("PATTERN SEQ(A a, B b, NOT(C c), KL(D d)) WHERE a.x < b.x WITHIN 10 s")
    assert q == Query(
        pattern=Seq((Type("A", "a"), Type("B", "b"), Not(Type("C", "c")), Kleene(Type("D", "d")))),
        window=Window(10),
        where=(Condition(AttrRef("x", "a"), "<", AttrRef("x", "b")),),
    )
    assert q.returns == (COUNT,)


def test_hamlet_example():
    q = parse_query(
        "q1: RETURN T.district, COUNT(*), SUM(T.duration) PATTERN SEQ(Request R, Travel T+, NOT Pickup P) "
        "WHERE [driver, rider] GROUP-BY T.district WITHIN 30 min SLIDE 1 min"
    )
    assert q == Query(
        pattern=Seq((Type("Request", "R"), Kleene(Type("Travel", "T")), Not(Type("Pickup", "P")))),
        window=Window(1800, 60),
        returns=(AttrRef("district", "T"), COUNT, Aggregate("SUM", "T", "duration")),
        where=(Equivalence("driver"), Equivalence("rider")),
        group_by=(AttrRef("district", "T"),),
        name="q1",
    )
    assert format_query(q) == (
        "q1: RETURN T.district, COUNT(*), SUM(T.duration) PATTERN SEQ(Request R, KL(Travel T), NOT(Pickup P)) "
        "WHERE [driver] AND [rider] GROUP-BY T.district WITHIN 1800 SLIDE 60"
    )


@pytest.mark.parametrize(("text", "expected"), [
    ("A", Type("A")),
    ("A a", Type("A", "a")),
    ("(A)", Type("A")),
    ("B+", Kleene(Type("B"))),
    ("B++", Kleene(Kleene(Type("B")))),
    ("KL(B)", Kleene(Type("B"))),
    ("Travel T+", Kleene(Type("Travel", "T"))),
    ("SEQ(A,B)+", Kleene(Seq((Type("A"), Type("B"))))),
    ("(P, T)+", Kleene(Seq((Type("P"), Type("T"))))),
    ("NOT Pickup P", Not(Type("Pickup", "P"))),
    ("NOT(A, B)", Not(Seq((Type("A"), Type("B"))))),
    ("NOT A+", Not(Kleene(Type("A")))),
    ("SEQ(A)", Seq((Type("A"),))),
    ("and(A, or(B, C))", And((Type("A"), Or((Type("B"), Type("C")))))),
    ("SEQ(C,SEQ(A,B)+,D)+",
     Kleene(Seq((Type("C"), Kleene(Seq((Type("A"), Type("B")))), Type("D"))))),
    ("SEQ(SEQ(TOQ,SEQ(WBA,MKV)+,PAV)+, QVO,XOS)",
     Seq((Kleene(Seq((Type("TOQ"), Kleene(Seq((Type("WBA"), Type("MKV")))), Type("PAV")))),
          Type("QVO"), Type("XOS")))),
    ("  SEQ ( A\n a ,\tB )  # a comment\n", Seq((Type("A", "a"), Type("B")))),
])
def test_patterns(text, expected):
    assert parse_pattern(text) == expected
    assert parse_pattern(format_pattern(expected)) == expected


def test_format_pattern_forms():
    assert format_pattern(Kleene(Type("D", "d"))) == "KL(D d)"
    assert format_pattern(Kleene(Type("D"))) == "D+"
    assert format_pattern(Kleene(Seq((Type("A"), Type("B"))))) == "SEQ(A, B)+"
    assert format_pattern(Not(Type("C", "c"))) == "NOT(C c)"
    assert format_pattern(Kleene(Not(Type("C")))) == "KL(NOT(C))"


def test_string_values_and_operators():
    q = parse_query(
        "PATTERN SEQ(Request R, Travel T) WHERE R.type=Pool AND R.x == 'a\\'b' AND R.y <> \"c\\\"d\\n\" "
        "AND T.speed <= -2.5 AND T.n >= -3 AND T.z != 1e3 AND R.t < T.t SEL 0.3 AND T.w > 4 SEL 1 "
        "WITHIN 1 h"
    )
    assert q.where == (
        Filter("R", "type", "=", "Pool"),
        Filter("R", "x", "=", "a'b"),
        Filter("R", "y", "!=", 'c"d\n'),
        Filter("T", "speed", "<=", -2.5),
        Filter("T", "n", ">=", -3),
        Filter("T", "z", "!=", 1000.0),
        Condition(AttrRef("t", "R"), "<", AttrRef("t", "T"), 0.3),
        Filter("T", "w", ">", 4, 1),
    )
    assert isinstance(q.where[4].value, int) and isinstance(q.where[5].value, float)
    assert parse_query(format_query(q)) == q


@pytest.mark.parametrize("group_by", ["GROUP-BY", "GROUP BY", "GROUP_BY", "group-by", "Group By", "group_by"])
def test_group_by_spellings(group_by):
    q = parse_query(f"RETURN A.k, COUNT(A) PATTERN A {group_by} A.k, m WINDOW 5 slide 1")
    assert q.group_by == (AttrRef("k", "A"), AttrRef("m"))
    assert q.returns == (AttrRef("k", "A"), Aggregate("COUNT", "A"))
    assert q.window == Window(5, 1)


def test_all_aggregates():
    q = parse_query("RETURN count(*), Count(A), sum(A.x), AVG(A.x), min(A.x), MAX(a.y) PATTERN A a WITHIN 1")
    assert q.returns == (COUNT, Aggregate("COUNT", "A"), Aggregate("SUM", "A", "x"), Aggregate("AVG", "A", "x"),
                         Aggregate("MIN", "A", "x"), Aggregate("MAX", "a", "y"))


def test_gloria_style_workload():
    text = (
        "q0\nRETURN TOQ.Line_ID, COUNT(*)\nPATTERN SEQ(JSU, TOQ,WBA, IMK)\nWHERE TOQ.congestion = 0\n"
        "GROUP-BY TOQ.Line_ID\nWITHIN 15 min SLIDE 5 min\n\n"
        "q1\nRETURN TOQ.Line_ID, SUM(TOQ.delay)\nPATTERN SEQ(SEQ(TOQ,SEQ(WBA,MKV)+,PAV)+, QVO,XOS)\n"
        "WHERE TOQ.congestion = 0\nGROUP-BY TOQ.Line_ID\nWITHIN 10 min SLIDE 5 min\n"
    )
    w = parse_queries(text)
    assert w.names == ("q0", "q1")
    assert w["q0"] == Query(
        Seq((Type("JSU"), Type("TOQ"), Type("WBA"), Type("IMK"))), Window(900, 300),
        returns=(AttrRef("Line_ID", "TOQ"), COUNT), where=(Filter("TOQ", "congestion", "=", 0),),
        group_by=(AttrRef("Line_ID", "TOQ"),), name="q0",
    )
    assert w["q1"].returns[1] == Aggregate("SUM", "TOQ", "delay")
    assert parse_queries(format_workload(w)) == w


def test_separators_and_names():
    w = parse_queries(";PATTERN A WITHIN 5;; fast: PATTERN B WITHIN 5 s\nsec\nPATTERN C WITHIN 5\n"
                      "PATTERN D WITHIN 2 min\ns: PATTERN E WITHIN 1;")
    assert w.names == ("q1", "fast", "sec", "q4", "s")
    assert [q.window.length for q in w] == [5, 5, 5, 120, 1]


def test_units_and_names_on_the_same_line():
    # 's' before RETURN is a unit; 'h' before ':' is the name of the next query.
    w = parse_queries("PATTERN A WITHIN 10 s RETURN COUNT(*) PATTERN B WITHIN 3 h: PATTERN C WITHIN 1")
    assert [q.window.length for q in w] == [10, 3, 1]
    assert w.names == ("q1", "q2", "h")


def test_identifiers_that_look_like_keywords_round_trip():
    q = Query(Type("A", "GROUP_BY"), Window(5), where=(Filter("GROUP_BY", "GROUP_BY", "=", "GROUP_BY"),),
              group_by=(AttrRef("GROUP_BY", "GROUP_BY"), AttrRef("GROUP_BY")), name="GROUP_BY")
    assert parse_query(format_query(q)) == q
    w = Workload((Query(Type("s"), Window(1.5), name="h"), Query(Type("ms"), Window(2), name="sec")))
    assert parse_queries(format_workload(w)) == w


# ---------------------------------------------------------------------------------------------
# Durations
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "seconds"), [
    ("20 min", 1200), ("10 s", 10), ("10 sec", 10), ("1 h", 3600), ("500 ms", 0.5), ("20min", 1200),
    ("7", 7), ("2.5", 2.5), ("0.1 min", 6), ("1.5 hours", 5400), ("1e3 ms", 1), ("3 MIN", 180),
    ("2 d", 172800), ("1 ms", 0.001), ("  45 seconds\n", 45),
])
def test_parse_duration(text, seconds):
    value = parse_duration(text)
    assert value == seconds
    assert type(value) is type(seconds)


@pytest.mark.parametrize(("text", "col", "message"), [
    ("10 parsecs", 4, "unknown time unit 'parsecs'"),
    ("", 1, "expected a duration (a number with an optional unit: ms, s, min, h) but found end of input"),
    ("5 min 3", 7, "expected end of input but found '3'"),
    ("-5", 1, "expected a duration"),
    ("1e400", 1, "duration is too large"),
    ("1" + "0" * 400 + " min", 1, "duration is too large"),
    ("9" * 5000, 1, "number too long (5000 characters)"),
    ("1." + "0" * 5000, 1, "number too long (5002 characters)"),
])
def test_parse_duration_errors(text, col, message):
    with pytest.raises(QuerySyntaxError) as info:
        parse_duration(text)
    assert (info.value.line, info.value.column) == (1, col)
    assert message in str(info.value)


# ---------------------------------------------------------------------------------------------
# Errors: one per path, with exact positions
# ---------------------------------------------------------------------------------------------

ERRORS = [
    ("paren", parse_query, "PATTERN SEQ(A, B WHERE A.x = 1 WITHIN 5", 1, 18,
     "line 1, column 18: expected ')' but found 'WHERE'"),
    ("missing_pattern", parse_query, "RETURN COUNT(*)\nWITHIN 5", 2, 1,
     "expected ',' or PATTERN but found 'WITHIN'"),
    ("no_query_keyword", parse_query, "WHERE A.x = 1", 1, 1,
     "expected a query (RETURN or PATTERN, optionally after 'name:') but found 'WHERE'"),
    ("missing_within", parse_query, "PATTERN SEQ(A, B)\nWHERE A.x > 1", 2, 14,
     "expected AND, GROUP-BY or WITHIN but found end of input"),
    ("missing_within_after_pattern", parse_query, "PATTERN A", 1, 10,
     "expected WHERE, GROUP-BY or WITHIN but found end of input"),
    ("missing_within_after_group_by", parse_query, "PATTERN A GROUP-BY A.x SLIDE 5", 1, 24,
     "expected ',' or WITHIN but found 'SLIDE'"),
    ("window_zero", parse_query, "PATTERN A WITHIN 0 min", 1, 18, "window length must be > 0, got 0"),
    ("slide_zero", parse_query, "PATTERN A WITHIN 5 SLIDE 0", 1, 26, "window slide must be > 0, got 0"),
    ("window_underflow", parse_query, "PATTERN A WITHIN 1e-999", 1, 18, "window length must be > 0"),
    ("window_negative", parse_query, "PATTERN A WITHIN -5", 1, 18, "expected a duration"),
    ("window_too_large", parse_query, "PATTERN A WITHIN 1e400", 1, 18, "window length is too large"),
    ("bad_escape", parse_query, "PATTERN A WHERE A.x = '\\U00110000' WITHIN 1", 1, 23, "bad escape in string"),
    ("escape_beyond_c_int", parse_query, "PATTERN A WHERE A.x = '\\UFFFFFFFF' WITHIN 1", 1, 23,
     "bad escape in string"),
    ("window_too_many_digits", parse_query, "PATTERN A WITHIN " + "9" * 5000, 1, 18,
     "number too long (5000 characters)"),
    ("window_huge_exponent", parse_query, "PATTERN A WITHIN 1e999999999", 1, 18,  # no 10**999999999
     "window length is too large"),
    ("slide_too_large", parse_query, "PATTERN A WITHIN 5 SLIDE 1" + "0" * 400, 1, 26, "window slide is too large"),
    ("slide_over_length", parse_query, "PATTERN A WITHIN 5 SLIDE 10", 1, 11,
     "window slide 10 is larger than window length 5"),
    ("value_too_many_digits", parse_query, "PATTERN A WHERE A.x = " + "9" * 5000 + " WITHIN 1", 1, 23,
     "number too long"),
    ("negative_value_too_many_digits", parse_query, "PATTERN A WHERE A.x = -" + "9" * 5000 + " WITHIN 1", 1, 24,
     "number too long"),
    ("selectivity_too_many_digits", parse_query, "PATTERN A WHERE A.x > 1 SEL " + "1" * 5000 + " WITHIN 1", 1, 29,
     "number too long"),
    ("unknown_unit", parse_query, "PATTERN A WITHIN 5 parsecs", 1, 20, "unknown time unit 'parsecs'"),
    ("unterminated_string", parse_query, "PATTERN A\nWHERE A.name = 'abc\nWITHIN 5", 2, 16,
     "unterminated string"),
    ("unexpected_character", parse_query, "PATTERN A WITHIN 5 @", 1, 20, "unexpected character '@'"),
    ("trailing_garbage", parse_query, "PATTERN A WITHIN 5 s )", 1, 22, "expected end of input"),
    ("two_queries", parse_query, "PATTERN A WITHIN 5\nPATTERN B WITHIN 5", 2, 1, "use parse_queries"),
    ("empty_queries", parse_queries, "  \n", 2, 1, "empty input"),
    ("only_semicolons", parse_queries, " ; ;", 1, 5, "empty input"),
    ("empty_query", parse_query, "", 1, 1, "empty input"),
    ("empty_pattern", parse_pattern, "# nothing", 1, 10, "empty input"),
    ("unknown_aggregate", parse_query, "RETURN MEDIAN(A.x) PATTERN A WITHIN 5", 1, 8,
     "unknown aggregate 'MEDIAN' (use one of COUNT, SUM, AVG, MIN, MAX)"),
    ("count_attribute", parse_query, "RETURN COUNT(A.x) PATTERN A WITHIN 5", 1, 15,
     "COUNT takes * or an event type"),
    ("sum_without_attribute", parse_query, "RETURN SUM(A) PATTERN A WITHIN 5", 1, 13,
     "SUM needs an event attribute"),
    ("missing_return_item", parse_query, "RETURN PATTERN A WITHIN 5", 1, 8,
     "expected a RETURN item (an aggregate or an attribute) but found 'PATTERN'"),
    ("duplicate_names", parse_queries, "q1: PATTERN A WITHIN 5\nq1: PATTERN B WITHIN 5", 2, 1,
     "query name 'q1' is used twice"),
    ("duplicate_implicit_name", parse_queries, "q2: PATTERN A WITHIN 5; PATTERN B WITHIN 5", 1, 25,
     "query name 'q2' is used twice (query 2 has no name, so it is named q2)"),
    ("duplicate_of_implicit_name", parse_queries, "PATTERN A WITHIN 5\n  q1: PATTERN B WITHIN 5", 2, 3,
     "query name 'q1' is used twice (query 1 has no name, so it is named q1)"),
    ("unknown_ref_where", parse_query, "PATTERN SEQ(A a, B) WHERE c.x = 1 WITHIN 5", 1, 27,
     "unknown event type 'c'"),
    ("unknown_ref_return", parse_query, "RETURN SUM(X.y) PATTERN A WITHIN 5", 1, 12, "unknown event type 'X'"),
    ("unknown_ref_group_by", parse_query, "PATTERN A\nGROUP-BY A.k, Z.k WITHIN 5", 2, 15,
     "unknown event type 'Z'"),
    ("variable_twice", parse_query, "PATTERN SEQ(A a, B a) WITHIN 5", 1, 20,
     "variable 'a' is bound twice in the pattern"),
    ("variable_is_type", parse_query, "PATTERN SEQ(A B, B) WITHIN 5", 1, 15,
     "variable 'B' is also an event type of the pattern"),
    ("reserved_type", parse_query, "PATTERN SEQ(A, WHERE) WITHIN 5", 1, 16,
     "expected an event type or a pattern but found 'WHERE'"),
    ("operator_without_paren", parse_query, "PATTERN SEQ A WITHIN 5", 1, 13, "expected '(' after SEQ but found 'A'"),
    ("missing_operator", parse_query, "PATTERN A WHERE A.x AND A.y = 1 WITHIN 5", 1, 21,
     "expected a comparison operator (=, !=, <, <=, >, >=) but found 'AND'"),
    ("missing_value", parse_query, "PATTERN A WHERE A.x > WITHIN 5", 1, 23,
     "expected a value (a number, a string or E.attr) but found 'WITHIN'"),
    ("missing_selectivity", parse_query, "PATTERN A WHERE A.x > 1 SEL WITHIN 5", 1, 29,
     "expected a selectivity in (0, 1] but found 'WITHIN'"),
    ("bad_selectivity", parse_query, "PATTERN SEQ(A a, B b) WHERE a.x < b.x SEL 1.5 WITHIN 5", 1, 43,
     "selectivity must be in (0, 1], got 1.5"),
    ("self_condition", parse_query, "PATTERN A a WHERE a.x < a.y WITHIN 5", 1, 19, "relates an event to itself"),
    ("filter_without_ref", parse_query, "PATTERN A WHERE x = 1 WITHIN 5", 1, 19,
     "expected '.' (a predicate compares E.attr, as in x.attr) but found '='"),
    ("unclosed_equivalence", parse_query, "PATTERN A WHERE [a, b WITHIN 5", 1, 23, "expected ']' but found 'WITHIN'"),
    ("reserved_attribute", parse_query, "PATTERN A WHERE A.count > 1 WITHIN 5", 1, 19,
     "attribute 'count' is a reserved word"),
    ("group_without_by", parse_query, "PATTERN A GROUP A.x WITHIN 5", 1, 17, "expected BY after GROUP but found 'A'"),
    ("too_deep", parse_pattern, "(" * 300 + "A" + ")" * 300, 1, 201, "nested more than 200 levels"),
    ("kleene_chain_too_deep", parse_query, "PATTERN A" + "+" * 1000 + " WITHIN 5", 1, 209,
     "nested more than 200 levels"),
    ("kleene_chains_at_every_level", parse_pattern, "(" * 100 + "A" + ("+" * 100 + ")") * 100, 1, 302,
     "nested more than 200 levels"),
    ("infinite_value", parse_query, "PATTERN A WHERE A.x > 1e999 WITHIN 5", 1, 23, "filter value must be finite"),
    ("reserved_query_name", parse_queries, "SEQ: PATTERN A WITHIN 5", 1, 1, "query name 'SEQ' is a reserved word"),
    ("pattern_trailing", parse_pattern, "SEQ(A, B) C", 1, 11, "expected end of input but found 'C'"),
    ("error_on_later_line", parse_queries,
     "q0\nRETURN A.x, COUNT(*)\nPATTERN SEQ(A, B)\nWHERE A.x = 0\nGROUP-BY A.x\nWITHIN 5 min SLIDE 5 min\n\n"
     "q1\nRETURN A.x, COUNT(*)\nPATTERN SEQ(A, B\nWHERE A.x = 0\nWITHIN 5 min\n", 11, 1,
     "expected ')' but found 'WHERE'"),
]


@pytest.mark.parametrize(("parse", "text", "line", "col", "message"), [e[1:] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])
def test_errors(parse, text, line, col, message):
    with pytest.raises(QuerySyntaxError) as info:
        parse(text)
    assert (info.value.line, info.value.column) == (line, col), str(info.value)
    assert message in str(info.value)
    assert str(info.value).startswith(f"line {line}, column {col}: ")


# ---------------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------------


def _valid_identifier(name: str) -> bool:
    try:
        Type(name)
    except ModelError:
        return False
    return True


TRICKY = ["min", "s", "ms", "h", "d", "sec", "Pool", "GROUP_BY", "group_by", "_x", "é", "Ωmega", "x²", "T1", "e5",
          "q1", "Line_ID"]
# Strategies are built once: building them inside the composite costs more than parsing.
identifiers = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True), st.sampled_from(TRICKY)
).filter(_valid_identifier)
maybe_identifiers = st.none() | identifiers
identifier_sets = st.lists(identifiers, min_size=1, max_size=4, unique=True)
values = st.one_of(
    st.integers(-10**6, 10**20), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6), identifiers
)
durations = st.one_of(
    st.integers(1, 10**7), st.floats(min_value=0, exclude_min=True, allow_nan=False, allow_infinity=False)
)
maybe_durations = st.none() | durations
selectivities = st.one_of(st.none(), st.just(1), st.floats(min_value=0, max_value=1, exclude_min=True))
operators = st.sampled_from(COMPARISON_OPS)
functions = st.sampled_from(["SUM", "AVG", "MIN", "MAX"])
index = st.integers(0, 2**16)
counts = {n: st.integers(0, n) for n in range(1, 6)}
booleans = st.booleans()


@st.composite
def queries(draw, name=None):
    """A random valid Query: nested pattern, variables, predicates, aggregates, group-by, window."""
    types = draw(identifier_sets)
    var_pool = [v for v in draw(st.lists(identifiers, max_size=4, unique=True)) if v not in types]
    used: list[str] = []

    def pick(seq):
        return seq[draw(index) % len(seq)]

    def many(n_max, make, at_least=0):
        return tuple(make() for _ in range(at_least + draw(counts[n_max - at_least])))

    def pattern(depth):
        kind = draw(counts[5]) if depth < 4 else 0
        if kind <= 1:  # a leaf, twice as likely
            var = pick(var_pool) if var_pool and draw(booleans) else None
            if var is not None and var not in used:
                used.append(var)
            else:
                var = None
            return Type(pick(types), var)
        if kind == 2:
            return Kleene(pattern(depth + 1)) if draw(booleans) else Not(pattern(depth + 1))
        return (Seq, And, Or)[kind - 3](many(3, lambda: pattern(depth + 1), at_least=1))

    p = pattern(0)
    refs = sorted(set(p.event_types()) | set(used))

    def attr_ref():
        return AttrRef(draw(identifiers), pick(refs) if draw(booleans) else None)

    def return_item():
        kind = draw(counts[3])
        if kind == 0:
            return COUNT
        if kind == 1:
            return Aggregate("COUNT", pick(refs))
        if kind == 2:
            return Aggregate(draw(functions), pick(refs), draw(identifiers))
        return attr_ref()

    def predicate():
        kind = draw(counts[2])
        if kind == 0:
            return Equivalence(draw(identifiers))
        if kind == 1 or len(refs) < 2:
            return Filter(pick(refs), draw(identifiers), draw(operators), draw(values), draw(selectivities))
        left = pick(refs)
        right = pick([r for r in refs if r != left])
        return Condition(AttrRef(draw(identifiers), left), draw(operators), AttrRef(draw(identifiers), right),
                         draw(selectivities))

    length, slide = draw(durations), draw(maybe_durations)
    window = Window(length) if slide is None else Window(max(length, slide), min(length, slide))  # slide <= length
    return Query(
        pattern=p,
        window=window,
        returns=many(3, return_item, at_least=1),
        where=many(4, predicate),
        group_by=many(2, attr_ref),
        name=draw(maybe_identifiers) if name is None else name,
    )


@st.composite
def workloads(draw):
    qs = draw(st.lists(queries(), min_size=1, max_size=4))
    try:
        return Workload(tuple(qs))
    except ModelError:
        assume(False)


@settings(max_examples=200)
@given(queries())
def test_query_round_trip(q):
    text = format_query(q)
    assert "\n" not in text
    assert parse_query(text) == q
    assert parse_pattern(format_pattern(q.pattern)) == q.pattern


@settings(max_examples=100)
@given(workloads())
def test_workload_round_trip(w):
    text = format_workload(w)
    assert len(text.splitlines()) == len(w)
    assert parse_queries(text) == w


@settings(max_examples=100)
@given(queries(), st.sampled_from([";", " ; ", "\n", "\n\n;\n"]))
def test_separators_round_trip(q, sep):
    w = Workload((q, q.__class__(q.pattern, q.window, q.returns, q.where, q.group_by, "other_name")))
    assert parse_queries(sep.join(format_query(x) for x in w)) == w


# ---------------------------------------------------------------------------------------------
# The published Gloria workload files
# ---------------------------------------------------------------------------------------------


def test_gloria_workload_files(shared_dir):
    files = sorted((shared_dir / "anchors-data" / "gloria" / "workloads").rglob("workload_*.txt"))
    assert files, "no Gloria workload files found"
    total = 0
    for path in files:
        try:
            w = parse_queries(path.read_text())
        except QuerySyntaxError as exc:  # pragma: no cover - the failure message names the file
            pytest.fail(f"{path}: {exc}")
        assert len(w) > 0 and w.names[0] == "q0", path
        total += len(w)
    assert total > 1000
