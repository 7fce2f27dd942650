"""Evaluate a join tree (executor/join_plan.py) on a Spark DataFrame of events.

Every plan node is a DataFrame of partial matches: one row per match of its leaf set, with columns
``i<p>_id``, ``i<p>_ts`` and the attributes the checks need for each single-event item p, ``i<p>_set``
(an array of event structs sorted by ts, id) with ``i<p>_lo``/``i<p>_hi`` for a Kleene item, and the
match's first and last timestamps ``_lo``/``_hi``.

- One shuffle per plan: the events of the pattern's types are copied into time buckets of width
  W and hash-partitioned by bucket ``_k``; every node is then computed inside its partition, because
  all joins are equi-joins on ``_k`` of co-partitioned sides (no further exchange; Spark's per-stage
  overhead, not the data, dominated the wall time of small plans). A partial match with first/last
  timestamps lo/hi is held once per bucket k with ``kW <= lo`` and ``hi < (k+2)W`` (one or two
  copies; an event is copied to buckets b-1 and b of its own bucket b): the copies of a join are the
  intersection of its sides' copies, so a join on ``_k`` plus the window condition finds each match
  under exactly its copies. Counts and matches keep only the canonical copy ``k = floor(lo/W)``.
- Leaves read one event type; its filters are pushed down there. The window itself, the SEQ order,
  distinctness and the pairwise conditions between the two sides are the join condition, so no
  join is ever a cartesian product.
- A Kleene leaf holds every non-empty set of its events that fits the window: each event with
  every subset of the later events in its window (a range window collects them; the bits of a mask
  choose the subset), so there is no self-join and no loop of Spark jobs.
- A NOT check is a left anti-join with the negated type's events at the node the plan puts it; a
  negated event can reject a match held at bucket k from buckets k-1..k+1, so it has three copies.

Every counted node is persisted, and one Spark job (one union, one group-by) counts them all:
``count`` is a node's number of partial matches and ``active`` the sum over them of
``W - (last - first)``, their total lifetime in the window; divided by the stream's duration it is
the time-averaged number of active partial matches, the quantity the cost model's
PM(k) = W^k·∏r·∏sel predicts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cepopt.errors import CepoptError
from cepopt.executor.join_plan import CompiledPattern, JoinTree, Node, PairCheck
from cepopt.executor.streams import nan_to_null
from cepopt.predicates import OPS

__all__ = ["JoinRun", "NodeCount", "evaluate", "match_values", "prepare_events"]

#: A Kleene leaf enumerates 2^k sets per first event (k later events in its window): refuse beyond.
_MAX_KLEENE_LATER = 20
_KLEENE_MARK = "[cepopt-kleene]"


@dataclass
class NodeCount:
    """Measured partial matches of one plan node."""

    label: str
    leaves: tuple[int, ...]
    counted: bool
    count: int | None
    active: float | None
    negations: tuple[int, ...] = ()


@dataclass
class JoinRun:
    """The outcome of one plan: the root DataFrame (the full matches), per-node counts, wall time."""

    tree: JoinTree
    matches: DataFrame
    nodes: list[NodeCount]
    time_s: float
    _cached: list[DataFrame] = field(default_factory=list, repr=False)

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
        return int(self.nodes[-1].count) if self.nodes[-1].count is not None else self.matches.count()

    def release(self) -> None:
        """Unpersist the node DataFrames."""
        for df in self._cached:
            df.unpersist()
        self._cached.clear()


def prepare_events(events: DataFrame) -> DataFrame:
    """``events`` with ``ts`` and ``id`` as longs (an ``id`` is added, in input order, when absent) and
    NaN turned into null, so that the plan's comparisons treat it as missing (cepopt.predicates)."""
    for col in ("ts", "type"):
        if col not in events.columns:
            raise CepoptError(f"the stream has no column {col!r} (columns: {', '.join(events.columns)})")
    if "id" not in events.columns:
        events = events.withColumn("id", F.monotonically_increasing_id())
    events = nan_to_null(events)
    return events.withColumn("ts", F.col("ts").cast("long")).withColumn("id", F.col("id").cast("long"))


class _Evaluator:
    def __init__(self, pattern: CompiledPattern, events: DataFrame, *, negate: bool = True):
        self.p = pattern
        self.w = float(pattern.window)
        self.negate = negate and bool(pattern.negations)
        self.cached: list[DataFrame] = []
        self.counted: list[tuple[int, DataFrame]] = []
        missing = {a for it in pattern.items for a in pattern.attrs_of(it.position)} - set(events.columns)
        if missing:
            raise CepoptError(f"the stream has no attribute {sorted(missing)[0]!r} used by the pattern")
        self.ev = self._bucketed(events)

    def _bucket(self, ts: Column) -> Column:
        return F.floor(ts / F.lit(self.w)).cast("long")

    def _bucketed(self, events: DataFrame) -> DataFrame:
        """The events of the pattern's types, copied to buckets b-1 and b (b+1 too when a NOT is
        checked) and hash-partitioned by bucket: the plan's one shuffle."""
        items = [it for it in self.p.items if self.negate or not it.negated]
        attrs = sorted({a for it in items for a in self.p.attrs_of(it.position)}
                       | {f.attr for it in items for f in self.p.filters_of(it.position)} - {"id", "ts", "type"})
        b = self._bucket(F.col("ts"))
        copies = F.array(b - 1, b, b + 1) if self.negate else F.array(b - 1, b)
        df = events.where(F.col("type").isin(sorted({it.type for it in items})))
        df = df.select("id", "ts", "type", *attrs, F.explode(copies).alias("_k"))
        # One bucket partition per core: every counted node adds a task per partition to the
        # counting job, and on small data the per-task overhead dominates.
        parts = max(1, int(df.sparkSession.sparkContext.defaultParallelism))
        # Persisted, so that the leaves' type filters are not pushed below the shuffle (one
        # exchange per leaf otherwise) and every node reads the same bucket partitions.
        df = df.repartition(parts, "_k").persist()
        self.cached.append(df)
        return df

    # -- column accessors ---------------------------------------------------------------------

    def _attr(self, pos: int, attr: str) -> Column:
        return F.col(f"i{pos}_{attr}")

    def _lo(self, pos: int) -> Column:
        return F.col(f"i{pos}_lo") if self.p.items[pos].kleene else F.col(f"i{pos}_ts")

    def _hi(self, pos: int) -> Column:
        return F.col(f"i{pos}_hi") if self.p.items[pos].kleene else F.col(f"i{pos}_ts")

    def _over(self, pos: int, fn: Callable[[Callable[[str], Column]], Column]) -> Column:
        """``fn(get)`` for the event of item ``pos``, or for every event of its Kleene set."""
        if self.p.items[pos].kleene:
            return F.forall(F.col(f"i{pos}_set"), lambda x: fn(lambda attr: x[attr]))
        return fn(lambda attr: self._attr(pos, attr))

    def _check(self, c: PairCheck) -> Column:
        if c.kind == "order":
            return self._hi(c.a) <= self._lo(c.b)
        if c.kind == "distinct":
            return self._over(c.a, lambda ga: self._over(c.b, lambda gb: ga("id") != gb("id")))
        op = OPS[c.op]
        return self._over(c.a, lambda ga: self._over(c.b, lambda gb: op(ga(c.attr), gb(c.battr))))

    def _checks(self, xs: Sequence[int], ys: Sequence[int]) -> Column | None:
        out = None
        for c in self.p.checks_between(xs, ys):
            e = self._check(c)
            out = e if out is None else out & e
        return out

    # -- leaves -------------------------------------------------------------------------------

    def _events_of(self, pos: int) -> DataFrame:
        """The item's events with their bucket copies ``_k`` (a positive item: buckets b-1 and b)."""
        df = self.ev.where(F.col("type") == self.p.items[pos].type)
        if self.negate and not self.p.items[pos].negated:
            df = df.where(F.col("_k") <= self._bucket(F.col("ts")))
        for f in self.p.filters_of(pos):
            df = df.where(OPS[f.op](F.col(f.attr), F.lit(f.value)))
        return df

    def _single(self, pos: int) -> DataFrame:
        cols = [F.col("id").alias(f"i{pos}_id"), F.col("ts").alias(f"i{pos}_ts")]
        cols += [F.col(a).alias(f"i{pos}_{a}") for a in self.p.attrs_of(pos)]
        return self._events_of(pos).select(*cols, "_k")

    def _leaf(self, leaf: int) -> DataFrame:
        pos = self.p.leaves[leaf]
        if self.p.items[pos].kleene:
            return self._kleene(pos)
        return self._single(pos).withColumn("_lo", F.col(f"i{pos}_ts")).withColumn("_hi", F.col(f"i{pos}_ts"))

    def _kleene(self, pos: int) -> DataFrame:
        """Every non-empty set of the item's events within the window, as an array of event structs
        sorted by (ts, id): each event, as the set's first, with every subset of the later events
        (same bucket copy and equivalence values) that fit the window, chosen by the bits of a mask.
        One pass inside each bucket partition, no cartesian product; the number of rows is the
        2^(events per window) of Theorem 4."""
        attrs = self.p.attrs_of(pos)
        base = self._events_of(pos).select(
            "id", "ts", "_k", *[F.col(a) for a in self.p.equivalences],
            F.struct(F.col("ts"), F.col("id"), *[F.col(a) for a in attrs if a not in ("ts", "id")]).alias("_e"))
        span = Window.partitionBy("_k", *[F.col(a) for a in self.p.equivalences]).orderBy("ts").rangeBetween(
            0, int(math.floor(self.w)))

        def joins(x: Column) -> Column:
            after = (x["ts"] > F.col("ts")) | ((x["ts"] == F.col("ts")) & (x["id"] > F.col("id")))
            # the window puts the events of a missing (null) equivalence value together, but a missing
            # value equals nothing (cepopt.predicates): such an event is a set of its own only
            for a in self.p.equivalences:
                after = after & OPS["="](x[a], F.col(a))
            return after

        later = F.filter(F.array_sort(F.collect_list("_e").over(span)), joins)
        df = base.select("_e", "ts", "_k", later.alias("_later"))
        k = F.size("_later")
        # Fail before building 2^k masks: the query gets a user error, not an out-of-memory.
        top = F.when(k > _MAX_KLEENE_LATER, F.raise_error(F.lit(
            f"{_KLEENE_MARK} KL({self.p.items[pos].ref}): more than {_MAX_KLEENE_LATER} events in one window; "
            "its 2^k sets are beyond this executor"))).otherwise(F.pow(F.lit(2), k).cast("long") - 1)
        df = df.select("_e", "ts", "_k", "_later", F.explode(F.sequence(F.lit(0), top)).alias("_mask"))
        chosen = F.filter("_later", lambda x, i: F.col("_mask").bitwiseAND(F.pow(F.lit(2), i).cast("long")) != 0)
        sets = F.concat(F.array("_e"), chosen)
        out = df.select(sets.alias(f"i{pos}_set"), F.col("ts").alias(f"i{pos}_lo"), "_k")
        out = out.withColumn(f"i{pos}_hi", F.element_at(F.col(f"i{pos}_set"), -1)["ts"])
        return out.select("*", F.col(f"i{pos}_lo").alias("_lo"), F.col(f"i{pos}_hi").alias("_hi"))

    # -- joins and negation -------------------------------------------------------------------

    def _join(self, left: DataFrame, right: DataFrame, lpos: Sequence[int], rpos: Sequence[int]) -> DataFrame:
        rr = (right.withColumnRenamed("_lo", "_rlo").withColumnRenamed("_hi", "_rhi")
              .withColumnRenamed("_k", "_rk"))
        cond = ((F.col("_k") == F.col("_rk"))
                & (F.greatest("_hi", "_rhi") - F.least("_lo", "_rlo") <= self.w))
        extra = self._checks(lpos, rpos)
        if extra is not None:
            cond = cond & extra
        # Both sides are hash-partitioned by bucket: a shuffled hash join needs no exchange (a
        # broadcast would cost a job per join).
        return (left.join(rr.hint("shuffle_hash"), cond, "inner")
                .withColumn("_lo", F.least("_lo", "_rlo")).withColumn("_hi", F.greatest("_hi", "_rhi"))
                .drop("_rk", "_rlo", "_rhi"))

    def _negate(self, df: DataFrame, pos: int, positions: Sequence[int]) -> DataFrame:
        neg = self._single(pos).withColumnRenamed("_k", "_nk")
        ts = F.col(f"i{pos}_ts")
        cond = ((F.col("_k") == F.col("_nk"))
                & (F.greatest(F.col("_hi"), ts) - F.least(F.col("_lo"), ts) <= self.w))
        extra = self._checks([pos], positions)
        if extra is not None:
            cond = cond & extra
        return df.join(neg.hint("shuffle_hash"), cond, "left_anti")

    def canonical(self, df: DataFrame) -> DataFrame:
        """One row per partial match: the copy at the bucket of its first timestamp."""
        return df.where(F.col("_k") == self._bucket(F.col("_lo")))

    # -- the tree -----------------------------------------------------------------------------

    def node(self, node: Node, out: list[NodeCount], names: Sequence[str]) -> DataFrame:
        if node.leaf is not None:
            df = self._leaf(node.leaf)
        else:
            left = self.node(node.left, out, names)  # type: ignore[arg-type]
            right = self.node(node.right, out, names)  # type: ignore[arg-type]
            df = self._join(left, right, self._positions(node.left.leaves),  # type: ignore[union-attr]
                            self._positions(node.right.leaves))  # type: ignore[union-attr]
        negations = node.negations if self.negate else ()
        for pos in negations:
            df = self._negate(df, pos, self._positions(node.leaves))
        if node.counted:
            # Persisted without an action: the single counting job of evaluate() materialises every
            # node once, and the parents read their children from the cache.
            df = df.persist()
            self.cached.append(df)
            self.counted.append((len(out), df))
        out.append(NodeCount(node.label(names), tuple(sorted(node.leaves)), node.counted, None, None, negations))
        return df

    def count(self, out: list[NodeCount]) -> None:
        """Count every persisted node in one Spark job: a union of the canonical copies, one group-by."""
        parts = [self.canonical(df).select(F.lit(k).alias("k"), (F.lit(self.w) - (F.col("_hi") - F.col("_lo")))
                                           .cast("double").alias("a"))
                 for k, df in self.counted]
        union = parts[0]
        for part in parts[1:]:
            union = union.unionByName(part)
        try:
            rows = union.groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.sum("a").alias("a")).collect()
        except Exception as exc:  # a Kleene guard raised inside Spark
            text = str(exc)
            if _KLEENE_MARK in text:
                raise CepoptError(text[text.index(_KLEENE_MARK) + len(_KLEENE_MARK):].split("\n")[0].strip()
                                  .split(" SQLSTATE")[0]) from None
            raise
        for k, _ in self.counted:
            out[k].count, out[k].active = 0, 0.0
        for row in rows:
            out[row["k"]].count = int(row["n"])
            out[row["k"]].active = float(row["a"] or 0.0)

    def _positions(self, leaves) -> list[int]:
        return [self.p.leaves[i] for i in sorted(leaves)]

def evaluate(tree: JoinTree, events: DataFrame, *, negate: bool = True) -> JoinRun:
    """Run ``tree`` on ``events`` (a DataFrame with id, ts, type and attributes; see prepare_events).

    Returns the root's DataFrame of full matches (persisted; call ``release()`` when done) and the
    measured partial matches of every node, in post-order (the order of ``tree.nodes``).
    ``negate=False`` skips the NOT checks: the counts are then those of the positive part, which
    is what the cost model prices for a pattern with negation (spec joinorder §2.6), and the
    "matches" are the positive part's.
    """
    start = time.perf_counter()
    conf = events.sparkSession.conf
    aqe = conf.get("spark.sql.adaptive.enabled", "true")
    # Without adaptive execution the whole plan is one Spark job (one shuffle, one group-by);
    # with it every cached node and query stage becomes a job of its own. Restored afterwards.
    conf.set("spark.sql.adaptive.enabled", "false")
    try:
        ev = _Evaluator(tree.pattern, events, negate=negate)
        nodes: list[NodeCount] = []
        root = ev.node(tree.root, nodes, tree.pattern.leaf_names())
        ev.count(nodes)
    finally:
        conf.set("spark.sql.adaptive.enabled", aqe)
    elapsed = time.perf_counter() - start
    return JoinRun(tree, ev.canonical(root).drop("_k"), nodes, elapsed, ev.cached)


def match_values(pattern: CompiledPattern, matches: DataFrame) -> DataFrame:
    """One ``value`` column: the canonical text of each match (``ref=id,...``; a Kleene item
    ``ref=[id;id]`` with ascending ids), the same text as join_reference.match_text."""
    parts = []
    for k, pos in enumerate(pattern.leaves):
        item = pattern.items[pos]
        sep = "," if k else ""
        if item.kleene:
            ids = F.array_sort(F.transform(F.col(f"i{pos}_set"), lambda x: x["id"]))
            text = F.concat(F.lit(f"{sep}{item.ref}=["),
                            F.array_join(F.transform(ids, lambda i: i.cast("string")), ";"), F.lit("]"))
        else:
            text = F.concat(F.lit(f"{sep}{item.ref}="), F.col(f"i{pos}_id").cast("string"))
        parts.append(text)
    return matches.select(F.concat(*parts).alias("value"))
