"""A stream for an instance's own workload: its event types at its stated rates, with attribute
values its predicates, GROUP-BY and aggregates can use, and drawn so that stated selectivities hold.

Types are drawn with probabilities proportional to ``statistics.rates`` (types without a rate get the
mean rate; all 1 when none is given); the stream spans ``unit * events / sum(rates)`` time units
(integer timestamps), so each type arrives at about its stated rate per ``unit`` time units (default 1).
``unit`` = the queries' window length draws a stream with the rates as events per window, the unit of
Sharon's cost model (spec A4), whose events of one type rarely share a time stamp. Attributes:

* GROUP-BY and equivalence attributes: ints 0..groups-1;
* attributes of numeric filters: ints spread over [min constant - spread, max constant + spread];
  of string filters: one of the constants or "other";
* attributes of aggregates and conditions: ints 0..99.

Stated selectivities (``statistics.selectivities`` keyed by the pair of references, or a predicate's
own ``selectivity``) are then realised where the predicates allow it, so that the stream is the one
the cost model prices:

* a condition ``x.a op y.b`` between events of two different types whose attributes no other
  predicate, GROUP-BY or aggregate reads: the values of ``a`` on x's type and of ``b`` on y's type are
  drawn so that the condition holds with its selectivity (a pair with m such conditions: each
  ``s^(1/m)``). Such conditions are independent, as the cost model assumes. Orderings use uniform
  ints in 0..10^6 with the right side shifted (the difference of two uniforms is triangular); ``=``
  and ``!=`` use K = ceil(1/s) values and a value that never matches;
* conditions ``x.a = y.a`` that share one attribute ``a`` read by nothing else (an equality chain,
  as in joinorder-e3): ``a`` uniform over round(1/s) values for the pairs' common selectivity s;
* the filters of one reference on an attribute nothing else reads: with the selectivity of the
  reference's key (x, x) (m such attributes: ``s^(1/m)`` each) a value that passes them all, else
  one that fails one of them.

Other stated selectivities cannot be realised by independent draws and are left as drawn above.
A join-order instance whose stream would hold more full matches than an executor can handle is
refused (:func:`predicted_matches`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.model import Condition, Filter, Kleene, Not, Or, Query, Seq, Type
from cepopt.predicates import compare

__all__ = ["MAX_MATCHES", "generate", "predicted_matches"]

#: gen:workload refuses a join-order stream expected to hold more full matches than this.
MAX_MATCHES = 1e8
#: ordering conditions draw ints in 0..SCALE-1 (ties, which ``<`` and ``<=`` count apart, are rare)
SCALE = 1_000_000


def generate(*, seed: int = 0, instance: Any = None, events: int = 10_000, groups: int = 4,
             spread: int = 10, unit: int = 1) -> pd.DataFrame:
    """``events`` events of the instance's event types (see the module docstring)."""
    if instance is None:
        raise CepoptError("the workload stream generator needs an instance")
    if events < 0 or groups < 1 or spread < 0 or unit < 1:
        raise CepoptError("workload stream: events >= 0, groups >= 1, spread >= 0, unit >= 1 needed")
    workload = instance.workload
    types = list(dict.fromkeys(list(instance.event_types) + list(workload.event_types())))
    rates_known = dict(instance.statistics.rates)
    mean = float(np.mean(list(rates_known.values()))) if rates_known else 1.0
    rates = np.array([float(rates_known.get(t, mean)) for t in types])
    if rates.sum() <= 0:
        rates = np.ones(len(types))
    if instance.problem == "joinorder":
        _check_reach(instance, events)
    rng = np.random.default_rng(seed)
    typ = np.array(types)[rng.choice(len(types), size=events, p=rates / rates.sum())]
    span = max(1.0, unit * events / rates.sum())
    ts = np.sort(np.floor(rng.uniform(0, span, size=events))).astype(np.int64)
    cols: dict[str, Any] = {"ts": ts, "type": typ}
    part, numeric, strings, values = set(), {}, {}, set()
    for q in workload:
        part.update(k.attr for k in q.group_by)
        part.update(q.equivalences)
        for f in q.filters:
            if isinstance(f.value, str):
                strings.setdefault(f.attr, set()).add(f.value)
            else:
                numeric.setdefault(f.attr, []).append(f.value)
        for a in q.aggregates:
            if a.attr is not None:
                values.add(a.attr)
        for c in q.conditions:
            values.update((c.left.attr, c.right.attr))
    for attr in sorted(part):
        cols[attr] = rng.integers(0, groups, size=events)
    for attr in sorted(set(numeric) - part):
        lo, hi = int(np.floor(min(numeric[attr]))) - spread, int(np.ceil(max(numeric[attr]))) + spread
        cols[attr] = rng.integers(lo, hi + 1, size=events)
    for attr in sorted(set(strings) - part - set(numeric)):
        choices = np.array(sorted(strings[attr]) + ["other"])
        cols[attr] = choices[rng.integers(0, len(choices), size=events)]
    for attr in sorted(values - part - set(numeric) - set(strings)):
        cols[attr] = rng.integers(0, 100, size=events)
    # The draws above stay as they were (the same stream for a workload without stated
    # selectivities); realised attributes are overwritten from a second generator.
    realize(instance, cols, np.random.default_rng([seed, 1]))
    return pd.DataFrame(cols)


# ---------------------------------------------------------------------------------------------
# Realising stated selectivities
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ref:
    """A reference of a query: its statistics key (variable or type) and its event type."""

    key: str
    type: str


def _refs(query: Query) -> dict[str, _Ref]:
    """Every name a predicate of ``query`` may use -> (its key, its type); a type name with one
    variable names that variable."""
    by_type: dict[str, list[str]] = {}
    out: dict[str, _Ref] = {}
    for leaf in _types(query.pattern):
        by_type.setdefault(leaf.name, []).append(leaf.var or leaf.name)
        if leaf.var is not None:
            out[leaf.var] = _Ref(leaf.var, leaf.name)
    for t, names in by_type.items():
        out.setdefault(t, _Ref(names[0] if len(names) == 1 else t, t))
    return out


def _types(pattern) -> list[Type]:
    if isinstance(pattern, Type):
        return [pattern]
    if isinstance(pattern, Kleene | Not):
        return _types(pattern.inner)
    return [leaf for item in pattern.items for leaf in _types(item)]


def _uses(workload) -> Counter:
    """How many predicates, GROUP-BY keys and aggregates read each attribute (both sides of a
    condition count)."""
    uses: Counter = Counter()
    for q in workload:
        uses.update(k.attr for k in q.group_by)
        uses.update(q.equivalences)
        uses.update(a.attr for a in q.aggregates if a.attr is not None)
        uses.update(f.attr for f in q.filters)
        for c in q.conditions:
            uses.update((c.left.attr, c.right.attr))
    return uses


def _stated(stats: dict, refs: dict[str, _Ref], x: str, y: str) -> float | None:
    """The statistics' selectivity of the pair (x, y) (x == y: x's filters), by key or by type."""
    for a, b in ((refs[x].key, refs[y].key), (refs[x].type, refs[y].type)):
        s = stats.get(tuple(sorted((a, b))))
        if s is not None:
            return float(s)
    return None


def realize(instance: Any, cols: dict[str, Any], rng: np.random.Generator) -> list[str]:
    """Overwrite the attributes of ``cols`` (columns of the stream, ``type`` included) whose stated
    selectivities can be realised (see the module docstring); returns the predicates realised."""
    stats = instance.statistics.selectivity_map
    uses = _uses(instance.workload)
    typ = np.asarray(cols["type"])
    done: list[str] = []
    for q in instance.workload:
        refs = _refs(q)
        done += _realize_conditions(q, refs, stats, uses, cols, typ, rng)
        done += _realize_shared_equalities(q, refs, stats, uses, cols, rng)
        done += _realize_filters(q, refs, stats, uses, cols, typ, rng)
    return done


def _dedicated(c: Condition, refs: dict[str, _Ref], uses: Counter) -> bool:
    """Whether only ``c`` reads its attributes and it relates two different types."""
    own = Counter((c.left.attr, c.right.attr))
    return refs[c.left.ref].type != refs[c.right.ref].type and all(uses[a] == n for a, n in own.items())


def _realize_conditions(q: Query, refs, stats, uses, cols, typ, rng) -> list[str]:
    pairs: dict[tuple[str, str], list[Condition]] = {}
    for c in q.conditions:
        pairs.setdefault(tuple(sorted((refs[c.left.ref].key, refs[c.right.ref].key))), []).append(c)
    done = []
    for conds in pairs.values():
        if not all(_dedicated(c, refs, uses) for c in conds):
            continue
        first = conds[0]
        pair = _stated(stats, refs, first.left.ref, first.right.ref)
        for c in conds:
            s = c.selectivity if c.selectivity is not None else (
                None if pair is None else pair ** (1.0 / len(conds)))
            if s is None:
                continue
            left, right = _condition_values(c.op, float(s), rng, int((typ == refs[c.left.ref].type).sum()),
                                            int((typ == refs[c.right.ref].type).sum()))
            _assign(cols, c.left.attr, typ == refs[c.left.ref].type, left)
            _assign(cols, c.right.attr, typ == refs[c.right.ref].type, right)
            done.append(f"{c.left.ref}.{c.left.attr} {c.op} {c.right.ref}.{c.right.attr}")
    return done


def _shift(s: float) -> float:
    """d with P(U1 < U2 + d) = s for independent uniforms on [0, 1) (their difference is triangular)."""
    return math.sqrt(2 * s) - 1 if s <= 0.5 else 1 - math.sqrt(2 * (1 - s))


def _equal_values(t: float, rng, n_left: int, n_right: int) -> tuple[np.ndarray, np.ndarray]:
    """Values with P(left = right) = t: left uniform on 0..K-1, right the same with probability tK, else K."""
    if t <= 0:
        return np.zeros(n_left, dtype=np.int64), np.ones(n_right, dtype=np.int64)
    k = max(1, math.ceil(1 / t - 1e-12))
    left = rng.integers(0, k, size=n_left)
    right = np.where(rng.random(n_right) < t * k, rng.integers(0, k, size=n_right), k)
    return left, right


def _condition_values(op: str, s: float, rng, n_left: int, n_right: int) -> tuple[np.ndarray, np.ndarray]:
    """Values for the left and right events of ``left op right`` that hold with probability ``s``."""
    if op == "=":
        return _equal_values(s, rng, n_left, n_right)
    if op == "!=":
        return _equal_values(1 - s, rng, n_left, n_right)
    d = round(_shift(s) * SCALE)
    left = rng.integers(0, SCALE, size=n_left)
    right = rng.integers(0, SCALE, size=n_right)
    return (left, right + d) if op in ("<", "<=") else (left, right - d)


def _assign(cols: dict[str, Any], attr: str, rows: np.ndarray, values: np.ndarray) -> None:
    col = np.asarray(cols[attr])
    if col.dtype.kind != np.asarray(values).dtype.kind:
        col = col.astype(np.result_type(col.dtype, np.asarray(values).dtype) if col.dtype.kind in "iuf" else object)
    else:
        col = col.copy()
    col[rows] = values
    cols[attr] = col


def _realize_shared_equalities(q: Query, refs, stats, uses, cols, rng) -> list[str]:
    """``x.a = y.a`` chains over one attribute read by nothing else: ``a`` uniform over 1/s values."""
    by_attr: dict[str, list[Condition]] = {}
    for c in q.conditions:
        if c.left.attr == c.right.attr and refs[c.left.ref].type != refs[c.right.ref].type:
            by_attr.setdefault(c.left.attr, []).append(c)
    done = []
    for attr, conds in by_attr.items():
        if len(conds) < 2 or uses[attr] != 2 * len(conds) or any(c.op != "=" for c in conds):
            continue
        sels = [c.selectivity if c.selectivity is not None else _stated(stats, refs, c.left.ref, c.right.ref)
                for c in conds]
        if any(s is None for s in sels) or max(sels) > 1.01 * min(sels):  # type: ignore[type-var]
            continue
        k = max(1, round(1 / float(np.mean(sels))))
        n = len(np.asarray(cols[attr]))
        cols[attr] = rng.integers(0, k, size=n)
        done += [f"{c.left.ref}.{attr} = {c.right.ref}.{attr}" for c in conds]
    return done


def _filter_values(filters: list[Filter]) -> tuple[list, list]:
    """(values that pass every filter, values that fail one) among the constants and their neighbours."""
    cands: list = ["other", "other-2"]
    for f in filters:
        v = f.value
        if isinstance(v, str):
            cands.append(v)
        elif isinstance(v, bool):
            cands += [v, not v]
        elif isinstance(v, int | float):
            step = 1 if float(v).is_integer() else 0.5
            cands += [v, v - step, v + step]
    numeric = [c for c in cands if isinstance(c, int | float) and not isinstance(c, bool)]
    if numeric:
        cands = numeric  # a numeric attribute stays numeric
    ok = [c for c in dict.fromkeys(cands) if all(compare(f.op, c, f.value) for f in filters)]
    bad = [c for c in dict.fromkeys(cands) if c not in ok]
    return ok, bad


def _realize_filters(q: Query, refs, stats, uses, cols, typ, rng) -> list[str]:
    by_ref: dict[str, dict[str, list[Filter]]] = {}
    for f in q.filters:
        by_ref.setdefault(refs[f.ref].key, {}).setdefault(f.attr, []).append(f)
    same_type = Counter(r.type for r in {r.key: r for r in refs.values()}.values())
    done = []
    for key, attrs in by_ref.items():
        ref = refs[key]
        if same_type[ref.type] > 1:
            continue  # two references of one type share its events' values
        stated = _stated(stats, refs, key, key)
        for attr, filters in attrs.items():
            inline = [f.selectivity for f in filters]
            s = math.prod(inline) if all(x is not None for x in inline) else (  # type: ignore[arg-type]
                None if stated is None else stated ** (1.0 / len(attrs)))
            ok, bad = _filter_values(filters)
            if s is None or uses[attr] != len(filters) or not ok or not bad:
                continue
            rows = typ == ref.type
            n = int(rows.sum())
            passing = rng.random(n) < s
            values = np.where(passing, np.array(ok, dtype=object)[rng.integers(0, len(ok), size=n)],
                              np.array(bad, dtype=object)[rng.integers(0, len(bad), size=n)])
            if all(isinstance(v, int | np.integer) for v in ok + bad):
                values = values.astype(np.int64)
            elif all(isinstance(v, int | float) for v in ok + bad):
                values = values.astype(np.float64)
            _assign(cols, attr, rows, values)
            done += [f"{f.ref}.{f.attr} {f.op} {f.value!r}" for f in filters]
    return done


# ---------------------------------------------------------------------------------------------
# Predicted work
# ---------------------------------------------------------------------------------------------


def _positive(pattern) -> list:
    """(type, kleene) of the positive leaves of a conjunctive pattern (negations left out)."""
    if isinstance(pattern, Type):
        return [(pattern, False)]
    if isinstance(pattern, Kleene):
        return [(pattern.inner, True)]
    if isinstance(pattern, Not):
        return []
    return [leaf for item in pattern.items for leaf in _positive(item)]


def _branches(pattern) -> list:
    if isinstance(pattern, Or):
        return [b for item in pattern.items for b in _branches(item)]
    return [pattern]


def predicted_matches(instance: Any, events: int) -> float:
    """About how many full matches (of the positive part) a stream of ``events`` events of a
    join-order instance holds: per query and OR branch, (T/W)·n·W^n·∏r·∏sel·P(order) over the
    stream's span T, with a Kleene leaf as rW sets (a lower bound of its 2^(rW) - 1) and a SEQ's
    order probability 1/n!. A floor of the work of every plan: each one creates every match."""
    rates = instance.statistics.rate_map
    if not rates or events <= 0:
        return 0.0
    span = max(1.0, events / sum(rates.values()))
    stats = instance.statistics.selectivity_map
    total = 0.0
    for q in instance.workload:
        w = float(q.window.length)
        refs = _refs(q)
        for branch in _branches(q.pattern):
            leaves = _positive(branch)
            if not leaves:
                continue
            log_pm = 0.0
            for leaf, _ in leaves:
                log_pm += math.log(max(w * float(rates.get(leaf.name, 1.0)), 1e-300))
            names = [leaf.var or leaf.name for leaf, _ in leaves]
            for x, y in combinations(names, 2):
                s = _stated(stats, refs, x, y) if x in refs and y in refs else None
                log_pm += math.log(max(s, 1e-300)) if s is not None else 0.0
            for x in names:
                s = _stated(stats, refs, x, x) if x in refs else None
                log_pm += math.log(max(s, 1e-300)) if s is not None else 0.0
            if isinstance(branch, Seq):
                log_pm -= math.lgamma(len(leaves) + 1)
            total += math.exp(min(log_pm, 700.0)) * len(leaves) * span / w
    return total


def _check_reach(instance: Any, events: int) -> None:
    matches = predicted_matches(instance, events)
    if matches > MAX_MATCHES:
        raise CepoptError(
            f"gen:workload: {events} events of {instance.name or 'this instance'} would hold about "
            f"{matches:.3g} matches (more than {MAX_MATCHES:.0e}), beyond any executor: use fewer events, "
            "a smaller window or lower rates (cepopt generate joinorder --window/--rate-max)")

