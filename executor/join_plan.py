"""Join plans for CEP patterns: a query compiled into items and checks, a plan into a join tree.

A *simple pattern* is ``SEQ(...)`` or ``AND(...)`` whose items are event types, ``KL(T)`` or ``NOT(T)``
(spec joinorder §1.1). Its positive items are the *leaves*, numbered 0..n-1 in pattern order: plans
name leaves by that number (or by reference). Every check of the query becomes a constraint on one
item (a filter) or on two items (a condition, the SEQ order, distinct events, an equivalence):

- SEQ allows equal timestamps: item p before item q means ``hi(p) <= lo(q)`` (``lo``/``hi`` are the
  first/last timestamp of the item; equal for a single event, the span of a Kleene set);
- the window is inclusive: ``max ts - min ts <= W`` over the events of a (partial) match;
- the events of a match are distinct; Kleene sets bind one or more events, and filters and
  conditions on a Kleene reference hold for every event of the set;
- a match is rejected by ``NOT(T)`` when some T event could stand at that position: it passes the
  filters and every check with the positive items and keeps the window;
- a filter, condition or equivalence with a missing value (None, NaN) on either side does not hold
  (cepopt.predicates): an event with a missing equivalence value forms a Kleene set on its own only.

A partial match of a leaf set S is an assignment of S that passes every check among S and every
negation whose dependencies lie in S. Both the Spark evaluator and the brute-force reference count
exactly these, so the count of a plan node depends only on its leaf set, as in the cost model.

An Order plan becomes the left-deep chain of the lazy NFA: prefix k is a node and only the first leaf
is counted among the leaves (Cost_ord); a Tree plan becomes a bushy join tree whose every node is
counted (Cost_tree). A negation check sits at the lowest node whose leaves contain its dependencies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cepopt.errors import CepoptError
from cepopt.model import And, Condition, Equivalence, Filter, Kleene, Not, Query, Seq, Type

__all__ = [
    "CompiledPattern", "Item", "JoinTree", "Node", "NodeCount", "PairCheck", "ItemFilter", "PlanRun",
    "compile_query", "join_tree", "order_tree", "plan_shape",
]


@dataclass(frozen=True)
class Item:
    """A top-level item of the pattern: an event (Kleene set, negated event) at ``position``."""

    position: int
    ref: str
    type: str
    kleene: bool = False
    negated: bool = False


@dataclass(frozen=True)
class ItemFilter:
    """``item.attr op value``."""

    item: int
    attr: str
    op: str
    value: Any


@dataclass(frozen=True)
class PairCheck:
    """A check between two items: ``kind`` is "cond" (``a.attr op b.battr``), "equiv" (an equivalence
    attribute, ``a.attr = b.attr``), "order" (a before b) or "distinct" (no shared event)."""

    kind: str
    a: int
    b: int
    op: str = ""
    attr: str = ""
    battr: str = ""


@dataclass(frozen=True)
class CompiledPattern:
    """A simple pattern as items, leaves, filters, pair checks, the window and negation dependencies."""

    kind: str
    items: tuple[Item, ...]
    leaves: tuple[int, ...]
    window: float
    filters: tuple[ItemFilter, ...]
    checks: tuple[PairCheck, ...]
    equivalences: tuple[str, ...]
    negation_deps: tuple[tuple[int, frozenset[int]], ...] = ()
    name: str = "q"

    @property
    def n(self) -> int:
        return len(self.leaves)

    @property
    def negations(self) -> tuple[int, ...]:
        return tuple(item.position for item in self.items if item.negated)

    def leaf_item(self, leaf: int) -> Item:
        return self.items[self.leaves[leaf]]

    def leaf_names(self) -> tuple[str, ...]:
        return tuple(self.items[p].ref for p in self.leaves)

    def filters_of(self, item: int) -> tuple[ItemFilter, ...]:
        return tuple(f for f in self.filters if f.item == item)

    def checks_between(self, xs: Sequence[int], ys: Sequence[int]) -> tuple[PairCheck, ...]:
        """Checks with one item in ``xs`` and the other in ``ys`` (item positions)."""
        xs, ys = set(xs), set(ys)
        return tuple(c for c in self.checks if (c.a in xs and c.b in ys) or (c.a in ys and c.b in xs))

    def attrs_of(self, item: int) -> tuple[str, ...]:
        """Attributes the checks read from ``item`` (besides id and ts), sorted."""
        out = {f.attr for f in self.filters if f.item == item}
        for c in self.checks:
            if c.kind in ("cond", "equiv"):
                if c.a == item:
                    out.add(c.attr)
                if c.b == item:
                    out.add(c.battr)
        out.update(self.equivalences if self.items[item].kleene else ())
        return tuple(sorted(out - {"ts"}))

    def deps(self, negated_item: int) -> frozenset[int]:
        return dict(self.negation_deps)[negated_item]

    def negations_within(self, leaves: frozenset[int]) -> tuple[int, ...]:
        """Negated items whose dependencies all lie in ``leaves``."""
        return tuple(p for p, dep in self.negation_deps if dep <= leaves)


def _simple_items(pattern) -> tuple[str, tuple]:
    if isinstance(pattern, Type | Kleene):
        pattern = And((pattern,))
    if not isinstance(pattern, Seq | And):
        name = type(pattern).__name__.upper()
        raise CepoptError(f"the join executor runs SEQ and AND patterns (and OR of them), not {name}")
    for item in pattern.items:
        inner = item.inner if isinstance(item, Kleene | Not) else item
        if not isinstance(inner, Type):
            raise CepoptError("the join executor runs simple patterns: every item of SEQ/AND must be a type, "
                              "KL(type) or NOT(type)")
    return ("SEQ" if isinstance(pattern, Seq) else "AND"), pattern.items


def compile_query(query: Query, pattern=None) -> CompiledPattern:
    """Compile ``query`` (or one of its OR operands, ``pattern``) into items and checks."""
    kind, raw = _simple_items(query.pattern if pattern is None else pattern)
    items = []
    for pos, item in enumerate(raw):
        inner = item.inner if isinstance(item, Kleene | Not) else item
        items.append(Item(pos, inner.ref, inner.name, isinstance(item, Kleene), isinstance(item, Not)))
    if all(it.negated for it in items):
        raise CepoptError("a pattern needs at least one event that is not negated")
    by_ref: dict[str, list[int]] = {}
    for it in items:
        by_ref.setdefault(it.ref, []).append(it.position)

    def resolve(ref: str) -> int:
        found = by_ref.get(ref)
        if not found:
            # A type name used as a reference when its leaves carry variables.
            found = [it.position for it in items if it.type == ref]
        if not found:
            raise CepoptError(f"unknown event type {ref!r} in the pattern")
        if len(found) > 1:
            raise CepoptError(f"reference {ref!r} is ambiguous: bind each occurrence to a variable")
        return found[0]

    filters: list[ItemFilter] = []
    checks: list[PairCheck] = []
    equivalences: list[str] = []
    known = set(by_ref) | {it.type for it in items}
    for pred in query.where:
        # A conjunct of an OR pattern lacks the other branches' events: their predicates are vacuous.
        refs = (pred.ref,) if isinstance(pred, Filter) else (
            (pred.left.ref, pred.right.ref) if isinstance(pred, Condition) else ())
        if pattern is not None and any(r not in known for r in refs):
            continue
        if isinstance(pred, Filter):
            filters.append(ItemFilter(resolve(pred.ref), pred.attr, pred.op, pred.value))
        elif isinstance(pred, Condition):
            a, b = resolve(pred.left.ref), resolve(pred.right.ref)
            if a == b:
                raise CepoptError(f"condition relates {pred.left.ref!r} to itself")
            checks.append(PairCheck("cond", a, b, pred.op, pred.left.attr, pred.right.attr))
        elif isinstance(pred, Equivalence):
            equivalences.append(pred.attr)
    # Equivalence: every pair of events shares the attribute (checked pairwise, so partial matches
    # are pruned as early as possible).
    for attr in equivalences:
        for a in range(len(items)):
            for b in range(a + 1, len(items)):
                checks.append(PairCheck("equiv", a, b, "=", attr, attr))
    if kind == "SEQ":
        for a in range(len(items)):
            for b in range(a + 1, len(items)):
                checks.append(PairCheck("order", a, b))
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            if items[a].type == items[b].type:
                checks.append(PairCheck("distinct", a, b))
    leaves = tuple(it.position for it in items if not it.negated)
    leaf_of = {p: i for i, p in enumerate(leaves)}
    deps = []
    for it in items:
        if not it.negated:
            continue
        p = it.position
        before = [q for q in leaves if q < p]
        after = [q for q in leaves if q > p]
        if kind == "SEQ" and before and after:
            # Between two positive neighbours the window and the order with every other event follow
            # from the neighbours; conditions and same-type events (which could be the very event)
            # add their items.
            dep = {before[-1], after[0]}
            for c in checks:
                if c.kind == "cond" and p in (c.a, c.b):
                    dep.add(c.b if c.a == p else c.a)
            dep.update(q for q in leaves if items[q].type == it.type)
        else:
            dep = set(leaves)
        dep.discard(p)
        deps.append((p, frozenset(leaf_of[q] for q in dep if q in leaf_of)))
    return CompiledPattern(kind, tuple(items), leaves, float(query.window.length), tuple(filters),
                           tuple(checks), tuple(dict.fromkeys(equivalences)), tuple(deps),
                           query.name or "q")


# ---------------------------------------------------------------------------------------------
# Join trees
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """A plan node: a leaf (``leaf`` set) or the join of ``left`` and ``right``; ``negations`` are
    the NOT checks applied here; ``counted`` says whether the node enters the plan's cost."""

    leaves: frozenset[int]
    leaf: int | None = None
    left: Node | None = None
    right: Node | None = None
    negations: tuple[int, ...] = ()
    counted: bool = True

    def label(self, names: Sequence[str]) -> str:
        if self.leaf is not None:
            return names[self.leaf]
        return f"({self.left.label(names)},{self.right.label(names)})"  # type: ignore[union-attr]


@dataclass(frozen=True)
class JoinTree:
    """A plan as a join tree over a compiled pattern; ``kind`` is "order" or "tree"."""

    kind: str
    root: Node
    pattern: CompiledPattern
    nodes: tuple[Node, ...] = field(default=())

    def label(self) -> str:
        return self.root.label(self.pattern.leaf_names())


@dataclass
class NodeCount:
    """Measured partial matches of one plan node: ``count`` of them and ``active``, the sum of their
    lifetimes ``W - (last - first)`` (None for a node the plan's cost does not count)."""

    label: str
    leaves: tuple[int, ...]
    counted: bool
    count: int | None
    active: float | None
    negations: tuple[int, ...] = ()


@dataclass
class PlanRun:
    """The outcome of one join tree on a stream, whatever the engine: the root's full matches (a
    Spark DataFrame, persisted, or pandas), the per-node counts in post-order (the order of
    ``tree.nodes``) and the wall time of the evaluation that computed it (shared by the trees
    evaluated together)."""

    tree: JoinTree
    matches: Any
    nodes: list[NodeCount]
    time_s: float
    _cached: list = field(default_factory=list, repr=False)

    @property
    def operations(self) -> int:
        """Partial matches summed over the nodes the plan's cost counts (Cost_ord / Cost_tree)."""
        return sum(n.count or 0 for n in self.nodes if n.counted)

    @property
    def active(self) -> float:
        """Summed lifetime ``W - span`` of the counted partial matches (divide by the duration)."""
        return sum(n.active or 0.0 for n in self.nodes if n.counted)

    @property
    def match_count(self) -> int:
        """The number of full matches (the root is always counted)."""
        return int(self.nodes[-1].count or 0)

    def release(self) -> None:
        """Unpersist what the run keeps cached (Spark: the root's matches)."""
        for df in self._cached:
            df.unpersist()
        self._cached.clear()


def _post_order(node: Node) -> list[Node]:
    if node.leaf is not None:
        return [node]
    return _post_order(node.left) + _post_order(node.right) + [node]  # type: ignore[arg-type]


def _place_negations(node: Node, pattern: CompiledPattern, need: dict[int, frozenset[int]]) -> Node:
    """Attach each negation to the lowest node whose leaves contain its ``need`` set."""
    if node.leaf is None:
        left = _place_negations(node.left, pattern, need)  # type: ignore[arg-type]
        right = _place_negations(node.right, pattern, need)  # type: ignore[arg-type]
    else:
        left = right = None
    here = tuple(sorted(p for p, leaves in need.items() if leaves <= node.leaves))
    for p in here:
        del need[p]
    return Node(node.leaves, node.leaf, left, right, here, node.counted)


def _finish(kind: str, root: Node, pattern: CompiledPattern, hints: dict[int, frozenset[int]],
            count_all: bool) -> JoinTree:
    # The plan may ask for a check earlier than its semantic dependencies allow (R-NEG places an
    # AND negation with its condition partners, but the window needs every event): the check goes
    # where both the plan's place and the dependencies are bound, so every plan finds the same
    # matches.
    need = {p: dep | hints.get(p, frozenset()) for p, dep in pattern.negation_deps}
    root = _place_negations(root, pattern, need)
    if count_all:
        root = _count_all(root)
    return JoinTree(kind, root, pattern, tuple(_post_order(root)))


def _count_all(node: Node) -> Node:
    if node.leaf is not None:
        return Node(node.leaves, node.leaf, None, None, node.negations, True)
    return Node(node.leaves, None, _count_all(node.left), _count_all(node.right),  # type: ignore[arg-type]
                node.negations, True)


def order_tree(pattern: CompiledPattern, order: Sequence[int], hints: dict[int, frozenset[int]] | None = None,
               *, count_all: bool = False) -> JoinTree:
    """The lazy-NFA chain of ``order`` (leaf numbers): a left-deep tree whose prefixes are counted
    (Cost_ord; ``count_all`` counts every leaf too, as Cost_tree of the left-deep tree)."""
    _check_leaves(pattern, list(order))
    node = Node(frozenset([order[0]]), order[0])
    for leaf in order[1:]:
        right = Node(frozenset([leaf]), leaf, counted=False)
        node = Node(node.leaves | right.leaves, None, node, right)
    return _finish("order", node, pattern, hints or {}, count_all)


def join_tree(pattern: CompiledPattern, plan: Any, *, count_all: bool | None = None) -> JoinTree:
    """A plan as a join tree: an Order or Tree of cepopt.joinorder.plans, a permutation (leaf
    numbers or references), nested pairs, or their JSON. ``count_all`` (default: for trees) counts
    every node, as Cost_tree does; otherwise only the prefixes, as Cost_ord."""
    kind, shape, hints = plan_shape(plan, pattern)
    if kind == "order":
        return order_tree(pattern, shape, hints, count_all=bool(count_all))
    leaves: list[int] = []

    def build(s) -> Node:
        if isinstance(s, int):
            leaves.append(s)
            return Node(frozenset([s]), s)
        left, right = build(s[0]), build(s[1])
        return Node(left.leaves | right.leaves, None, left, right)

    root = build(shape)
    _check_leaves(pattern, leaves)
    return _finish("tree", root, pattern, hints, True if count_all is None else count_all)


def _check_leaves(pattern: CompiledPattern, leaves: list[int]) -> None:
    if sorted(leaves) != list(range(pattern.n)):
        raise CepoptError(f"the plan must name each of the {pattern.n} positive events exactly once, "
                          f"got leaves {leaves}")


def plan_shape(plan: Any, pattern: CompiledPattern) -> tuple[str, Any, dict[int, frozenset[int]]]:
    """(kind, shape, hints): kind "order" with a tuple of leaf numbers, or "tree" with nested pairs of
    leaf numbers; hints map a negated item to the leaves bound where the plan checks it."""
    names = pattern.leaf_names()
    negated = {pattern.items[p].ref: p for p in pattern.negations}
    hints: dict[int, frozenset[int]] = {}

    def leaf(x) -> int:
        if isinstance(x, bool):
            raise CepoptError(f"bad plan leaf {x!r}")
        if isinstance(x, int):
            if not 0 <= x < len(names):
                raise CepoptError(f"plan leaf {x} is out of range (the pattern has {len(names)} events)")
            return x
        if isinstance(x, str):
            if x in names:
                return list(names).index(x)
            raise CepoptError(f"plan names unknown event {x!r} (events: {', '.join(names)})")
        raise CepoptError(f"bad plan leaf {x!r}")

    def hint(var: str, leaves) -> None:
        if var not in negated:
            raise CepoptError(f"plan checks the absence of {var!r}, which is not a negated event")
        hints[negated[var]] = frozenset(leaves)

    def flat(t) -> list[int]:
        return [t] if isinstance(t, int) else flat(t[0]) + flat(t[1])

    def tree(x):
        if hasattr(x, "left") and hasattr(x, "children"):  # cepopt.joinorder.plans.Tree
            kids = [tree(c) for c in x.children()]
            t = kids[0] if len(kids) == 1 else (kids[0], kids[1])
            for var in getattr(x, "negations", ()):
                hint(var, flat(t))
            return t
        if isinstance(x, dict) and "node" in x:
            kids = [tree(c) for c in x["node"]]
            t = kids[0] if len(kids) == 1 else (kids[0], kids[1])
            for var in x.get("not", ()):
                hint(var, flat(t))
            return t
        if isinstance(x, list | tuple):
            if len(x) == 1:
                return tree(x[0])
            if len(x) != 2:
                raise CepoptError(f"a tree node has two children, got {x!r}")
            return (tree(x[0]), tree(x[1]))
        return leaf(x)

    def order(events, negations=()) -> tuple[str, tuple, dict]:
        o = tuple(leaf(x) for x in events)
        for var, k in negations:
            hint(var, o[:k])
        return "order", o, hints

    if isinstance(plan, dict):
        kind = plan.get("kind")
        if kind == "order" or "events" in plan:
            return order(plan.get("events", ()), plan.get("negations", ()))
        if "order" in plan:
            return order(plan["order"])
        if kind == "tree" or "tree" in plan:
            return "tree", tree(plan["tree"]), hints
        raise CepoptError(f"a join plan is an order or a tree, got {plan!r}")
    if hasattr(plan, "events") and hasattr(plan, "negations"):  # cepopt.joinorder.plans.Order
        return order(plan.events, plan.negations)
    if hasattr(plan, "branches"):
        raise CepoptError("a disjunctive plan runs one branch per conjunct (see joinorder_driver)")
    if hasattr(plan, "left") and hasattr(plan, "right"):
        return "tree", tree(plan), hints
    if isinstance(plan, list | tuple):
        if all(isinstance(x, int | str) and not isinstance(x, bool) for x in plan):
            return order(plan)
        return "tree", tree(plan), hints
    raise CepoptError(f"cannot read a join plan from {plan!r}")
