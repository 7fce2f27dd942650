"""The join-order (CEP plan generation) problem built from one query and its statistics.

Kolchinsky & Schuster §3.1 (CPG), §4.1 (statistics), §5 (reductions), §6.1 (latency), §6.2 (event
selection strategies). :func:`build` turns an instance (one query, rates per event *type*,
selectivities keyed by *variable* pairs, ``params``) into a :class:`JoinOrderProblem`: one
:class:`Conjunct` per DNF conjunct, each a pure conjunction in log space:

- ``lc[i] = ln(W r_i)`` (for ``KL(T_i)``: ``r_i W ln 2``, Theorem 4), ``lf[i] = ln sel_ii`` (filter),
- ``b[i, j] = ln sel_ij`` symmetric with a zero diagonal: the product of every condition on the pair,
  times the temporal predicate's selectivity for SEQ pairs [R-SEQ], times the contiguity factor.
- ``order_blocks`` (``seq_temporal="exact"`` only, else empty): the SEQ order as a non-pairwise factor
  of every node, ``P(S) = ∏_blocks ∏_c |S∩c|! / |S∩∪c|!`` (1/k! for a chain of k events of S), the
  probability that i.i.d. timestamps respect the pattern's (series-parallel) order on S
  [R-SEQ-EXACT], see :mod:`cepopt.joinorder.reduce`. The cost model adds it through
  :func:`cepopt.joinorder.cost.order_term`, its one implementation.

Selectivity of a pair: the statistics' value for the variable pair (or, failing that, the type pair);
else the product of the ``SEL`` annotations of the WHERE conditions on that pair; else 1.

``params`` (instance params, overridden by ``--param``; every key is validated here and its error
starts with ``params.<key>``):

=================  ==========  ===================================================================
key                default     meaning
=================  ==========  ===================================================================
cost               auto        ``ord``/``ldj`` order cost, ``tree``/``bj`` tree cost; ``auto``:
                               Cost_ord for an Order plan, Cost_tree for a Tree plan
alpha              0           latency weight α of §6.1 (``Cost = Cost^trpt + α Cost^lat``)
last               (SEQ end)   variable whose arrival ends a match (latency); default: the last
                               positive event of the pattern order
strategy           any         ``any`` (skip-till-any-match), ``next`` (skip-till-next-match),
                               ``contiguity``, ``partition`` (both: next-match cost plus adjacency
                               predicates of selectivity 1/(W Σ r), Σ over every type of the
                               statistics, the whole stream [R-CONTIG])
seq_selectivity    0.5         selectivity of a temporal predicate ``e_i.ts < e_j.ts``
seq_temporal       adjacent    ``adjacent`` (paper-literal: ``seq_selectivity`` per adjacent SEQ
                               pair), ``all_pairs``, ``none`` [R-SEQ], or ``exact``: the probability
                               that i.i.d. timestamps respect the order, 1/k! for k ordered events
                               of a node, exact for every pattern's partial order; not pairwise, so
                               cost ``ldj``/``bj`` and the MILP/CP-SAT methods refuse it [R-SEQ-EXACT]
leaf_filter        true        tree leaves carry their filter: ``PM(leaf) = W r_i sel_ii`` [R-FILT];
                               ``false``: the paper-literal any-match tree cost, no filters at all;
                               no effect under next-match, whose nodes keep them [R-NEXT]
kleene_nonempty    false       ``W r' = 2^{rW} - 1`` instead of ``2^{rW}`` [R-KL]
kleene_poisson     false       base e instead of 2: ``W r' = e^{rW}`` (``e^{rW} - 1`` with
                               ``kleene_nonempty``), the expected number of subsets E[2^N] when the
                               N events of a window arrive as a Poisson process [R-KL-POISSON]
paper_literal      false       next-match order cost ``Σ W m[k]`` as printed (§6.2) [R-NEXT]
cross_products     allowed     ``allowed`` (CEP evaluation, [R-CROSS]) or ``avoid``: plans whose every
                               join has a predicate between its inputs, as database optimizers do
                               (:mod:`cepopt.joinorder.graph`); needs a connected query graph
=================  ==========  ===================================================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cepopt.errors import CepoptError
from cepopt.joinorder.graph import CROSS_PRODUCTS, check_connected
from cepopt.joinorder.reduce import SimpleConjunct, conjuncts
from cepopt.model import Condition, Filter, Query, Statistics
from cepopt.params import check_keys, parse_choice, short_repr

__all__ = ["PROBLEM_OPTIONS", "Conjunct", "JoinOrderProblem", "build", "build_query", "from_arrays"]

#: The --param keys that shape the problem (Family.problem_options).
PROBLEM_OPTIONS = frozenset({
    "cost", "alpha", "last", "strategy", "seq_selectivity", "seq_temporal", "leaf_filter",
    "kleene_nonempty", "kleene_poisson", "paper_literal", "cross_products",
})
COSTS = ("auto", "ord", "ldj", "tree", "bj")
_STRATEGIES = {
    "any": "any", "skip-till-any-match": "any", "next": "next", "skip-till-next-match": "next",
    "contiguity": "contiguity", "strict-contiguity": "contiguity", "partition": "partition",
    "partition-contiguity": "partition",
}
LN2 = math.log(2.0)
MIN_SEL = 1e-300


@dataclass(frozen=True, eq=False)
class Conjunct:
    """A pure conjunctive pattern in log space, with the cost options baked in.

    ``names`` are the positive event variables in pattern order (index i everywhere). ``last`` is the
    index of the latency's last event (None: no latency term). ``negations`` are (variable, dep
    bitmask over indices).
    """

    names: tuple[str, ...]
    types: tuple[str, ...]
    kleene: tuple[bool, ...]
    window: float
    lc: np.ndarray
    lf: np.ndarray
    b: np.ndarray
    strategy: str = "any"
    alpha: float = 0.0
    last: int | None = None
    leaf_filter: bool = True
    paper_literal: bool = False
    negations: tuple[tuple[str, int], ...] = ()
    is_seq: bool = False
    #: [R-SEQ-EXACT] per SEQ operator, the bitmasks of its elements' positive events (empty unless
    #: ``seq_temporal="exact"``); priced by :func:`cepopt.joinorder.cost.order_term`.
    order_blocks: tuple[tuple[int, ...], ...] = ()
    #: ``cross_products=avoid``: only plans without cross products (:mod:`cepopt.joinorder.graph`)
    avoid_cross: bool = False

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def next_match(self) -> bool:
        return self.strategy != "any"

    @property
    def a(self) -> np.ndarray:
        """ln w_i = ln(W r_i sel_ii)."""
        return self.lc + self.lf

    @property
    def has_latency(self) -> bool:
        return self.alpha > 0 and self.last is not None

    @property
    def pairwise(self) -> bool:
        """Is every node's cost a product of pairwise selectivities (no [R-SEQ-EXACT] order term)?"""
        return not self.order_blocks

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise CepoptError(f"plan names {name!r}, which is not a positive event of the pattern "
                              f"(events: {', '.join(self.names)})") from None


@dataclass(frozen=True, eq=False)
class JoinOrderProblem:
    """One query's plan-generation problem: its DNF conjuncts and the cost to minimise."""

    conjuncts: tuple[Conjunct, ...]
    cost: str = "auto"
    query: Query | None = None
    name: str | None = None
    params: dict = field(default_factory=dict)

    @property
    def alpha(self) -> float:
        return self.conjuncts[0].alpha

    @property
    def single(self) -> Conjunct:
        return self.conjuncts[0]

    def tree_cost(self, kind: str) -> bool:
        """Does a plan of ``kind`` ("order"/"tree") get scored with the tree cost?"""
        if self.cost in ("tree", "bj"):
            return True
        if self.cost in ("ord", "ldj"):
            if kind == "tree":
                raise CepoptError(f"params.cost: {self.cost!r} scores orders; a tree plan needs "
                                  "cost tree, bj or auto")
            return False
        return kind == "tree"


# ---------------------------------------------------------------------------------------------
# Parameter parsing
# ---------------------------------------------------------------------------------------------


def _bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise CepoptError(f"params.{key}: expected true or false, got {value!r}")


def _float(key: str, value: Any, lo: float, hi: float, lo_open: bool = False) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer of 400 digits
        raise CepoptError(f"params.{key}: expected a number, got {short_repr(value)}") from None
    if isinstance(value, bool) or not math.isfinite(x) or x < lo or x > hi or (lo_open and x == lo):
        raise CepoptError(f"params.{key}: must be in {'(' if lo_open else '['}{lo}, {hi}], got {short_repr(value)}")
    return x


def _options(params: Mapping[str, Any]) -> dict:
    opts = {
        "cost": parse_choice("cost", params.get("cost", "auto"), COSTS),
        "alpha": _float("alpha", params.get("alpha", 0.0), 0.0, math.inf),
        "last": params.get("last"),
        "strategy": parse_choice("strategy", params.get("strategy", "any"), _STRATEGIES),
        "seq_selectivity": _float("seq_selectivity", params.get("seq_selectivity", 0.5), 0.0, 1.0, True),
        "seq_temporal": parse_choice("seq_temporal", params.get("seq_temporal", "adjacent"),
                                ("adjacent", "all_pairs", "none", "exact")),
        "leaf_filter": _bool("leaf_filter", params.get("leaf_filter", True)),
        "kleene_nonempty": _bool("kleene_nonempty", params.get("kleene_nonempty", False)),
        "kleene_poisson": _bool("kleene_poisson", params.get("kleene_poisson", False)),
        "paper_literal": _bool("paper_literal", params.get("paper_literal", False)),
        "cross_products": parse_choice("cross_products", params.get("cross_products", "allowed"), CROSS_PRODUCTS),
    }
    if opts["last"] is not None and not isinstance(opts["last"], str):
        raise CepoptError(f"params.last: expected an event variable, got {opts['last']!r}")
    if opts["strategy"] != "any" and opts["cost"] in ("ldj", "bj"):
        raise CepoptError(f"params.cost: the join cost {opts['cost']!r} is defined for "
                          "skip-till-any-match only")
    return opts


# ---------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------


def build(instance: Any, **options: Any) -> JoinOrderProblem:
    """The problem of a join-order instance (exactly one query); ``options`` override its params."""
    queries = list(instance.workload)
    if len(queries) != 1:
        raise CepoptError(f"queries: a joinorder instance holds exactly one query, got {len(queries)}")
    params = dict(getattr(instance, "params", {}) or {})
    check_keys(params, PROBLEM_OPTIONS)
    params.update(options)
    return build_query(queries[0], instance.statistics, name=getattr(instance, "name", None), **params)


def _resolver(query: Query):
    """Map a reference in the WHERE clause (variable or unambiguous type name) to a variable."""
    from cepopt.model import iter_types

    leaves = list(iter_types(query.pattern))
    by_type: dict[str, list[str]] = {}
    for leaf in leaves:
        by_type.setdefault(leaf.name, []).append(leaf.ref)
    variables = {leaf.ref for leaf in leaves}

    def resolve(ref: str) -> str:
        if ref in variables:
            return ref
        refs = sorted(set(by_type.get(ref, ())))
        if len(refs) == 1:
            return refs[0]
        if not refs:
            raise CepoptError(f"unknown event reference {ref!r} in the WHERE clause")
        raise CepoptError(f"reference {ref!r} is ambiguous: the type has several variables ({', '.join(refs)})")

    return resolve, by_type


def build_query(query: Query, statistics: Statistics, *, name: str | None = None,
                **params: Any) -> JoinOrderProblem:
    """The problem of ``query`` under ``statistics`` (see the module docstring for ``params``)."""
    check_keys(params, PROBLEM_OPTIONS)
    opts = _options(params)
    window = float(query.window.length)
    resolve, by_type = _resolver(query)
    stats_sel = statistics.selectivity_map
    rates = statistics.rate_map

    # Pair selectivities from the query's own annotations (used when the statistics give none).
    annotated: dict[tuple[str, str], float] = {}
    annotated_any: set[tuple[str, str]] = set()
    linked: dict[str, set[str]] = {}
    for pred in query.where:
        if isinstance(pred, Condition):
            x, y = resolve(pred.left.ref), resolve(pred.right.ref)
            key = tuple(sorted((x, y)))
            linked.setdefault(x, set()).add(y)
            linked.setdefault(y, set()).add(x)
            annotated_any.add(key)
            if pred.selectivity is not None:
                annotated[key] = annotated.get(key, 1.0) * pred.selectivity
        elif isinstance(pred, Filter):
            x = resolve(pred.ref)
            if pred.selectivity is not None:
                annotated[(x, x)] = annotated.get((x, x), 1.0) * pred.selectivity
    var_type = {v: t for t, vs in by_type.items() for v in vs}
    for pair in stats_sel:  # a type pair names one event pair only when each type has one variable
        if pair[0] != pair[1] and not set(pair) <= set(var_type) and set(pair) <= set(by_type):
            many = [t for t in pair if len(by_type[t]) > 1]
            if many:
                raise CepoptError(f"statistics.selectivities.{','.join(pair)}: type {many[0]} has several "
                                  f"variables ({', '.join(by_type[many[0]])}) in {name or query.name or 'the query'}:"
                                  " key the selectivity by variables")

    def selectivity(x: str, y: str) -> float:
        key = tuple(sorted((x, y)))
        if key in stats_sel:
            return stats_sel[key]
        tkey = tuple(sorted((var_type[x], var_type[y])))
        if tkey in stats_sel and (x == y or len(by_type[var_type[x]]) == 1 and len(by_type[var_type[y]]) == 1):
            return stats_sel[tkey]
        return annotated.get(key, 1.0)

    built = []
    for sc in conjuncts(query.pattern):
        built.append(_conjunct(sc, window, rates, selectivity, linked, opts))
    if opts["cost"] in ("ldj", "bj") and not all(c.pairwise for c in built):
        raise CepoptError(f"params.seq_temporal: 'exact' prices a node's SEQ order by 1/k!, which is no "
                          f"product of pairwise selectivities; cost {opts['cost']!r} is the join-query "
                          "side of Theorems 1-2 and needs them: use cost auto, ord or tree, or another "
                          "seq_temporal")
    return JoinOrderProblem(tuple(built), opts["cost"], query, name or query.name,
                            {k: v for k, v in opts.items()})


def _conjunct(sc: SimpleConjunct, window: float, rates: Mapping[str, float], selectivity, linked,
              opts: dict) -> Conjunct:
    names = tuple(e.var for e in sc.events)
    n = len(names)
    lc = np.empty(n)
    for i, e in enumerate(sc.events):
        if e.type not in rates:
            raise CepoptError(f"statistics.rates: no rate for event type {e.type!r}")
        r = float(rates[e.type])
        if r <= 0:
            raise CepoptError(f"statistics.rates.{e.type}: join-order planning needs a rate > 0, got {r!r}")
        if e.kleene:
            # ln(W r') = rW ln(base); Poisson arrivals: E[2^N] = e^{rW}, so base e
            base = 1.0 if opts["kleene_poisson"] else LN2
            x = r * window * base
            if opts["kleene_nonempty"]:
                x = _log_expm1(x, math.log(r) + math.log(window) + math.log(base))
            lc[i] = x
        else:
            lc[i] = math.log(window) + math.log(r)  # W r itself may overflow; its log does not
    _check_finite(lc, window)
    lf = np.array([math.log(max(selectivity(v, v), MIN_SEL)) for v in names])
    b = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            b[i, j] = b[j, i] = math.log(max(selectivity(names[i], names[j]), MIN_SEL))
    index = {v: i for i, v in enumerate(names)}
    ls = math.log(opts["seq_selectivity"])
    strategy = opts["strategy"]
    # [R-CONTIG] Σ_all r: every type of the stream (the statistics), not only this conjunct's positive
    # types, since an event of any type between two events breaks their contiguity.
    log_total_rate = float(np.logaddexp.reduce([math.log(x) for x in rates.values() if x > 0]))
    blocks: tuple[tuple[int, ...], ...] = ()
    if opts["seq_temporal"] == "exact":
        blocks = tuple(tuple(_mask(index, group) for group in block) for block in sc.seq_blocks)
    for x, y, adjacent in sc.order_pairs:
        i, j = index[x], index[y]
        if opts["seq_temporal"] == "all_pairs" or (opts["seq_temporal"] == "adjacent" and adjacent):
            b[i, j] += ls
            b[j, i] += ls
        if strategy in ("contiguity", "partition") and adjacent:
            # [R-CONTIG] two events of a window are stream neighbours with probability ~1/(W Σ_all r).
            c = -max(math.log(window) + log_total_rate, 0.0)
            b[i, j] += c
            b[j, i] += c
    # checked even when alpha = 0 (unused then): a misspelt event is a user error either way
    target = opts["last"] if opts["last"] is not None else names[-1]
    if target not in index:
        raise CepoptError(f"params.last: {target!r} is not a positive event of the pattern "
                          f"(events: {', '.join(names)})")
    last = index[target] if opts["alpha"] > 0 else None
    negs = []
    positives = frozenset(names)
    for neg in sc.negated:
        dep = neg.dep
        if not neg.in_seq:
            dep = frozenset(linked.get(neg.var, set()) & positives) or positives
        elif not neg.at_end:
            dep = dep | (frozenset(linked.get(neg.var, set())) & positives)
        mask = 0
        for v in dep:
            mask |= 1 << index[v]
        negs.append((neg.var, mask))
    avoid = opts["cross_products"] == "avoid"
    if avoid:
        check_connected(names, b)
    return Conjunct(names, tuple(e.type for e in sc.events), tuple(e.kleene for e in sc.events), window,
                    lc, lf, b, "any" if strategy == "any" else "next", opts["alpha"], last,
                    opts["leaf_filter"], opts["paper_literal"], tuple(negs), sc.is_seq, blocks, avoid)


def _log_expm1(x: float, log_x: float) -> float:
    """ln(e^x - 1) for x > 0, given ln x: near ln x for tiny x, where x itself may underflow to 0."""
    if x > 1:
        return x + math.log1p(-math.exp(-x))
    return math.log(math.expm1(x)) if x > 1e-100 else log_x


def _check_finite(lc: np.ndarray, window: float) -> None:
    """Refuse statistics whose costs leave floating point: every cost evaluator forms ln PM(S) <=
    Σ max(lc, 0), so the methods would report nan or inf instead of a cost."""
    if not math.isfinite(sum(max(v, 0.0) for v in lc.tolist())):
        raise CepoptError(f"statistics: costs overflow: rates x window too large (W = {window:g}); "
                          "ln of the expected partial matches exceeds floating point")


def _mask(index: Mapping[str, int], names) -> int:
    mask = 0
    for v in names:
        mask |= 1 << index[v]
    return mask


def from_arrays(window: float, rates, sel, *, names=None, alpha: float = 0.0, last: int | None = None,
                strategy: str = "any", leaf_filter: bool = True, paper_literal: bool = False,
                cost: str = "auto", seq=None, cross_products: str = "allowed") -> JoinOrderProblem:
    """A single-conjunct problem straight from W, r and a symmetric sel matrix (diagonal = filters),
    with no pairwise temporal predicates: the ``CostInstance(n, W, r, sel)`` of the spec, for tests and
    experiments. Names default to a, b, c, ...

    ``seq`` adds the [R-SEQ-EXACT] order term: ``"chain"`` (all events in index order) or the SEQ
    operators, each a sequence of its elements' index groups (any series-parallel order, see
    :func:`cepopt.joinorder.reduce.seq_blocks`): ``[[[0], [1, 2], [3]]]`` is ``SEQ(a, AND(b, c), d)``,
    ``[[[0], [1, 2, 3]], [[1], [2]]]`` is ``SEQ(a, AND(SEQ(b, c), d))``."""
    r = np.asarray(rates, dtype=float)
    s = np.asarray(sel, dtype=float)
    n = len(r)
    if s.shape != (n, n) or not np.allclose(s, s.T) or (s <= 0).any() or (s > 1).any():
        raise CepoptError("sel must be a symmetric n x n matrix with entries in (0, 1]")
    if (r <= 0).any() or window <= 0:
        raise CepoptError("rates and the window must be > 0")
    names = tuple(names) if names is not None else tuple(_default_names(n))
    lc = np.log(window) + np.log(r)
    _check_finite(lc, window)
    ls = np.log(np.maximum(s, MIN_SEL))
    lf = np.diag(ls).copy()
    b = ls.copy()
    np.fill_diagonal(b, 0.0)
    if seq is None:
        blocks: tuple[tuple[int, ...], ...] = ()
    elif isinstance(seq, str):
        if seq != "chain":
            raise CepoptError(f"seq must be 'chain' or a list of SEQ operators, got {seq!r}")
        blocks = (tuple(1 << i for i in range(n)),) if n >= 2 else ()
    else:
        ids = {i: i for i in range(n)}
        try:
            blocks = tuple(tuple(_mask(ids, group) for group in block) for block in seq)
        except KeyError as exc:
            raise CepoptError(f"seq names index {exc.args[0]!r}, not in 0..{n - 1}") from None
    avoid = parse_choice("cross_products", cross_products, CROSS_PRODUCTS) == "avoid"
    if avoid:
        check_connected(names, b)
    conj = Conjunct(names, names, (False,) * n, float(window), lc, lf, b, strategy, float(alpha),
                    last if alpha > 0 else None, leaf_filter, paper_literal, (), bool(blocks), blocks, avoid)
    return JoinOrderProblem((conj,), cost, None, None, {"cost": cost, "alpha": alpha, "strategy": strategy,
                                                         "cross_products": cross_products})


def _default_names(n: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    if n <= 26:
        return list(letters[:n])
    return [f"e{i}" for i in range(n)]
