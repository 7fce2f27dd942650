"""Fuzzing the query language: any text parses to a workload that prints and parses back, or raises a
QuerySyntaxError naming line and column; nothing else, and (CEPOPT_FUZZ=1) never more than 5 s."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cepopt.errors import QuerySyntaxError
from cepopt.model import Workload
from cepopt.syntax import format_workload, parse_duration, parse_pattern, parse_queries, parse_query
from tests.fuzz.budget import budget
from tests.fuzz.strategies import nasty_ints, outcome

VALID = [
    "q1: RETURN T.district, COUNT(*), SUM(T.duration) PATTERN SEQ(Request R, Travel T+, NOT Pickup P) "
    "WHERE [driver, rider] AND T.duration > 3 GROUP-BY T.district WITHIN 30 min SLIDE 1 min",
    "PATTERN SEQ(A a, B b, NOT(C c), KL(D d)) WHERE a.x < b.x SEL 0.3 WITHIN 10 s",
    "q0\nPATTERN SEQ(A, B+) WITHIN 10 min SLIDE 5 min\nfast: RETURN A.x PATTERN A WITHIN 1 s; "
    "PATTERN OR(A, C) WITHIN 500 ms",
    "RETURN COUNT(*) PATTERN AND(A, OR(B, C), (D, E)+) WHERE A.s = 'x\\n\\u00e9' AND B.v != -2.5e3 "
    "GROUP BY A.k WINDOW 2 h",
]
TOKENS = ["RETURN", "PATTERN", "WHERE", "GROUP-BY", "GROUP", "BY", "GROUP_BY", "WITHIN", "WINDOW", "SLIDE", "AND",
          "OR", "SEQ", "NOT", "KL", "SEL", "COUNT", "SUM", "AVG", "MIN", "MAX", "(", ")", "[", "]", ",", ".", "*",
          "+", "-", ":", ";", "=", "!=", "<>", "==", "<", "<=", ">", ">=", "A", "B", "b", "x", "q1", "ms", "min",
          "h", "d", "s", "0", "1", "0.5", "1e999", "1e-999", "9" * 400, "'s'", '"t"', "'\\U0011ffff'", "'\\x4",
          "'", '"', "#c\n", "\n", " ", "\t", "\x00", "é", "🎉", "_", "1a"]

token_soup = st.lists(st.sampled_from(TOKENS) | nasty_ints.map(str), max_size=40).map(" ".join)


@st.composite
def mutated_text(draw):
    """A valid query text with a few characters inserted, deleted or replaced."""
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        kind = draw(st.integers(0, 2))
        piece = draw(st.sampled_from(TOKENS) | st.text(max_size=3))
        text = text[:i] + piece + text[i:] if kind == 0 else text[:i] + text[i + 1:] if kind == 1 else \
            text[:i] + piece + text[i + len(piece):]
    return text


texts = st.one_of(st.text(max_size=80), token_soup, mutated_text())


def check_workload(text: str) -> None:
    result = outcome(parse_queries, text)
    if isinstance(result, Workload):
        again = outcome(parse_queries, format_workload(result))
        assert again == result, (text, format_workload(result))
    else:
        assert isinstance(result, QuerySyntaxError), result
        assert str(result).startswith("line ") and result.line >= 1 and result.column >= 1


@budget(150)
@given(texts)
def test_query_text(text):
    check_workload(text)


@budget(60)
@given(texts)
def test_single_query_pattern_and_duration_text(text):
    for parse in (parse_query, parse_pattern, parse_duration):
        result = outcome(parse, text)
        assert not isinstance(result, Exception) or isinstance(result, QuerySyntaxError)


@budget(20)
@given(st.lists(st.sampled_from(VALID), min_size=1, max_size=30), st.sampled_from([";", "\n", " ; ", "\n\n"]))
def test_many_queries_in_one_text(queries, sep):
    check_workload(sep.join(f"n{i}: {q.split(': ', 1)[-1]}" if ":" in q[:4] else q for i, q in enumerate(queries)))
