"""The text query language of the papers (SASE-like) and its canonical printer.

A query is ``[name:] [RETURN items] PATTERN p [WHERE preds] [GROUP-BY keys] WITHIN d [SLIDE d]``::

    q1: RETURN T.district, COUNT(*), SUM(T.duration)
        PATTERN SEQ(Request R, Travel T+, NOT Pickup P)
        WHERE [driver, rider] AND T.duration > 3
        GROUP-BY T.district
        WITHIN 30 min SLIDE 1 min

* Keywords are case-insensitive; event types, variables and attributes are case-sensitive.
  ``GROUP BY`` and ``GROUP_BY`` mean ``GROUP-BY``; ``WINDOW`` means ``WITHIN``.
* RETURN items (default ``COUNT(*)``): ``COUNT(*)``, ``COUNT(E)``, ``SUM|AVG|MIN|MAX(E.attr)``,
  ``attr`` and ``E.attr``.
* Patterns: ``A``, ``A a`` (type bound to a variable), ``SEQ(p, ...)``, ``AND(p, ...)``,
  ``OR(p, ...)``, ``NOT p`` / ``NOT(p)``, ``KL(p)`` / postfix ``p+``; ``(p, q)`` is ``SEQ(p, q)``
  and ``(p)`` is ``p``.
* WHERE: predicates joined by AND: ``[attr, ...]`` (one equivalence per attribute),
  ``E.attr op value`` (a filter; the value is a number, a string ``'...'`` or ``"..."`` with
  backslash escapes ``\\n \\t \\r \\xHH \\uHHHH \\UHHHHHHHH``, or a bare identifier, which is a
  string), ``a.x op b.y`` (a condition); filters and conditions take an optional ``SEL s``
  selectivity. Operators ``= != < <= > >=`` (``==`` is ``=``, ``<>`` is ``!=``).
* Durations: a number with an optional unit (``ms``, ``s``/``sec``, ``min``, ``h``, ``d``) on the
  same line; bare numbers are in the stream's time unit (seconds).
* Several queries per text: one after another, optionally separated by ``;``. A query is named by
  ``name:`` or by a line holding only the name (the Gloria workload files). ``#`` starts a comment.

Every syntax error raises :class:`cepopt.errors.QuerySyntaxError` with 1-based line and column.
The printer is canonical and ``parse(format(x)) == x`` for every valid model object.

>>> q = parse_query("RETURN COUNT(*) PATTERN SEQ(A, B+, NOT C) WHERE A.x > 3 WITHIN 2 min SLIDE 30")
>>> q.window
Window(length=120, slide=30)
>>> format_query(q)
'RETURN COUNT(*) PATTERN SEQ(A, B+, NOT(C)) WHERE A.x > 3 WITHIN 120 SLIDE 30'
>>> parse_query(format_query(q)) == q
True
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import NamedTuple

from cepopt.errors import ModelError, QuerySyntaxError
from cepopt.model import (
    _KEYWORDS,
    AGGREGATE_FUNCTIONS,
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
    Pattern,
    Predicate,
    Query,
    Seq,
    Type,
    Window,
    Workload,
)

__all__ = [
    "format_pattern", "format_query", "format_workload", "parse_duration", "parse_pattern",
    "parse_queries", "parse_query",
]

# ---------------------------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------------------------

_IDENT, _NUMBER, _STRING, _OP, _EOF = "identifier", "number", "string", "op", "end"

# Each match is optional blanks and comments followed by one token (or the end of the text).
_TOKEN_RE = re.compile(
    r"""
    (?:\s+|\#[^\n]*)*
    (?:
     (?P<ident>(?i:GROUP)-(?i:BY)(?!\w)|[^\W\d]\w*)
    |(?P<op><=|>=|!=|<>|==|[=<>()\[\],.*+\-:;])
    |(?P<number>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
    |(?P<string>'(?:[^'\\\n]|\\[^\n])*'|"(?:[^"\\\n]|\\[^\n])*")
    |(?P<end>\Z)
    |(?P<bad>.)
    )
    """,
    re.VERBOSE | re.DOTALL,
)
_OP_ALIASES = {"==": "=", "<>": "!="}
_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)")
_PRINT_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}

_UNITS: dict[str, int | Fraction] = {}
for _names, _factor in (
    (("ms", "msec", "msecs", "millisecond", "milliseconds"), Fraction(1, 1000)),
    (("s", "sec", "secs", "second", "seconds"), 1),
    (("min", "mins", "minute", "minutes"), 60),
    (("h", "hr", "hrs", "hour", "hours"), 3600),
    (("d", "day", "days"), 86400),
):
    for _name in _names:
        _UNITS[_name] = _factor

_RESERVED = frozenset(_KEYWORDS)


class _Token(NamedTuple):
    kind: str
    text: str
    key: str  # upper-cased identifier, normalised operator, "GROUP-BY"; "" otherwise
    pos: int  # offset in the text (line and column are computed only for error messages)


def _location(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column of offset ``pos``."""
    return text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)


def _tokenize(text: str) -> list[_Token]:
    if not isinstance(text, str):
        raise TypeError(f"query text must be a str, got {type(text).__name__}")
    tokens: list[_Token] = []
    append = tokens.append
    new = tuple.__new__  # _Token(...) without the Python-level __new__: tokenizing is the hot loop
    for m in _TOKEN_RE.finditer(text):  # every position matches (a token, the end, or a bad character)
        group = m.lastindex
        if group == 1:  # identifier (GROUP-BY is one token)
            tok_text = m.group(1)
            append(new(_Token, (_IDENT, tok_text, tok_text.upper(), m.start(1))))
        elif group == 2:
            tok_text = m.group(2)
            append(new(_Token, (_OP, tok_text, _OP_ALIASES.get(tok_text, tok_text), m.start(2))))
        elif group == 3:
            append(new(_Token, (_NUMBER, m.group(3), "", m.start(3))))
        elif group == 4:
            append(new(_Token, (_STRING, m.group(4), "", m.start(4))))
        elif group == 5:  # end of text
            break
        elif m.group(6) in "'\"":
            raise QuerySyntaxError("unterminated string (a string ends on the line it starts)",
                                   *_location(text, m.start(6)))
        else:
            raise QuerySyntaxError(f"unexpected character {m.group(6)!r}", *_location(text, m.start(6)))
    # Several end tokens so that peek(k) never runs off the list.
    tokens.extend([_Token(_EOF, "", "", len(text))] * 3)
    return tokens


def _describe(tok: _Token) -> str:
    return "end of input" if tok.kind == _EOF else f"'{tok.text}'"


def _unescape_one(m: re.Match) -> str:
    code = m.group(1)
    if len(code) > 1:
        return chr(int(code[1:], 16))  # ValueError beyond U+10FFFF, OverflowError beyond 2**31
    return _ESCAPES.get(code, code)


def _unescape(text: str) -> str:
    """The value of a string token: quotes removed, escapes (\\n \\t \\r \\xHH \\uHHHH
    \\UHHHHHHHH, and backslash before any other character) resolved."""
    return _ESCAPE_RE.sub(_unescape_one, text[1:-1])


def _seconds(value: int | float | Fraction) -> int | float:
    """A duration as the model stores it: int when exact and integral, else the nearest float."""
    if isinstance(value, float):
        return value
    return int(value) if value.denominator == 1 else float(value)


# ---------------------------------------------------------------------------------------------
# Parser
# ---------------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.depth = 0
        self.var_toks: list[tuple[str, str, _Token]] = []  # (variable, its type, token)
        self.leaves: dict[tuple, Type | AttrRef] = {}  # see leaf()

    # -- helpers ------------------------------------------------------------------------------

    def peek(self, k: int = 0) -> _Token:
        return self.toks[self.i + k]

    def advance(self) -> _Token:
        tok = self.toks[self.i]
        if tok.kind != _EOF:
            self.i += 1
        return tok

    def at_end(self) -> bool:
        return self.toks[self.i].kind == _EOF

    def error(self, message: str, tok: _Token) -> QuerySyntaxError:
        return QuerySyntaxError(message, *_location(self.text, tok.pos))

    def expected(self, what: str, tok: _Token | None = None) -> QuerySyntaxError:
        tok = tok if tok is not None else self.peek()
        return self.error(f"expected {what} but found {_describe(tok)}", tok)

    def expect(self, key: str, what: str | None = None) -> _Token:
        tok = self.peek()
        if tok.key != key or tok.kind == _EOF:
            raise self.expected(what or f"'{key}'", tok)
        return self.advance()

    def is_name(self, tok: _Token) -> bool:
        return tok.kind == _IDENT and tok.key not in _RESERVED and tok.key != "GROUP-BY"

    def name(self, what: str, *, reserved_ok: bool = False) -> _Token:
        """An identifier; with reserved_ok a reserved word is reported as such (after '.' or '[')."""
        tok = self.peek()
        if self.is_name(tok):
            return self.advance()
        if reserved_ok and tok.kind == _IDENT:
            noun = what.removeprefix("an ").removeprefix("a ")
            raise self.error(f"{noun} {tok.text!r} is a reserved word", tok)
        raise self.expected(what, tok)

    def build(self, tok: _Token, cls, *args):
        try:
            return cls(*args)
        except ModelError as exc:
            raise self.error(str(exc), tok) from None

    def leaf(self, tok: _Token, cls: type[Type] | type[AttrRef], *names: str) -> Type | AttrRef:
        """``build(tok, cls, *names)`` for an event type or an attribute reference, one instance per parse:
        they are immutable values, a workload names the same few in every query, and each new one checks
        its names again (a third of parsing a published 100-query workload was such checks and inits)."""
        key = (cls, names)
        obj = self.leaves.get(key)
        if obj is None:
            obj = self.leaves[key] = self.build(tok, cls, *names)
        return obj

    def number(self, tok: _Token, exact: bool = False) -> int | float | Fraction:
        """A number token's value: an int for plain digits, else a float; with ``exact`` (durations,
        where 0.1 min is 6 s) a Fraction, but only for a finite non-zero float: Fraction builds
        10**exponent, which takes minutes for 1e999999999."""
        try:
            if tok.text.isdigit():
                return int(tok.text)
            value = float(tok.text)
            return Fraction(tok.text) if exact and math.isfinite(value) and value != 0 else value
        except ValueError:  # int() and Fraction() refuse more digits than sys.get_int_max_str_digits()
            raise self.error(f"number too long ({len(tok.text)} characters)", tok) from None

    def groupby_len(self) -> int:
        """Tokens of a GROUP-BY keyword at the cursor (GROUP-BY, GROUP BY, GROUP_BY), else 0."""
        tok = self.peek()
        if tok.key in ("GROUP-BY", "GROUP_BY") and tok.kind == _IDENT:
            return 1
        if tok.key == "GROUP" and tok.kind == _IDENT:
            if self.peek(1).key != "BY" or self.peek(1).kind != _IDENT:
                raise self.expected("BY after GROUP", self.peek(1))
            return 2
        return 0

    # -- durations ----------------------------------------------------------------------------

    def duration(self, what: str = "duration") -> tuple[int | float, _Token]:
        """A duration in seconds and its number token."""
        tok = self.peek()
        if tok.kind != _NUMBER:
            raise self.expected("a duration (a number with an optional unit: ms, s, min, h)", tok)
        self.advance()
        value = self.number(tok, exact=True)
        unit = self.peek()
        if unit.kind == _IDENT and self.peek(1).key != ":" and "\n" not in self.text[tok.pos:unit.pos]:
            factor = _UNITS.get(unit.text.lower())
            if factor is not None:
                self.advance()
                value *= factor
            elif self.is_name(unit) and unit.key != "GROUP_BY" and self.peek(1).key not in (
                "RETURN", "PATTERN"
            ):
                raise self.error(f"unknown time unit {unit.text!r} (use ms, s, min, h or d)", unit)
        try:
            too_large = math.isinf(value)
        except OverflowError:  # an int or Fraction beyond the float range
            too_large = True
        if too_large:
            raise self.error(f"{what} is too large", tok)
        return _seconds(value), tok

    def window_number(self, what: str) -> float:
        seconds, tok = self.duration(f"window {what}")
        if not seconds > 0:  # 0, or a positive duration that underflows to 0.0
            raise self.error(f"window {what} must be > 0, got {tok.text}", tok)
        return seconds

    # -- patterns -----------------------------------------------------------------------------

    def pattern(self) -> Pattern:
        self.depth += 1
        if self.depth > MAX_PATTERN_DEPTH:
            raise self.error(f"pattern nested more than {MAX_PATTERN_DEPTH} levels deep", self.peek())
        try:
            tok = self.peek()
            if tok.key == "NOT" and tok.kind == _IDENT:
                self.advance()
                paren = self.peek()
                if paren.kind == _OP and paren.key == "(":
                    # NOT(p) spends one nesting level, as SEQ(p) does: the printer writes NOT(p), and
                    # whatever the model holds must parse back (NOT(p)+ still means NOT((p)+)).
                    self.advance()
                    items = self.pattern_list()
                    inner = items[0] if len(items) == 1 else self.build(paren, Seq, items)
                    return self.build(tok, Not, self.postfix(inner))
                return self.build(tok, Not, self.pattern())
            return self.postfix(self.primary())
        finally:
            self.depth -= 1

    def postfix(self, result: Pattern) -> Pattern:
        """``result`` followed by any number of ``+`` (Kleene plus)."""
        while self.peek().key == "+" and self.peek().kind == _OP:
            result = self.build(self.advance(), Kleene, result)
        return result

    def pattern_list(self) -> tuple[Pattern, ...]:
        items = [self.pattern()]
        while self.peek().key == "," and self.peek().kind == _OP:
            self.advance()
            items.append(self.pattern())
        self.expect(")")
        return tuple(items)

    def primary(self) -> Pattern:
        tok = self.peek()
        if tok.kind == _OP and tok.key == "(":
            self.advance()
            items = self.pattern_list()
            return items[0] if len(items) == 1 else self.build(tok, Seq, items)
        if tok.kind != _IDENT:
            raise self.expected("an event type or a pattern", tok)
        if tok.key in ("SEQ", "AND", "OR", "KL"):
            self.advance()
            self.expect("(", f"'(' after {tok.text}")
            if tok.key == "KL":
                inner = self.pattern()
                self.expect(")")
                return self.build(tok, Kleene, inner)
            cls = {"SEQ": Seq, "AND": And, "OR": Or}[tok.key]
            return self.build(tok, cls, self.pattern_list())
        if not self.is_name(tok):
            raise self.expected("an event type or a pattern", tok)
        self.advance()
        var = self.peek()
        if self.is_name(var) and not (
            var.key == "GROUP_BY" and self.is_name(self.peek(1))  # GROUP_BY key: a clause
        ):
            self.advance()
            self.var_toks.append((var.text, tok.text, var))
            return self.leaf(var, Type, tok.text, var.text)
        return self.leaf(tok, Type, tok.text)

    # -- RETURN, WHERE, GROUP-BY ----------------------------------------------------------------

    def attr_ref(self, uses: list, what: str) -> AttrRef:
        first = self.name(what)
        if self.peek().key == "." and self.peek().kind == _OP:
            self.advance()
            attr = self.name("an attribute", reserved_ok=True)
            uses.append((first.text, first))
            return self.leaf(attr, AttrRef, attr.text, first.text)
        return self.leaf(first, AttrRef, first.text)

    def return_item(self, uses: list) -> Aggregate | AttrRef:
        tok = self.peek()
        if tok.kind == _IDENT and self.peek(1).key == "(" and self.peek(1).kind == _OP:
            func = tok.key
            if func not in AGGREGATE_FUNCTIONS:
                raise self.error(
                    f"unknown aggregate {tok.text!r} (use one of {', '.join(AGGREGATE_FUNCTIONS)})", tok)
            self.advance()
            self.advance()
            if func == "COUNT":
                if self.peek().key == "*" and self.peek().kind == _OP:
                    self.advance()
                    agg = Aggregate("COUNT")
                else:
                    ref = self.name("'*' or an event type")
                    if self.peek().key == "." and self.peek().kind == _OP:
                        raise self.error("COUNT takes * or an event type, not an attribute", self.peek())
                    uses.append((ref.text, ref))
                    agg = self.build(ref, Aggregate, "COUNT", ref.text)
            else:
                ref = self.name("an event type")
                self.expect(".", f"'.' ({func} needs an event attribute, as in {func}(E.attr))")
                attr = self.name("an attribute", reserved_ok=True)
                uses.append((ref.text, ref))
                agg = self.build(attr, Aggregate, func, ref.text, attr.text)
            self.expect(")")
            return agg
        return self.attr_ref(uses, "a RETURN item (an aggregate or an attribute)")

    def predicates(self, uses: list) -> list[Predicate]:
        preds = self.predicate(uses)
        while self.peek().key == "AND" and self.peek().kind == _IDENT:
            self.advance()
            preds.extend(self.predicate(uses))
        return preds

    def predicate(self, uses: list) -> list[Predicate]:
        start = self.peek()
        if start.kind == _OP and start.key == "[":
            self.advance()
            attrs = [self.name("an attribute", reserved_ok=True)]
            while self.peek().key == "," and self.peek().kind == _OP:
                self.advance()
                attrs.append(self.name("an attribute", reserved_ok=True))
            self.expect("]")
            return [self.build(a, Equivalence, a.text) for a in attrs]
        ref = self.name("a predicate ([attr] or E.attr op value)")
        self.expect(".", f"'.' (a predicate compares E.attr, as in {ref.text}.attr)")
        attr = self.name("an attribute", reserved_ok=True)
        uses.append((ref.text, ref))
        op_tok = self.peek()
        if op_tok.kind != _OP or op_tok.key not in _COMPARISONS:
            raise self.expected("a comparison operator (=, !=, <, <=, >, >=)", op_tok)
        self.advance()
        op = op_tok.key
        tok = self.peek()
        right: AttrRef | None = None
        value: int | float | str
        if tok.kind == _OP and tok.key == "-" and self.peek(1).kind == _NUMBER:
            self.advance()
            value = -self.number(self.advance())
        elif tok.kind == _NUMBER:
            value = self.number(self.advance())
        elif tok.kind == _STRING:
            self.advance()
            try:
                value = _unescape(tok.text)
            except (ValueError, OverflowError):
                raise self.error("bad escape in string (\\U code point beyond 10FFFF)", tok) from None
        elif self.is_name(tok):
            self.advance()
            if self.peek().key == "." and self.peek().kind == _OP:
                self.advance()
                rattr = self.name("an attribute", reserved_ok=True)
                uses.append((tok.text, tok))
                right = self.leaf(rattr, AttrRef, rattr.text, tok.text)
            value = tok.text
        else:
            raise self.expected("a value (a number, a string or E.attr)", tok)
        sel = None
        if self.peek().key == "SEL" and self.peek().kind == _IDENT:
            self.advance()
            sel_tok = self.peek()
            if sel_tok.kind != _NUMBER:
                raise self.expected("a selectivity in (0, 1]", sel_tok)
            self.advance()
            sel = self.number(sel_tok)
            if not 0 < sel <= 1:
                raise self.error(f"selectivity must be in (0, 1], got {sel_tok.text}", sel_tok)
        if right is not None:
            left = self.leaf(attr, AttrRef, attr.text, ref.text)
            return [self.build(start, Condition, left, op, right, sel)]
        return [self.build(tok, Filter, ref.text, attr.text, op, value, sel)]

    # -- queries ------------------------------------------------------------------------------

    def query(self) -> tuple[Query, _Token, _Token | None]:
        """One query; returns it with its first token and its name token (None if unnamed)."""
        start = self.peek()
        name_tok = None
        if start.kind == _IDENT and start.key not in ("RETURN", "PATTERN"):
            after = self.peek(1)
            if after.kind == _OP and after.key == ":":
                name_tok = start
                self.i += 2
            elif after.kind == _IDENT and after.key in ("RETURN", "PATTERN"):
                name_tok = start
                self.i += 1
            else:
                raise self.expected("a query (RETURN or PATTERN, optionally after 'name:')", start)
        self.var_toks = []
        uses: list[tuple[str, _Token]] = []
        returns = None
        tok = self.peek()
        if tok.kind == _IDENT and tok.key == "RETURN":
            self.advance()
            returns = [self.return_item(uses)]
            while self.peek().key == "," and self.peek().kind == _OP:
                self.advance()
                returns.append(self.return_item(uses))
        tok = self.peek()
        if tok.kind != _IDENT or tok.key != "PATTERN":
            if returns is not None:
                raise self.expected("',' or PATTERN", tok)
            raise self.expected("a query (RETURN or PATTERN)", tok)
        self.advance()
        pattern = self.pattern()
        where: list[Predicate] = []
        group_by: list[AttrRef] = []
        follow = "WHERE, GROUP-BY or WITHIN"
        tok = self.peek()
        if tok.kind == _IDENT and tok.key == "WHERE":
            self.advance()
            where = self.predicates(uses)
            follow = "AND, GROUP-BY or WITHIN"
        n = self.groupby_len()
        if n:
            self.i += n
            group_by = [self.attr_ref(uses, "a GROUP-BY attribute")]
            while self.peek().key == "," and self.peek().kind == _OP:
                self.advance()
                group_by.append(self.attr_ref(uses, "a GROUP-BY attribute"))
            follow = "',' or WITHIN"
        tok = self.peek()
        if tok.kind != _IDENT or tok.key not in ("WITHIN", "WINDOW"):
            raise self.expected(follow, tok)
        self.advance()
        length = self.window_number("length")
        slide = None
        if self.peek().kind == _IDENT and self.peek().key == "SLIDE":
            self.advance()
            slide = self.window_number("slide")
        window = self.build(tok, Window, length, slide)

        # References: point at the offending token rather than at the query.
        types = set(pattern.event_types())
        seen: set[str] = set()
        for var, type_name, var_tok in self.var_toks:
            if var in seen:
                raise self.error(f"variable {var!r} is bound twice in the pattern", var_tok)
            if var in types and var != type_name:
                raise self.error(f"variable {var!r} is also an event type of the pattern", var_tok)
            seen.add(var)
        refs = types | seen
        for ref, ref_tok in uses:
            if ref not in refs:
                raise self.error(f"unknown event type {ref!r} (not an event type or variable of the "
                                 "pattern)", ref_tok)
        args = [pattern, window, tuple(returns) if returns is not None else (Aggregate("COUNT"),),
                tuple(where), tuple(group_by), name_tok.text if name_tok is not None else None]
        return self.build(name_tok or start, Query, *args), start, name_tok

    def skip_semicolons(self) -> None:
        while self.peek().kind == _OP and self.peek().key == ";":
            self.advance()

    def finish(self, what: str = "end of input") -> None:
        if not self.at_end():
            raise self.expected(what)

    def check_not_empty(self) -> None:
        if self.at_end():
            raise self.error("empty input: expected a query (RETURN or PATTERN)", self.peek())


# ---------------------------------------------------------------------------------------------
# Public API: parsing
# ---------------------------------------------------------------------------------------------


def parse_queries(text: str) -> Workload:
    """Parse several queries (a workload); unnamed queries are named q1, q2, ... by position.

    >>> w = parse_queries('''q0
    ... PATTERN SEQ(A, B+) WITHIN 10 min SLIDE 5 min
    ... fast: RETURN A.x PATTERN A WITHIN 1 s; PATTERN OR(A, C) WITHIN 500 ms''')
    >>> w.names
    ('q0', 'fast', 'q3')
    >>> w["q3"].window.length
    0.5
    """
    parser = _Parser(text)
    parser.skip_semicolons()
    parser.check_not_empty()
    queries: list[Query] = []
    implicit: dict[str, int] = {}  # name -> position, for the unnamed queries
    names: set[str] = set()
    while not parser.at_end():
        query, start, name_tok = parser.query()
        position = len(queries) + 1
        name = query.name if query.name is not None else f"q{position}"
        if name in names:
            if name_tok is None:
                raise parser.error(f"query name {name!r} is used twice (query {position} has no name, "
                                   f"so it is named {name})", start)
            note = f" (query {implicit[name]} has no name, so it is named {name})" if name in implicit else ""
            raise parser.error(f"query name {name!r} is used twice{note}", name_tok)
        if name_tok is None:
            implicit[name] = position
        names.add(name)
        queries.append(query)
        parser.skip_semicolons()
    try:
        return Workload(tuple(queries))
    except ModelError as exc:  # pragma: no cover - names are checked above
        raise QuerySyntaxError(str(exc), 1, 1) from None


def parse_query(text: str) -> Query:
    """Parse exactly one query.

    >>> q = parse_query("PATTERN SEQ(A a, B b, NOT(C c), KL(D d)) WHERE a.x < b.x SEL 0.3 WITHIN 10 s")
    >>> q.pattern
    Seq(items=(Type(name='A', var='a'), Type(name='B', var='b'), Not(inner=Type(name='C', var='c')), \
Kleene(inner=Type(name='D', var='d'))))
    >>> q.conditions[0].selectivity
    0.3
    """
    parser = _Parser(text)
    parser.skip_semicolons()
    parser.check_not_empty()
    query, _, _ = parser.query()
    parser.skip_semicolons()
    parser.finish("end of input (parse_query reads one query; use parse_queries for several)")
    return query


def parse_pattern(text: str) -> Pattern:
    """Parse a pattern.

    >>> parse_pattern("SEQ(A, (B, C)+, NOT D)")
    Seq(items=(Type(name='A', var=None), Kleene(inner=Seq(items=(Type(name='B', var=None), \
Type(name='C', var=None)))), Not(inner=Type(name='D', var=None))))
    """
    parser = _Parser(text)
    if parser.at_end():
        raise parser.error("empty input: expected a pattern", parser.peek())
    pattern = parser.pattern()
    parser.finish()
    return pattern


def parse_duration(text: str) -> int | float:
    """Parse a duration into seconds (bare numbers are already in the time unit).

    >>> parse_duration("20 min"), parse_duration("500 ms"), parse_duration("1.5h"), parse_duration("7")
    (1200, 0.5, 5400, 7)
    """
    parser = _Parser(text)
    seconds, _ = parser.duration()
    tok = parser.peek()
    if tok.kind == _IDENT and parser.peek(1).kind == _EOF:
        raise parser.error(f"unknown time unit {tok.text!r} (use ms, s, min, h or d)", tok)
    parser.finish()
    return seconds


# ---------------------------------------------------------------------------------------------
# Public API: printing
# ---------------------------------------------------------------------------------------------


def _format_number(x: int | float) -> str:
    return str(x) if isinstance(x, int) else repr(float(x))


def _escape_char(c: str) -> str:
    if c in _PRINT_ESCAPES:
        return _PRINT_ESCAPES[c]
    if c.isprintable():
        return c
    code = ord(c)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _format_string(s: str) -> str:
    """Single-quoted, with quotes, backslashes and every non-printable character escaped (so the
    text of a query never spans lines)."""
    if s.isprintable() and "\\" not in s and "'" not in s:
        return f"'{s}'"
    return "'" + "".join(_escape_char(c) for c in s) + "'"


def _format_value(v: int | float | str) -> str:
    return _format_string(v) if isinstance(v, str) else _format_number(v)


def format_pattern(p: Pattern) -> str:
    """Canonical text of a pattern (NOT as ``NOT(...)``, Kleene as ``X+`` or ``KL(D d)``).

    >>> format_pattern(Seq((Type("A", "a"), Kleene(Type("B")), Kleene(Type("D", "d")), Not(Type("C")))))
    'SEQ(A a, B+, KL(D d), NOT(C))'
    """
    if isinstance(p, Type):
        return p.name if p.var is None else f"{p.name} {p.var}"
    if isinstance(p, Seq | And | Or):
        return f"{type(p).__name__.upper()}({', '.join(format_pattern(item) for item in p.items)})"
    if isinstance(p, Kleene):
        inner = p.inner
        if (isinstance(inner, Type) and inner.var is not None) or isinstance(inner, Not):
            return f"KL({format_pattern(inner)})"
        return f"{format_pattern(inner)}+"
    if isinstance(p, Not):
        return f"NOT({format_pattern(p.inner)})"
    raise ModelError(f"not a pattern: {p!r}")


def _format_attr(a: AttrRef) -> str:
    return a.attr if a.ref is None else f"{a.ref}.{a.attr}"


def _format_return(item: Aggregate | AttrRef) -> str:
    if isinstance(item, AttrRef):
        return _format_attr(item)
    if item.ref is None:
        return f"{item.func}(*)"
    if item.attr is None:
        return f"{item.func}({item.ref})"
    return f"{item.func}({item.ref}.{item.attr})"


def _format_predicate(p: Predicate) -> str:
    if isinstance(p, Equivalence):
        return f"[{p.attr}]"
    if isinstance(p, Filter):
        text = f"{p.ref}.{p.attr} {p.op} {_format_value(p.value)}"
    else:
        text = f"{_format_attr(p.left)} {p.op} {_format_attr(p.right)}"
    if p.selectivity is not None:
        text += f" SEL {_format_number(p.selectivity)}"
    return text


def format_query(q: Query) -> str:
    """Canonical one-line text of a query; durations are printed as plain numbers (seconds).

    >>> format_query(Query(Seq((Type("A"), Type("B"))), Window(1200, 300), name="q1"))
    'q1: RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 1200 SLIDE 300'
    """
    parts = ["RETURN " + ", ".join(_format_return(item) for item in q.returns),
             "PATTERN " + format_pattern(q.pattern)]
    if q.where:
        parts.append("WHERE " + " AND ".join(_format_predicate(p) for p in q.where))
    if q.group_by:
        parts.append("GROUP-BY " + ", ".join(_format_attr(k) for k in q.group_by))
    parts.append("WITHIN " + _format_number(q.window.length))
    if q.window.slide is not None:
        parts.append("SLIDE " + _format_number(q.window.slide))
    text = " ".join(parts)
    return text if q.name is None else f"{q.name}: {text}"


def format_workload(w: Workload) -> str:
    """Canonical text of a workload: one named query per line.

    >>> print(format_workload(Workload((Query(Type("A"), Window(5)), Query(Type("B"), Window(5))))))
    q1: RETURN COUNT(*) PATTERN A WITHIN 5
    q2: RETURN COUNT(*) PATTERN B WITHIN 5
    """
    return "\n".join(format_query(q) for q in w)
