"""The domain: event patterns, predicates, aggregates, windows, queries, workloads and statistics.

Every object is a frozen dataclass: immutable, hashable, compared by value and validated on
construction (a bad value raises :class:`cepopt.errors.ModelError`). Times are plain numbers in the
stream's time unit (seconds in every paper); the query language converts ``min``/``h``/``ms``.

Pattern AST::

    Type("A")                 an event of type A (optionally bound to a variable: Type("A", "a"))
    Seq((p1, p2, ...))        p1 then p2 then ... (strictly increasing time in Sharon/Hamlet/Gloria,
                              non-decreasing in the join-order family, as its spec says)
    And((p1, p2, ...))        all of them within the window, in any order
    Or((p1, p2, ...))         any one of them
    Kleene(p)                 one or more repetitions of p (``p+``, ``KL(p)``)
    Not(p)                    p is absent (at that position of a SEQ)

>>> q = Seq((Type("A"), Kleene(Type("B")), Type("C")))
>>> q.event_types()
('A', 'B', 'C')
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Union

from cepopt.errors import ModelError

__all__ = [
    "Aggregate", "And", "AttrRef", "Condition", "Equivalence", "Filter", "Kleene", "Not", "Or",
    "Pattern", "Predicate", "Query", "Seq", "Statistics", "Type", "Window", "Workload",
    "AGGREGATE_FUNCTIONS", "COMPARISON_OPS", "MAX_PATTERN_DEPTH", "check_window_number",
]

AGGREGATE_FUNCTIONS = ("COUNT", "SUM", "AVG", "MIN", "MAX")
COMPARISON_OPS = ("=", "!=", "<", "<=", ">", ">=")
MAX_PATTERN_DEPTH = 200  # deeper patterns would overflow the recursive walks (iter_types, printing)
_KEYWORDS = frozenset({
    "RETURN", "PATTERN", "WHERE", "GROUP", "BY", "GROUP-BY", "WITHIN", "WINDOW", "SLIDE", "AND",
    "OR", "SEQ", "NOT", "KL", "SEL", "COUNT", "SUM", "AVG", "MIN", "MAX",
})


_ASCII_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_identifier(name: object, what: str) -> None:
    if not isinstance(name, str):
        raise ModelError(f"{what} must be an identifier, got {name!r}")
    if _ASCII_IDENTIFIER.fullmatch(name) is None and (  # the common case first: loading is a hot path
        not name or not (name[0].isalpha() or name[0] == "_") or not all(c.isalnum() or c == "_" for c in name)
    ):
        raise ModelError(f"{what} must be an identifier, got {name!r}")
    if name.upper() in _KEYWORDS:
        raise ModelError(f"{what} {name!r} is a reserved word")


# ---------------------------------------------------------------------------------------------
# Patterns
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Type:
    """One event of type ``name``, optionally bound to a variable (``A a`` in the join-order form)."""

    name: str
    var: str | None = None
    _height = 1  # a class attribute, not a field: see _set_height

    def __post_init__(self) -> None:
        _check_identifier(self.name, "event type")
        if self.var is not None:
            _check_identifier(self.var, "variable")

    @property
    def ref(self) -> str:
        """The name predicates use for this event: its variable if it has one, else its type."""
        return self.var if self.var is not None else self.name


@dataclass(frozen=True)
class _Nary:
    items: tuple[Pattern, ...]

    def __post_init__(self) -> None:
        items = tuple(self.items)
        object.__setattr__(self, "items", items)
        if not items:
            raise ModelError(f"{type(self).__name__.upper()} needs at least one operand")
        for item in items:
            if not isinstance(item, _PATTERN_CLASSES):
                raise ModelError(f"{type(self).__name__.upper()} operand is not a pattern: {item!r}")
        _set_height(self, items)


@dataclass(frozen=True)
class Seq(_Nary):
    """A sequence of sub-patterns."""


@dataclass(frozen=True)
class And(_Nary):
    """A conjunction: every sub-pattern occurs within the window, in any order."""


@dataclass(frozen=True)
class Or(_Nary):
    """A disjunction: any one of the sub-patterns."""


@dataclass(frozen=True)
class _Unary:
    inner: Pattern

    def __post_init__(self) -> None:
        if not isinstance(self.inner, _PATTERN_CLASSES):
            raise ModelError(f"{type(self).__name__} operand is not a pattern: {self.inner!r}")
        _set_height(self, (self.inner,))


@dataclass(frozen=True)
class Kleene(_Unary):
    """Kleene plus: one or more occurrences of ``inner``."""


@dataclass(frozen=True)
class Not(_Unary):
    """Negation: ``inner`` does not occur (between its neighbours, inside a SEQ)."""


Pattern = Union[Type, Seq, And, Or, Kleene, Not]
#: the pattern classes as a tuple for isinstance: ``Type | Seq | ...`` would build a new union object on
#: every check, and the model checks every node it is given (parsing 100 queries made 4 % of it)
_PATTERN_CLASSES = (Type, Seq, And, Or, Kleene, Not)


def _set_height(node: _Nary | _Unary, children: tuple[Pattern, ...]) -> None:
    """Store the node's height (not a field: no effect on equality or repr) and bound it; the
    parser's nesting limit alone misses chains of postfix ``+``."""
    height = 1 + max(child._height for child in children)
    if height > MAX_PATTERN_DEPTH:
        raise ModelError(f"pattern nested more than {MAX_PATTERN_DEPTH} levels deep")
    object.__setattr__(node, "_height", height)


def iter_types(pattern: Pattern) -> Iterator[Type]:
    """Every Type leaf of ``pattern``, left to right (repeats included)."""
    stack = [pattern]  # a stack, not nested generators: one frame whatever the depth, and faster
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        if isinstance(node, Type):
            yield node
        elif isinstance(node, _Nary):
            extend(reversed(node.items))
        else:
            stack.append(node.inner)


def _event_types(pattern: Pattern) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for leaf in iter_types(pattern):
        seen.setdefault(leaf.name, None)
    return tuple(seen)


for _cls in (Type, Seq, And, Or, Kleene, Not):
    _cls.event_types = _event_types  # type: ignore[attr-defined]
    _cls.leaves = lambda self: tuple(iter_types(self))  # type: ignore[attr-defined]


def is_flat_seq(pattern: Pattern) -> bool:
    """True for Type or SEQ of plain types: the pattern shape Sharon and A-Seq handle."""
    if isinstance(pattern, Type):
        return True
    return isinstance(pattern, Seq) and all(isinstance(item, Type) for item in pattern.items)


# ---------------------------------------------------------------------------------------------
# Predicates, aggregates, windows
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttrRef:
    """``ref.attr`` (ref is an event type or a variable) or a bare ``attr`` (ref None)."""

    attr: str
    ref: str | None = None

    def __post_init__(self) -> None:
        _check_identifier(self.attr, "attribute")
        if self.ref is not None:
            _check_identifier(self.ref, "event reference")


@dataclass(frozen=True)
class Equivalence:
    """``[attr]``: every event of a match has the same value of ``attr`` (stream partitioning)."""

    attr: str

    def __post_init__(self) -> None:
        _check_identifier(self.attr, "attribute")


Value = Union[int, float, str]


@dataclass(frozen=True)
class Filter:
    """A condition on one event: ``ref.attr op value`` (``T.speed < 10``, ``R.type = Pool``)."""

    ref: str
    attr: str
    op: str
    value: Value
    selectivity: float | None = None

    def __post_init__(self) -> None:
        _check_identifier(self.ref, "event reference")
        _check_identifier(self.attr, "attribute")
        _check_op(self.op)
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float, str)):
            raise ModelError(f"filter value must be a number or a string, got {self.value!r}")
        if isinstance(self.value, float) and not math.isfinite(self.value):
            raise ModelError(f"filter value must be finite, got {self.value!r}")
        _check_selectivity(self.selectivity)


@dataclass(frozen=True)
class Condition:
    """A condition between two events, ``left op right`` (``a.x < b.x``), with an optional selectivity."""

    left: AttrRef
    op: str
    right: AttrRef
    selectivity: float | None = None

    def __post_init__(self) -> None:
        _check_op(self.op)
        if self.left.ref is None or self.right.ref is None:
            raise ModelError("a condition between events needs ref.attr on both sides")
        if self.left.ref == self.right.ref:
            raise ModelError(f"condition {self.left.ref}.{self.left.attr} relates an event to itself; "
                             "write it as a filter")
        _check_selectivity(self.selectivity)

    @property
    def refs(self) -> tuple[str, str]:
        return (self.left.ref, self.right.ref)  # type: ignore[return-value]


Predicate = Union[Equivalence, Filter, Condition]


def _check_op(op: str) -> None:
    if op not in COMPARISON_OPS:
        raise ModelError(f"unknown comparison operator {op!r} (use one of {', '.join(COMPARISON_OPS)})")


def _check_selectivity(sel: float | None) -> None:
    if sel is None:
        return
    if isinstance(sel, bool) or not isinstance(sel, (int, float)) or not 0 < sel <= 1:
        raise ModelError(f"selectivity must be in (0, 1], got {sel!r}")


@dataclass(frozen=True)
class Aggregate:
    """COUNT(*) (ref None, attr None), COUNT(E), SUM/AVG/MIN/MAX(E.attr)."""

    func: str
    ref: str | None = None
    attr: str | None = None

    def __post_init__(self) -> None:
        if self.func not in AGGREGATE_FUNCTIONS:
            raise ModelError(f"unknown aggregate {self.func!r} (use one of {', '.join(AGGREGATE_FUNCTIONS)})")
        if self.ref is not None:
            _check_identifier(self.ref, "event reference")
        if self.attr is not None:
            _check_identifier(self.attr, "attribute")
        if self.func == "COUNT":
            if self.attr is not None:
                raise ModelError("COUNT takes * or an event type, not an attribute")
        elif self.ref is None or self.attr is None:
            raise ModelError(f"{self.func} needs an event attribute, as in {self.func}(E.attr)")

    @property
    def is_count_star(self) -> bool:
        return self.func == "COUNT" and self.ref is None


@dataclass(frozen=True)
class Window:
    """A sliding window: ``WITHIN length SLIDE slide``; slide None means a single window per match
    (the join-order family's "last - first <= length").

    The slide must not exceed the length. Window k is [kS, kS + W) (sharon.md §1.5, hamlet.md §8 item 9),
    so with S > W the stream would have gaps that belong to no window: hopping windows with gaps. No
    spec defines them, the papers' windows all have S <= W, and the executors do not support them
    (Spark's ``sequence(lo, hi)`` counts down when an event falls in a gap, putting it into the two
    windows around the gap), so such a window is refused rather than run with wrong results.
    """

    length: float
    slide: float | None = None

    def __post_init__(self) -> None:
        check_window_number(self.length, "length")
        if self.slide is not None:
            check_window_number(self.slide, "slide")
        object.__setattr__(self, "length", _normal_number(self.length))
        if self.slide is not None:
            object.__setattr__(self, "slide", _normal_number(self.slide))
            if self.slide > self.length:
                raise ModelError(f"window slide {self.slide} is larger than window length {self.length}: "
                                 "events between two windows would belong to none (gaps are not supported)")


def check_window_number(value: object, what: str) -> None:
    """A window ``length`` or ``slide`` (``what``) on its own: a finite number > 0, else ModelError."""
    _check_number(value, f"window {what}", positive=True)


def _check_number(value: object, what: str, *, positive: bool = False) -> None:
    """A finite number >= 0 (> 0 if ``positive``). JSON admits NaN, Infinity and integers of any
    size; math.isfinite overflows on an int beyond the float range (and its repr would fill a line)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(f"{what} must be a number, got {value!r}")
    try:
        finite = math.isfinite(value)
    except OverflowError:
        raise ModelError(f"{what} is too large (over {sys.float_info.max:.1e})") from None
    if not finite:
        raise ModelError(f"{what} must be a finite number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ModelError(f"{what} must be {'> 0' if positive else '>= 0'}, got {value!r}")


def _normal_number(x: float) -> float:
    """Integral floats become ints so that 600.0 and 600 compare and print the same."""
    return int(x) if float(x).is_integer() else float(x)


ReturnItem = Union[Aggregate, AttrRef]


# ---------------------------------------------------------------------------------------------
# Queries and workloads
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """One CEP query: RETURN, PATTERN, WHERE, GROUP-BY, WITHIN/SLIDE.

    Every predicate, aggregate and GROUP-BY reference must name an event type or a variable of the
    pattern; anything else raises ``ModelError("unknown event type 'X'")``.
    """

    pattern: Pattern
    window: Window
    returns: tuple[ReturnItem, ...] = (Aggregate("COUNT"),)
    where: tuple[Predicate, ...] = ()
    group_by: tuple[AttrRef, ...] = ()
    name: str | None = None

    def __post_init__(self) -> None:
        for attr in ("returns", "where", "group_by"):
            object.__setattr__(self, attr, tuple(getattr(self, attr)))
        if not isinstance(self.pattern, _PATTERN_CLASSES):
            raise ModelError(f"pattern is not a pattern: {self.pattern!r}")
        if not isinstance(self.window, Window):
            raise ModelError(f"window is not a Window: {self.window!r}")
        if self.name is not None:
            _check_identifier(self.name, "query name")
        if not self.returns:
            raise ModelError("RETURN needs at least one item")
        leaves = tuple(iter_types(self.pattern))  # one walk of the pattern for every check below
        bound = [leaf for leaf in leaves if leaf.var is not None]
        variables = {leaf.var for leaf in bound}
        if len(variables) != len(bound):
            raise ModelError("a variable is bound twice in the pattern")
        types = {leaf.name for leaf in leaves}
        refs = types | variables
        for leaf in bound:
            if leaf.var in types and leaf.var != leaf.name:
                raise ModelError(f"variable {leaf.var!r} is also an event type of the pattern")

        def check(ref: str | None) -> None:
            if ref is not None and ref not in refs:
                raise ModelError(f"unknown event type {ref!r}")

        for item in self.returns:
            if not isinstance(item, (Aggregate, AttrRef)):
                raise ModelError(f"RETURN item is not an aggregate or attribute: {item!r}")
            check(item.ref)
        for pred in self.where:
            if isinstance(pred, Filter):
                check(pred.ref)
            elif isinstance(pred, Condition):
                check(pred.left.ref)
                check(pred.right.ref)
            elif not isinstance(pred, Equivalence):
                raise ModelError(f"WHERE item is not a predicate: {pred!r}")
        for key in self.group_by:
            if not isinstance(key, AttrRef):
                raise ModelError(f"GROUP-BY item is not an attribute: {key!r}")
            check(key.ref)

    def refs(self) -> frozenset[str]:
        """Names that predicates may use: every event type and every variable of the pattern."""
        names = set(self.pattern.event_types())
        names.update(leaf.var for leaf in iter_types(self.pattern) if leaf.var is not None)
        return frozenset(names)

    def type_of(self, ref: str) -> str:
        """The event type a reference (type name or variable) denotes."""
        try:
            return self._ref_types[ref]
        except KeyError:
            raise ModelError(f"unknown event type {ref!r}") from None

    @cached_property
    def _ref_types(self) -> dict[str, str]:
        """Each reference -> the event type of the first leaf naming it (as variable or type), from one
        walk of the pattern: :meth:`type_of` is asked per predicate (Gloria's sharing classes ask it of
        every reference of every query)."""
        types: dict[str, str] = {}
        for leaf in iter_types(self.pattern):
            if leaf.var is not None:
                types.setdefault(leaf.var, leaf.name)
            types.setdefault(leaf.name, leaf.name)
        return types

    @property
    def aggregates(self) -> tuple[Aggregate, ...]:
        return tuple(item for item in self.returns if isinstance(item, Aggregate))

    @property
    def equivalences(self) -> tuple[str, ...]:
        return tuple(p.attr for p in self.where if isinstance(p, Equivalence))

    @property
    def filters(self) -> tuple[Filter, ...]:
        return tuple(p for p in self.where if isinstance(p, Filter))

    @property
    def conditions(self) -> tuple[Condition, ...]:
        return tuple(p for p in self.where if isinstance(p, Condition))


@dataclass(frozen=True)
class Workload:
    """An ordered set of queries over one stream; unnamed queries are named q1, q2, ... by position."""

    queries: tuple[Query, ...]

    def __post_init__(self) -> None:
        queries = []
        for i, query in enumerate(self.queries, start=1):
            if not isinstance(query, Query):
                raise ModelError(f"workload item {i} is not a Query: {query!r}")
            if query.name is None:
                query = Query(query.pattern, query.window, query.returns, query.where, query.group_by,
                              f"q{i}")
            queries.append(query)
        seen: set[str] = set()
        dupes: set[str] = set()
        for query in queries:  # a set, not names.count(n) per name: loading stays linear in the queries
            (dupes if query.name in seen else seen).add(query.name)
        if dupes:
            raise ModelError(f"query name {sorted(dupes)[0]!r} is used twice")
        object.__setattr__(self, "queries", tuple(queries))

    def __iter__(self) -> Iterator[Query]:
        return iter(self.queries)

    def __len__(self) -> int:
        return len(self.queries)

    def __getitem__(self, key: int | str) -> Query:
        if isinstance(key, str):
            for query in self.queries:
                if query.name == key:
                    return query
            raise ModelError(f"no query named {key!r}")
        return self.queries[key]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(q.name for q in self.queries)  # type: ignore[misc]

    def event_types(self) -> tuple[str, ...]:
        """Every event type used by some query, in order of first use."""
        seen: dict[str, None] = {}
        for query in self.queries:
            for name in query.pattern.event_types():
                seen.setdefault(name, None)
        return tuple(seen)


# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------


def _frozen_items(mapping: Mapping | Iterable) -> tuple:
    items = mapping.items() if isinstance(mapping, Mapping) else mapping
    return tuple(sorted(items))


@dataclass(frozen=True)
class Statistics:
    """Stream statistics: per-type rates (events per time unit), condition selectivities keyed by
    the pair of references they relate (a key (x, x) is a filter on x), and optionally the expected
    number of events per window per type (Sharon counts rates per window).

    Stored as sorted tuples so that a Statistics is hashable; read it through the accessors.

    >>> s = Statistics(rates={"A": 2.0, "B": 0.5}, selectivities={("b", "a"): 0.1})
    >>> s.rate("A"), s.selectivity("a", "b"), s.selectivity("a", "c")
    (2.0, 0.1, 1.0)
    """

    rates: tuple[tuple[str, float], ...] = ()
    selectivities: tuple[tuple[tuple[str, str], float], ...] = ()
    events_per_window: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        rates = _frozen_items(self.rates)
        for name, rate in rates:
            _check_identifier(name, "event type")
            _check_number(rate, f"rate of {name!r}")
        sels = []
        items = self.selectivities.items() if isinstance(self.selectivities, Mapping) else self.selectivities
        for key, value in items:
            if isinstance(key, str):
                key = tuple(part.strip() for part in key.split(","))
                if len(key) == 1:
                    key = (key[0], key[0])
            if not isinstance(key, tuple) or len(key) != 2:
                raise ModelError(f"selectivity key must be a pair of references, got {key!r}")
            for ref in key:
                _check_identifier(ref, "event reference")
            _check_selectivity(value)
            sels.append((tuple(sorted(key)), value))
        keys = [k for k, _ in sels]
        if len(keys) != len(set(keys)):
            raise ModelError("a selectivity is given twice for the same pair")
        per_window = _frozen_items(self.events_per_window)
        for name, count in per_window:
            _check_identifier(name, "event type")
            _check_number(count, f"events per window of {name!r}")
        object.__setattr__(self, "rates", rates)
        object.__setattr__(self, "selectivities", tuple(sorted(sels)))
        object.__setattr__(self, "events_per_window", per_window)
        # Lookup tables (attributes, not fields: equality and hashing see the tuples only), so that
        # rate() and friends take constant time however many types there are.
        object.__setattr__(self, "_rates", dict(rates))
        object.__setattr__(self, "_sels", dict(self.selectivities))
        object.__setattr__(self, "_per_window", dict(per_window))

    @property
    def rate_map(self) -> dict[str, float]:
        return dict(self.rates)

    @property
    def selectivity_map(self) -> dict[tuple[str, str], float]:
        return dict(self.selectivities)

    def rate(self, event_type: str) -> float:
        """The rate of ``event_type``; a type without a stated rate is an error."""
        rate = self._rates.get(event_type)
        if rate is not None:
            return rate
        raise ModelError(f"unknown event type {event_type!r}: no rate in the statistics")

    def selectivity(self, a: str, b: str) -> float:
        """Selectivity of the conditions between ``a`` and ``b`` (a filter when a == b); 1 if none."""
        return self._sels.get((a, b) if a <= b else (b, a), 1.0)

    def per_window(self, event_type: str, window: float | None = None) -> float:
        """Expected events of ``event_type`` in a window: the stated count, else rate * window."""
        count = self._per_window.get(event_type)
        if count is not None:
            return count
        if window is None:
            raise ModelError(f"no events-per-window count for {event_type!r} and no window given")
        return self.rate(event_type) * window

    def require_rates(self, event_types: Iterable[str]) -> None:
        """Raise a ModelError naming the first type without a rate."""
        for name in event_types:
            if name not in self._rates and name not in self._per_window:
                raise ModelError(f"unknown event type {name!r}: no rate in the statistics")

    def to_json(self) -> dict:
        out: dict = {"rates": dict(self.rates)}
        if self.selectivities:
            out["selectivities"] = {",".join(k): v for k, v in self.selectivities}
        if self.events_per_window:
            out["events_per_window"] = dict(self.events_per_window)
        return out

    @classmethod
    def from_json(cls, data: Mapping) -> Statistics:
        return cls(rates=data.get("rates", {}), selectivities=data.get("selectivities", {}),
                   events_per_window=data.get("events_per_window", {}))

