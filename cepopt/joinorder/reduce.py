"""Reduce a CEP pattern to pure conjunctions for plan generation (Kolchinsky & Schuster §5).

The rewrites are used only to *plan*; nothing is rewritten at run time.

- Nested patterns (§5.4): the pattern is put in disjunctive normal form; each conjunct is planned on
  its own. ``SEQ(A, OR(B, C), D)`` becomes ``OR(SEQ(A,B,D), SEQ(A,C,D))``: an OR operand keeps its
  position [R, spec E8]. Nested SEQ/AND inside a conjunct stay as a tree of operators.
- Sequences (§5.1, Theorem 3): SEQ is AND plus temporal predicates ``e_i.ts < e_{i+1}.ts``. Their
  selectivity is a parameter [R-SEQ]: ``seq_temporal`` = ``"adjacent"`` (default, paper-literal: the
  predicates between neighbouring positive elements of a SEQ get ``seq_selectivity``, default 1/2),
  ``"all_pairs"`` (every ordered pair of a SEQ), ``"none"``, or ``"exact"``. When an element of a SEQ
  is itself an AND, the predicate applies to every event of the neighbouring elements.

  ``"exact"`` [R-SEQ-EXACT] is not a pairwise selectivity: a node S (a set of positive events) gets
  the factor P(S) = the probability that independent, identically distributed timestamps of the
  events of S respect the pattern's order restricted to S, i.e. ``e(P|S) / |S|!`` with ``e`` the
  number of linear extensions. The orders a pattern can express are *partial* (``SEQ(A, AND(B, C),
  D)`` leaves B and C unordered; ``AND(SEQ(A, B), SEQ(C, D))`` too), but always series-parallel:
  SEQ is series composition, AND parallel composition, and NOT/OR add none (a negated event is not
  positive; OR is split into DNF conjuncts). Restricting a series-parallel order to S keeps its
  decomposition, and the linear extensions multiply over it, so the probability is exact and closed:
  ``P(S) = ∏ over SEQ operators of ∏_c |S∩c|! / |S∩∪c|!`` over the operator's elements c
  (:func:`seq_blocks` lists them). For a chain of k events of S it is 1/k!, and it is incremental:
  adding an ordered event to a set holding k of them multiplies by 1/(k+1). No partial order is
  rejected. A Kleene variable ``KL(T)`` counts as one element (as in the pairwise options: the
  relative order of the events inside the Kleene set is not priced), and ``seq_selectivity`` is
  unused. Methods that need pairwise selectivities (the JQPG costs ``ldj``/``bj`` of Theorems 1-2,
  the MILP and CP-SAT models) refuse the option with an error naming it.
- Kleene closure (§5.2, Theorem 4): ``KL(T_i)`` becomes a type with ``W r_i' = 2^{r_i W}``, kept as
  ``ln(W r_i') = r_i W ln 2`` so it never overflows [R-KL]; ``kleene_nonempty`` uses ``2^{rW} - 1``,
  ``kleene_poisson`` base e (E[2^N] = e^{rW} for a Poisson count N) [R-KL-POISSON].
  Selectivities are unchanged. KL applies to a single event only.
- Negation (§5.3): a negated event is dropped from the positive part; its check is placed when its
  dependency set ``dep`` is bound [R-NEG]: the nearest positive predecessor and successor in its SEQ
  plus the positive events that share a condition with it; all positive events if it is first or last
  in its SEQ, or in an AND without conditions. NOT applies to a single event only.

>>> from cepopt.model import Seq, Type, Not, Kleene
>>> cs = conjuncts(Seq((Type("A", "a"), Not(Type("B", "b")), Type("C", "c"), Kleene(Type("D", "d")))))
>>> [e.var for e in cs[0].events], cs[0].negated[0].var, sorted(cs[0].negated[0].dep)
(['a', 'c', 'd'], 'b', ['a', 'c'])
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from cepopt.errors import CepoptError
from cepopt.model import And, Kleene, Not, Or, Pattern, Seq, Type

__all__ = ["Element", "Negated", "SimpleConjunct", "conjuncts", "dnf", "seq_blocks", "temporal_pairs"]


@dataclass(frozen=True)
class Element:
    """A positive event of a conjunct: variable (or type name), type, Kleene flag."""

    var: str
    type: str
    kleene: bool = False


@dataclass(frozen=True)
class Negated:
    """A negated event and the variables its absence check depends on (computed later with the
    conditions); ``prev``/``next`` are the nearest positive neighbours in its SEQ (None at an end)."""

    var: str
    type: str
    dep: frozenset[str]
    in_seq: bool
    at_end: bool


@dataclass(frozen=True)
class SimpleConjunct:
    """One DNF conjunct: the operator tree (SEQ/AND over Type, KL(Type), NOT(Type)) flattened to the
    positive events in pattern order, the temporal predicates and the negated events."""

    pattern: Pattern
    events: tuple[Element, ...]
    negated: tuple[Negated, ...]
    #: (earlier, later, adjacent) pairs of positive variables ordered by a SEQ
    order_pairs: tuple[tuple[str, str, bool], ...]
    #: per SEQ operator, the positive variables of each of its elements (see :func:`seq_blocks`)
    seq_blocks: tuple[tuple[frozenset[str], ...], ...] = ()

    @property
    def is_seq(self) -> bool:
        return isinstance(self.pattern, Seq)


def _is_event(p: Pattern) -> bool:
    return isinstance(p, Type) or (isinstance(p, Kleene | Not) and isinstance(p.inner, Type))


def dnf(pattern: Pattern) -> list[Pattern]:
    """The DNF conjuncts of ``pattern``: OR-free patterns over SEQ/AND/Type/KL(Type)/NOT(Type).

    >>> from cepopt.model import And, Or, Type
    >>> [len(c.items) for c in dnf(And((Type("A"), Type("B"), Or((Type("C"), Type("D"))))))]
    [3, 3]
    """
    if isinstance(pattern, Type):
        return [pattern]
    if isinstance(pattern, Kleene | Not):
        if not isinstance(pattern.inner, Type):
            op = "KL" if isinstance(pattern, Kleene) else "NOT"
            raise CepoptError(f"{op} applies to a single event in join-order planning (§2.1), "
                              f"got a nested pattern")
        return [pattern]
    if isinstance(pattern, Or):
        return [c for item in pattern.items for c in dnf(item)]
    alternatives = [dnf(item) for item in pattern.items]
    out = []
    for combo in itertools.product(*alternatives):
        items: list[Pattern] = []
        for c in combo:
            # SEQ inside SEQ and AND inside AND flatten (associativity).
            if type(c) is type(pattern) and isinstance(c, Seq | And):
                items.extend(c.items)
            else:
                items.append(c)
        out.append(type(pattern)(tuple(items)))
    return out


def _positives(p: Pattern) -> list[str]:
    if isinstance(p, Type):
        return [p.ref]
    if isinstance(p, Kleene):
        return [p.inner.ref]
    if isinstance(p, Not):
        return []
    return [v for item in p.items for v in _positives(item)]


def temporal_pairs(p: Pattern) -> list[tuple[str, str, bool]]:
    """(earlier, later, adjacent) pairs of positive variables implied by the SEQ operators of an
    OR-free pattern (Theorem 3); ``adjacent`` marks neighbouring positive elements of a SEQ."""
    out: list[tuple[str, str, bool]] = []
    if isinstance(p, Seq | And):
        for item in p.items:
            out.extend(temporal_pairs(item))
    if isinstance(p, Seq):
        groups = [g for g in (_positives(item) for item in p.items) if g]
        for i, j in itertools.combinations(range(len(groups)), 2):
            for x in groups[i]:
                for y in groups[j]:
                    out.append((x, y, j == i + 1))
    return out


def seq_blocks(p: Pattern) -> list[tuple[frozenset[str], ...]]:
    """The series-parallel form of the order of an OR-free pattern: per SEQ operator, the sets of
    positive variables of its elements, in order (elements without a positive event left out; an
    operator with fewer than two such elements orders nothing and is left out). The pairs of
    :func:`temporal_pairs` are exactly ``x < y`` for x in an earlier and y in a later set of one
    operator. [R-SEQ-EXACT] prices a node S by ``∏_blocks ∏_c |S∩c|! / |S∩∪c|!``.

    >>> from cepopt.model import And, Seq, Type
    >>> [[sorted(c) for c in b] for b in seq_blocks(Seq((Type("A"), And((Type("B"), Type("C"))), Type("D"))))]
    [[['A'], ['B', 'C'], ['D']]]
    """
    out: list[tuple[frozenset[str], ...]] = []
    if isinstance(p, Seq | And):
        for item in p.items:
            out.extend(seq_blocks(item))
    if isinstance(p, Seq):
        groups = tuple(frozenset(g) for g in (_positives(item) for item in p.items) if g)
        if len(groups) >= 2:
            out.append(groups)
    return out


def _negations(p: Pattern, everything: frozenset[str]) -> list[Negated]:
    out: list[Negated] = []
    if not isinstance(p, Seq | And):
        if isinstance(p, Not):  # a bare NOT conjunct has no positive part: caught by the caller
            out.append(Negated(p.inner.ref, p.inner.name, everything, False, True))
        return out
    items = list(p.items)
    for idx, item in enumerate(items):
        if isinstance(item, Seq | And):
            out.extend(_negations(item, everything))
            continue
        if not isinstance(item, Not):
            continue
        if isinstance(p, Seq):
            before = next((g for g in (_positives(x) for x in reversed(items[:idx])) if g), None)
            after = next((g for g in (_positives(x) for x in items[idx + 1:]) if g), None)
            at_end = before is None or after is None
            dep = everything if at_end else frozenset(before) | frozenset(after)
            out.append(Negated(item.inner.ref, item.inner.name, dep, True, at_end))
        else:
            out.append(Negated(item.inner.ref, item.inner.name, frozenset(), False, False))
    return out


def conjuncts(pattern: Pattern) -> list[SimpleConjunct]:
    """The DNF conjuncts of ``pattern`` with their positive events, temporal pairs and negations.

    An AND negation's ``dep`` is left empty here: it is the set of events sharing a condition with it
    (or every positive event when none does), which the problem builder fills in from the WHERE clause.
    """
    out = []
    for c in dnf(pattern):
        events: list[Element] = []
        for leaf in _leaves(c):
            if isinstance(leaf, Type):
                events.append(Element(leaf.ref, leaf.name, False))
            elif isinstance(leaf, Kleene):
                events.append(Element(leaf.inner.ref, leaf.inner.name, True))
        if not events:
            raise CepoptError("a pattern (or one of its OR branches) has no positive event to plan")
        everything = frozenset(e.var for e in events)
        out.append(SimpleConjunct(c, tuple(events), tuple(_negations(c, everything)),
                                  tuple(temporal_pairs(c)), tuple(seq_blocks(c))))
    return out


def _leaves(p: Pattern) -> list[Pattern]:
    if _is_event(p):
        return [p]
    return [x for item in p.items for x in _leaves(item)]
