"""Evaluation plans of one CEP pattern: an :class:`Order` (lazy NFA, left-deep join) or a :class:`Tree`
(ZStream-style tree, bushy join), and a :class:`Disjunction` of those for a pattern in DNF.

Kolchinsky & Schuster, "Join Query Optimization Techniques for CEP Applications", §2.2 (order-based
evaluation), §2.3 (tree-based evaluation), §5.3 (negation checks), §5.4 (nested patterns). Plans name
the *event variables* of the query (``a``, ``b``, ...; the type name when an event has no variable).

What an executor needs to know:

- ``Order(events=("c", "a", "d"), negations=(("b", 2),))``: the positive events are matched in this
  order (state k of the NFA expects ``events[k]``; every condition between the new event and the
  earlier ones, and its filter, is checked on that edge). ``("b", 2)`` means: the absence of ``b``
  is checked right after the first 2 events (``c``, ``a``) are bound, i.e. the order reads
  ``(c, a, NOT b, d)``. A Kleene event ``KL(D d)`` appears as ``d`` at the stage where its subsets
  are taken (the query says which events are Kleene).
- ``Tree(left, right, negations)``: ``left`` and ``right`` are variable names (leaves) or Trees.
  An internal node joins the partial matches of its children and checks every condition between
  the two sides (§2.3). ``negations`` are absence checks (ZStream NSEQ) applied to the matches this
  node produces. ``Tree(x, None, negations)`` is a unary node that only carries checks (used when the
  checks depend on a single event, e.g. ``SEQ(A a, NOT(B b))``); it adds no cost term.
- ``Disjunction(branches)``: one plan per DNF conjunct (§5.4); the matches are the union.

Plans are frozen, hashable, validated on construction (a bad plan raises
:class:`cepopt.errors.CepoptError`), and round-trip through :func:`plan_to_json` /
:func:`plan_from_json`.

>>> t = Tree(Tree("a", "c"), "b")
>>> str(t), t.leaves(), t.is_left_deep()
('((a,c),b)', ('a', 'c', 'b'), True)
>>> str(Order(("c", "a", "d"), negations=(("b", 2),)))
'(c,a,NOT b,d)'
>>> plan_from_json(plan_to_json(t)) == t
True
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Union

from cepopt.errors import CepoptError

__all__ = [
    "Disjunction", "Order", "Plan", "Tree", "all_orders", "all_trees", "interval_trees", "left_deep",
    "plan_from_json", "plan_to_json",
]


def _check_name(name: object, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise CepoptError(f"{what} must be an event variable name, got {name!r}")


def _check_negations(negs: tuple, positives: set[str]) -> None:
    seen = set()
    for var in negs:
        _check_name(var, "negated event")
        if var in positives:
            raise CepoptError(f"negated event {var!r} is also a positive event of the plan")
        if var in seen:
            raise CepoptError(f"negated event {var!r} is checked twice")
        seen.add(var)


@dataclass(frozen=True)
class Order:
    """An evaluation order of the positive events (§2.2), with absence checks (§5.3).

    ``negations`` holds pairs ``(variable, k)``: the absence of ``variable`` is checked once the first
    ``k`` events of ``events`` are bound (1 <= k <= len(events)).
    """

    events: tuple[str, ...]
    negations: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        events = tuple(self.events)
        object.__setattr__(self, "events", events)
        if not events:
            raise CepoptError("an order needs at least one event")
        for e in events:
            _check_name(e, "order element")
        if len(set(events)) != len(events):
            raise CepoptError(f"order {events!r} repeats an event")
        negs = []
        for item in self.negations:
            if not isinstance(item, Sequence) or len(item) != 2:
                raise CepoptError(f"a negation check is (variable, position), got {item!r}")
            var, k = item
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(events):
                raise CepoptError(
                    f"negation check of {var!r}: position must be in 1..{len(events)}, got {k!r}")
            negs.append((var, k))
        _check_negations(tuple(v for v, _ in negs), set(events))
        object.__setattr__(self, "negations", tuple(sorted(negs, key=lambda vk: (vk[1], vk[0]))))

    @property
    def kind(self) -> str:
        return "order"

    def leaves(self) -> tuple[str, ...]:
        return self.events

    def __len__(self) -> int:
        return len(self.events)

    def __str__(self) -> str:
        parts: list[str] = []
        for k, e in enumerate(self.events, start=1):
            parts.append(e)
            parts.extend(f"NOT {v}" for v, pos in self.negations if pos == k)
        return "(" + ",".join(parts) + ")"


@dataclass(frozen=True)
class Tree:
    """A binary evaluation tree (§2.3). Leaves are variable names; ``right`` None makes a unary node
    that only carries absence checks. ``negations`` are checked on the matches of this node."""

    left: str | Tree
    right: str | Tree | None = None
    negations: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for child in (self.left, self.right):
            if child is not None and not isinstance(child, Tree):
                _check_name(child, "tree leaf")
        if self.right is None and not self.negations and not isinstance(self.left, str):
            raise CepoptError("a unary tree node must carry a negation check")
        object.__setattr__(self, "negations", tuple(self.negations))
        leaves = self.leaves()
        if len(set(leaves)) != len(leaves):
            raise CepoptError(f"tree {self} repeats a leaf")
        _check_negations(self.negations, set(leaves))
        inner = [v for node in self.nodes() if node is not self for v in node.negations]
        if set(inner) & set(self.negations) or len(set(inner)) != len(inner):
            raise CepoptError(f"tree {self} checks a negated event twice")

    @property
    def kind(self) -> str:
        return "tree"

    @property
    def is_unary(self) -> bool:
        return self.right is None

    def children(self) -> tuple[str | Tree, ...]:
        return (self.left,) if self.right is None else (self.left, self.right)

    def leaves(self) -> tuple[str, ...]:
        """The leaves left to right."""
        out: list[str] = []
        for child in self.children():
            out.extend((child,) if isinstance(child, str) else child.leaves())
        return tuple(out)

    def nodes(self) -> Iterator[Tree]:
        """Every Tree node, children before parents (post-order), unary nodes included."""
        for child in self.children():
            if isinstance(child, Tree):
                yield from child.nodes()
        yield self

    def joins(self) -> Iterator[Tree]:
        """Every binary (join) node, post-order."""
        return (node for node in self.nodes() if not node.is_unary)

    def all_negations(self) -> tuple[str, ...]:
        return tuple(v for node in self.nodes() for v in node.negations)

    def positive(self) -> str | Tree:
        """The same tree without negation checks (unary nodes removed)."""
        kids = [c if isinstance(c, str) else c.positive() for c in self.children()]
        if self.right is None:
            return kids[0]
        return Tree(kids[0], kids[1])

    def is_left_deep(self) -> bool:
        node = self.positive()
        while isinstance(node, Tree):
            if not isinstance(node.right, str):
                return False
            node = node.left
        return True

    def canonical(self) -> str | Tree:
        """Positive part with, at every node, the child holding the smaller leaf name first
        (Cost_tree is symmetric in left and right)."""
        pos = self.positive()
        if isinstance(pos, str):
            return pos
        a, b = (c if isinstance(c, str) else c.canonical() for c in (pos.left, pos.right))
        ka = a if isinstance(a, str) else min(a.leaves())
        kb = b if isinstance(b, str) else min(b.leaves())
        return Tree(a, b) if ka <= kb else Tree(b, a)

    def __str__(self) -> str:
        inner = ",".join(c if isinstance(c, str) else str(c) for c in self.children())
        text = inner if self.right is None else f"({inner})"
        if self.negations:
            text = "NSEQ(" + text + "," + ",".join(f"NOT {v}" for v in self.negations) + ")"
        return text


@dataclass(frozen=True)
class Disjunction:
    """One plan per DNF conjunct of a nested pattern (§5.4); cost is the sum, latency the max."""

    branches: tuple[Order | Tree, ...]

    def __post_init__(self) -> None:
        branches = tuple(self.branches)
        object.__setattr__(self, "branches", branches)
        if len(branches) < 2:
            raise CepoptError("a disjunctive plan needs at least two branches")
        for b in branches:
            if not isinstance(b, Order | Tree):
                raise CepoptError(f"a disjunct plan must be an Order or a Tree, got {b!r}")
        if len({b.kind for b in branches}) != 1:
            raise CepoptError("the branches of a disjunctive plan must all be orders or all trees")

    @property
    def kind(self) -> str:
        return self.branches[0].kind

    def __str__(self) -> str:
        return "OR[" + " | ".join(str(b) for b in self.branches) + "]"


Plan = Union[Order, Tree, Disjunction]


# ---------------------------------------------------------------------------------------------
# Constructors and plan spaces
# ---------------------------------------------------------------------------------------------


def left_deep(order: Sequence[str] | Order) -> Tree:
    """The left-deep tree ``(((p1,p2),p3),...)`` of an order (§3.1); ``Tree(e)`` for one event."""
    order = tuple(order.events if isinstance(order, Order) else order)
    node: str | Tree = order[0]
    for e in order[1:]:
        node = Tree(node, e)
    return node if isinstance(node, Tree) else Tree(node)


def all_orders(events: Sequence[str]) -> Iterator[Order]:
    """All n! orders (E9)."""
    for perm in itertools.permutations(events):
        yield Order(perm)


def _trees(items: tuple[str, ...]) -> Iterator[str | Tree]:
    if len(items) == 1:
        yield items[0]
        return
    first, rest = items[0], items[1:]
    # Unordered splits: the part holding ``first`` is the left child, the other part is non-empty.
    for r in range(0, len(rest)):
        for sub in itertools.combinations(rest, r):
            other = tuple(x for x in rest if x not in sub)
            for lt in _trees((first, *sub)):
                for rt in _trees(other):
                    yield Tree(lt, rt)


def all_trees(events: Sequence[str]) -> Iterator[Tree]:
    """All (2n-3)!! unordered bushy trees over ``events`` (E9), each once, in canonical form
    with respect to ``events``' order (the child holding the earliest event is on the left)."""
    for t in _trees(tuple(events)):
        yield t if isinstance(t, Tree) else Tree(t)


def _intervals(order: tuple[str, ...]) -> Iterator[str | Tree]:
    if len(order) == 1:
        yield order[0]
        return
    for k in range(1, len(order)):
        for lt in _intervals(order[:k]):
            for rt in _intervals(order[k:]):
                yield Tree(lt, rt)


def interval_trees(order: Sequence[str]) -> Iterator[Tree]:
    """All C_{n-1} trees whose leaves keep ``order`` left to right (ZStream's plan space, E9)."""
    for t in _intervals(tuple(order)):
        yield t if isinstance(t, Tree) else Tree(t)


# ---------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------


def _node_to_json(node: str | Tree) -> Any:
    if isinstance(node, str):
        return node
    body = [_node_to_json(c) for c in node.children()]
    if node.negations or node.right is None:
        return {"node": body, "not": list(node.negations)}
    return body


def _node_from_json(value: Any) -> str | Tree:
    if isinstance(value, str):
        return value
    negations: tuple[str, ...] = ()
    if isinstance(value, dict):
        negations = tuple(_json_list(value.get("not", []), "tree.not"))
        value = value.get("node")
    if not isinstance(value, list) or len(value) not in (1, 2):
        raise CepoptError(f"plan: a tree node is [left, right] or a leaf name, got {value!r}")
    kids = [_node_from_json(v) for v in value]
    return Tree(kids[0], kids[1] if len(kids) == 2 else None, negations)


def plan_to_json(plan: Plan) -> dict:
    """``{"kind": "order", "events": [...], "negations": [[var, k], ...]}``,
    ``{"kind": "tree", "tree": nested [left, right] lists, {"node": [...], "not": [...]} for checks}``
    or ``{"kind": "or", "branches": [...]}``."""
    if isinstance(plan, Order):
        out: dict = {"kind": "order", "events": list(plan.events)}
        if plan.negations:
            out["negations"] = [[v, k] for v, k in plan.negations]
        return out
    if isinstance(plan, Tree | str):
        return {"kind": "tree", "tree": _node_to_json(plan)}
    if isinstance(plan, Disjunction):
        return {"kind": "or", "branches": [plan_to_json(b) for b in plan.branches]}
    raise CepoptError(f"not a join-order plan: {plan!r}")


def _json_list(value: Any, what: str) -> list:
    """A JSON array, else a CepoptError naming ``what`` (tuple() would split a string or fail on null)."""
    if not isinstance(value, list):
        raise CepoptError(f"plan.{what}: expected a list, got {str(value)[:60]!r}")
    return value


def plan_from_json(value: Any) -> Plan:
    if not isinstance(value, dict) or "kind" not in value:
        raise CepoptError(f"plan: expected an object with a 'kind', got {str(value)[:60]!r}")
    kind = value["kind"]
    if kind == "order":
        negations = _json_list(value.get("negations", []), "negations")
        return Order(tuple(_json_list(value.get("events", []), "events")),
                     tuple(tuple(_json_list(x, "negations[]")) for x in negations))
    if kind == "tree":
        node = _node_from_json(value.get("tree"))
        return node if isinstance(node, Tree) else Tree(node)
    if kind == "or":
        return Disjunction(tuple(plan_from_json(b) for b in _json_list(value.get("branches", []), "branches")))
    raise CepoptError(f"plan: unknown kind {str(kind)[:60]!r} (order, tree, or)")
