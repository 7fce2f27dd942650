"""Evaluate join trees (executor/join_plan.py) on a Spark DataFrame of events.

Every plan node is a DataFrame of partial matches: one row per match of its leaf set, with columns
``i<p>_id``, ``i<p>_ts``, ``i<p>_k`` (the bucket copy, below) and the attributes the checks need for
each single-event item p, and ``i<p>_set`` (an array of event structs sorted by ts, id) with
``i<p>_lo``/``i<p>_hi`` for a Kleene item. A node's first and last timestamps are the least / greatest
of its items' (a SQL expression, not a column: a join adds no projection).

- One shuffle per evaluation: the events of the patterns' types are copied into time buckets of
  width W and hash-partitioned by bucket; every node is then computed inside its partition, because
  all joins are equi-joins on the bucket of co-partitioned sides (no further exchange). A partial
  match with first/last timestamps lo/hi is held once per bucket k with ``kW <= lo`` and
  ``hi < (k+2)W`` (one or two copies; an event is copied to buckets b-1 and b of its own bucket b):
  the copies of a join are the intersection of its sides' copies, so a join on the bucket plus the
  window condition finds each match under exactly its copies. Counts and matches keep only the
  canonical copy ``k = floor(lo/W)``.
- Leaves read one event type; its filters are pushed down there. The window itself, the SEQ order,
  distinctness and the pairwise conditions between the two sides are the join condition (one SQL
  expression), so no join is ever a cartesian product.
- A Kleene leaf holds every non-empty set of its events that fits the window: each event with
  every subset of the later events in its window (a range window collects them; the bits of a mask
  choose the subset), so there is no self-join and no loop of Spark jobs.
- A NOT check is a left anti-join with the negated type's events at the node the plan puts it; a
  negated event can reject a match held at bucket k from buckets k-1..k+1, so it has three copies.

Counting: every counted node carries a ``DataFrame.observe`` of its canonical copies (``count``, its
number of partial matches, and ``active``, the sum over them of ``W - (last - first)``, their total
lifetime in the window; divided by the stream's duration it is the time-averaged number of active
partial matches, the quantity the cost model's PM(k) = W^k·∏r·∏sel predicts). The roots (the full
matches) are persisted and one Spark job, a no-op write of the roots, computes every node of every
tree evaluated together, fills the observations and the roots' cache; nothing but the observed
summaries reaches the driver. Plans are built with few DataFrame operations and SQL expressions
(each DataFrame operation is a round trip to the JVM and an analysis, which dominated small plans).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F

from cepopt.errors import CepoptError
from cepopt.executor.join_plan import CompiledPattern, JoinTree, Node, NodeCount, PairCheck, PlanRun
from cepopt.executor.streams import nan_to_null
from cepopt.predicates import OPS

__all__ = ["Evaluation", "JoinRun", "NodeCount", "evaluate", "evaluate_many", "match_values", "prepare_events"]

#: A Kleene leaf enumerates 2^k sets per first event (k later events in its window): refuse beyond.
_MAX_KLEENE_LATER = 20
_KLEENE_MARK = "[cepopt-kleene]"


#: The run of one tree (the engine-neutral record of executor/join_plan.py).
JoinRun = PlanRun


@dataclass
class Evaluation:
    """Trees evaluated in one Spark job: one run per tree, the stream's size and time span
    (observed on the way in; None unless asked for) and the persisted results table when asked for."""

    runs: list[JoinRun]
    time_s: float
    events: int | None = None
    first_ts: int | None = None
    last_ts: int | None = None
    results: DataFrame | None = None


def prepare_events(events: DataFrame) -> DataFrame:
    """``events`` with ``ts`` and ``id`` as longs and NaN turned into null, so that the plan's
    comparisons treat it as missing (cepopt.predicates). A stream without ``id`` gets its row
    numbers 0, 1, ... in input order (the ids the local engine gives; one small job counts the rows of
    each input partition)."""
    for col in ("ts", "type"):
        if col not in events.columns:
            raise CepoptError(f"the stream has no column {col!r} (columns: {', '.join(events.columns)})")
    if "id" not in events.columns:
        events = _with_row_numbers(events)
    events = nan_to_null(events)
    return events.withColumns({"ts": F.col("ts").cast("long"), "id": F.col("id").cast("long")})


def _with_row_numbers(events: DataFrame) -> DataFrame:
    """``events`` with ``id`` = the row number in input order: monotonically_increasing_id is the
    partition index << 33 plus the row's index in its partition, so the row number adds the sizes of
    the partitions before it."""
    df = events.withColumn("_mid", F.monotonically_increasing_id())
    part = F.shiftright(F.col("_mid"), 33)
    sizes = dict(df.groupBy(part.alias("p")).count().collect())
    offsets, total = [], 0
    for p in range(max(sizes, default=-1) + 1):
        offsets.append(total)
        total += int(sizes.get(p, 0))
    base = F.element_at(F.array(*[F.lit(o) for o in offsets] or [F.lit(0)]), part.cast("int") + 1)
    return df.withColumn("id", base + F.col("_mid").bitwiseAND(F.lit((1 << 33) - 1))).drop("_mid")


def _q(name: str) -> str:
    """A column name quoted for SQL."""
    return "`" + name.replace("`", "``") + "`"


def _least(xs: Sequence[str]) -> str:
    return xs[0] if len(xs) == 1 else f"least({', '.join(xs)})"


def _greatest(xs: Sequence[str]) -> str:
    return xs[0] if len(xs) == 1 else f"greatest({', '.join(xs)})"


@dataclass
class _Built:
    """A node's DataFrame, the item positions it binds and its bucket column."""

    df: DataFrame
    positions: tuple[int, ...]
    key: str


class _Stream:
    """The events of some patterns' types (one window), copied to buckets b-1 and b (b+1 too when a
    NOT is checked) and hash-partitioned by bucket ``_k``: the evaluation's one shuffle."""

    def __init__(self, patterns: Sequence[CompiledPattern], events: DataFrame, negate: bool,
                 observation: Observation | None):
        self.w = float(patterns[0].window)
        self.wsql = f"CAST('{self.w!r}' AS DOUBLE)"
        self.negate = negate
        items = [(p, it) for p in patterns for it in p.items if negate or not it.negated]
        attrs = sorted({a for p, it in items for a in p.attrs_of(it.position)}
                       | {f.attr for p, it in items for f in p.filters_of(it.position)})
        missing = set(attrs) - set(events.columns)
        if missing:
            raise CepoptError(f"the stream has no attribute {sorted(missing)[0]!r} used by the pattern")
        attrs = [a for a in attrs if a not in ("id", "ts", "type")]
        if observation is not None:
            events = events.observe(observation, F.count(F.lit(1)).alias("n"), F.min("ts").alias("lo"),
                                    F.max("ts").alias("hi"))
        b = self.bucket("ts")
        copies = f"array({b} - 1, {b}, {b} + 1)" if negate else f"array({b} - 1, {b})"
        df = events.where(F.col("type").isin(sorted({it.type for _, it in items})))
        df = df.selectExpr("id", "ts", "type", *[_q(a) for a in attrs], f"explode({copies}) AS _k")
        # One bucket partition per core: on small data the per-task overhead dominates. Persisted, so
        # that the leaves' type filters are not pushed below the shuffle (one exchange per leaf
        # otherwise) and every leaf reads the same bucket partitions.
        parts = max(1, int(df.sparkSession.sparkContext.defaultParallelism))
        self.df = df.repartition(parts, "_k").persist()

    def bucket(self, ts: str) -> str:
        return f"CAST(floor({ts} / {self.wsql}) AS BIGINT)"


class _Evaluator:
    """Builds the DataFrames of one tree's nodes over a bucketed stream."""

    def __init__(self, pattern: CompiledPattern, stream: _Stream):
        self.p = pattern
        self.s = stream
        self.w = stream.w
        self.negate = stream.negate and bool(pattern.negations)
        self.observations: list[tuple[int, Observation]] = []

    # -- SQL of items and checks ------------------------------------------------------------

    def _lo(self, pos: int) -> str:
        return f"i{pos}_lo" if self.p.items[pos].kleene else f"i{pos}_ts"

    def _hi(self, pos: int) -> str:
        return f"i{pos}_hi" if self.p.items[pos].kleene else f"i{pos}_ts"

    def span(self, positions: Sequence[int]) -> tuple[str, str]:
        """(first, last) timestamp of a partial match binding ``positions``, as SQL."""
        return _least([self._lo(p) for p in positions]), _greatest([self._hi(p) for p in positions])

    def _over(self, pos: int, fn: Callable[[Callable[[str], str]], str]) -> str:
        """``fn(get)`` for the event of item ``pos``, or for every event of its Kleene set."""
        if self.p.items[pos].kleene:
            var = f"x{pos}"
            return f"forall(i{pos}_set, {var} -> {fn(lambda attr: f'{var}.{_q(attr)}')})"
        return fn(lambda attr: _q(f"i{pos}_{attr}"))

    def _check(self, c: PairCheck) -> str:
        if c.kind == "order":
            return f"{self._hi(c.a)} <= {self._lo(c.b)}"
        if c.kind == "distinct":
            return self._over(c.a, lambda ga: self._over(c.b, lambda gb: f"{ga('id')} != {gb('id')}"))
        if c.op not in OPS:
            raise CepoptError(f"unknown comparison {c.op!r}")
        return self._over(c.a, lambda ga: self._over(c.b, lambda gb: f"({ga(c.attr)} {c.op} {gb(c.battr)})"))

    def _window_join(self, lkey: str, rkey: str, positions: Sequence[int], xs: Sequence[int],
                     ys: Sequence[int]) -> Column:
        """Same bucket, the window over ``positions`` and every check between ``xs`` and ``ys``."""
        lo, hi = self.span(positions)
        parts = [f"{lkey} = {rkey}", f"{hi} - {lo} <= {self.s.wsql}"]
        parts += [self._check(c) for c in self.p.checks_between(xs, ys)]
        return F.expr(" AND ".join(f"({x})" for x in parts))

    # -- leaves -------------------------------------------------------------------------------

    def _events_of(self, pos: int) -> DataFrame:
        """The item's events with their bucket copies ``_k`` (a positive item: buckets b-1 and b)."""
        cond = F.col("type") == F.lit(self.p.items[pos].type)
        if self.s.negate and not self.p.items[pos].negated:
            cond = cond & F.expr(f"_k <= {self.s.bucket('ts')}")
        for f in self.p.filters_of(pos):
            cond = cond & OPS[f.op](F.col(f.attr), F.lit(f.value))
        return self.s.df.where(cond)

    def _single(self, pos: int) -> _Built:
        cols = [f"id AS i{pos}_id", f"ts AS i{pos}_ts", f"_k AS i{pos}_k"]
        cols += [f"{_q(a)} AS {_q(f'i{pos}_{a}')}" for a in self.p.attrs_of(pos)]
        return _Built(self._events_of(pos).selectExpr(*cols), (pos,), f"i{pos}_k")

    def _kleene(self, pos: int) -> _Built:
        """Every non-empty set of the item's events within the window, as an array of event structs
        sorted by (ts, id): each event, as the set's first, with every subset of the later events
        (same bucket copy and equivalence values) that fit the window, chosen by the bits of a mask.
        One pass inside each bucket partition, no cartesian product; the number of rows is the
        2^(events per window) of Theorem 4."""
        attrs = [a for a in self.p.attrs_of(pos) if a not in ("ts", "id")]
        eq = [F.col(a) for a in self.p.equivalences]
        base = self._events_of(pos).select(
            "id", "ts", "_k", *eq, F.struct(F.col("ts"), F.col("id"), *[F.col(a) for a in attrs]).alias("_e"))
        span = Window.partitionBy("_k", *eq).orderBy("ts").rangeBetween(0, int(math.floor(self.w)))

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
        out = df.select(F.concat(F.array("_e"), chosen).alias(f"i{pos}_set"), F.col("ts").alias(f"i{pos}_lo"),
                        F.col("_k").alias(f"i{pos}_k"))
        out = out.withColumn(f"i{pos}_hi", F.element_at(F.col(f"i{pos}_set"), -1)["ts"])
        return _Built(out, (pos,), f"i{pos}_k")

    # -- the tree -----------------------------------------------------------------------------

    def _negate(self, node: _Built, pos: int) -> _Built:
        neg = self._single(pos)
        cond = self._window_join(node.key, neg.key, (*node.positions, pos), [pos], node.positions)
        # Both sides are hash-partitioned by bucket: a shuffled hash join needs no exchange (a
        # broadcast would cost a job per join).
        return _Built(node.df.join(neg.df.hint("shuffle_hash"), cond, "left_anti"), node.positions, node.key)

    def canonical(self, node: _Built) -> str:
        """SQL: the row is the copy at the bucket of its first timestamp (one per partial match)."""
        return f"{node.key} = {self.s.bucket(self.span(node.positions)[0])}"

    def node(self, node: Node, out: list[NodeCount], names: Sequence[str]) -> _Built:
        if node.leaf is not None:
            pos = self.p.leaves[node.leaf]
            built = self._kleene(pos) if self.p.items[pos].kleene else self._single(pos)
        else:
            left = self.node(node.left, out, names)  # type: ignore[arg-type]
            right = self.node(node.right, out, names)  # type: ignore[arg-type]
            positions = tuple(sorted(left.positions + right.positions))
            cond = self._window_join(left.key, right.key, positions, left.positions, right.positions)
            built = _Built(left.df.join(right.df.hint("shuffle_hash"), cond, "inner"), positions, left.key)
        negations = node.negations if self.negate else ()
        for pos in negations:
            built = self._negate(built, pos)
        if node.counted:
            lo, hi = self.span(built.positions)
            canon = self.canonical(built)
            obs = Observation()
            built.df = built.df.observe(
                obs, F.expr(f"count_if({canon})").alias("n"),
                F.expr(f"sum(CASE WHEN {canon} THEN {self.s.wsql} - ({hi} - {lo}) END)").alias("a"))
            self.observations.append((len(out), obs))
        out.append(NodeCount(node.label(names), tuple(sorted(node.leaves)), node.counted, None, None, negations))
        return built

    def read(self, out: list[NodeCount]) -> None:
        for k, obs in self.observations:
            got = _observed(obs)
            out[k].count = int(got.get("n") or 0)
            out[k].active = float(got.get("a") or 0.0)


#: optimizer rules that drop a subtree whose result is known to be empty (and its observations with it)
_KEEP_OBSERVED = ("org.apache.spark.sql.catalyst.optimizer.PropagateEmptyRelation",
                  "org.apache.spark.sql.catalyst.optimizer.PruneFilters")


def _observed(obs: Observation) -> dict:
    """An Observation's metrics, or {} (no rows) when Spark's optimizer removed the observed plan:
    predicates that contradict each other (``x = y AND x != y``) make it an empty relation, no metrics
    are ever sent, and PySpark's ``toPyRow`` fails its assertion instead of returning an empty row."""
    try:
        return obs.get
    except Exception as exc:  # noqa: BLE001 -- Py4JJavaError; anything else is raised again
        if "toPyRow" in str(exc) and "assertion failed" in str(exc):
            return {}
        raise


def _kleene_error(exc: Exception) -> CepoptError | None:
    text = str(exc)
    if _KLEENE_MARK not in text:
        return None
    return CepoptError(text[text.index(_KLEENE_MARK) + len(_KLEENE_MARK):].split("\n")[0].strip()
                       .split(" SQLSTATE")[0])


def evaluate_many(trees: Sequence[JoinTree], events: DataFrame, *, negate: bool = True,
                  observe_stream: bool = False,
                  results: Callable[[list[DataFrame]], DataFrame] | None = None) -> Evaluation:
    """Run ``trees`` on ``events`` (a DataFrame with id, ts, type and attributes; see prepare_events)
    in one Spark job per window length (the branches of a disjunction share theirs).

    Each run holds its root's DataFrame of full matches (persisted; call ``release()`` when done) and
    the measured partial matches of every node, in post-order (the order of ``tree.nodes``).
    ``negate=False`` skips the NOT checks: the counts are then those of the positive part, which
    is what the cost model prices for a pattern with negation (spec joinorder §2.6), and the
    "matches" are the positive part's. ``observe_stream`` also counts the stream's events and its
    first and last timestamps on the way (no extra job). ``results`` maps the roots' DataFrames to
    one DataFrame (the driver's results table): that one is persisted and materialised by the job
    instead of the roots (``Evaluation.results``; the runs' ``matches`` are then not cached).
    """
    start = time.perf_counter()
    spark = events.sparkSession
    conf = spark.conf
    # Without adaptive execution the whole plan is one Spark job (one shuffle); with it every query
    # stage becomes a job of its own. Restored afterwards.
    aqe = conf.get("spark.sql.adaptive.enabled", "true")
    conf.set("spark.sql.adaptive.enabled", "false")
    # Predicates that contradict each other (x = y AND x != y) would let the optimizer replace a node and
    # its subtree, observations included, by an empty relation: the counts of the nodes below are needed.
    excluded = conf.get("spark.sql.optimizer.excludedRules", "")
    conf.set("spark.sql.optimizer.excludedRules", ",".join(filter(None, [excluded, *_KEEP_OBSERVED])))
    groups: dict[float, list[int]] = {}
    for i, tree in enumerate(trees):
        groups.setdefault(float(tree.pattern.window), []).append(i)
    stream_obs = Observation() if observe_stream else None
    nodes: list[list[NodeCount]] = [[] for _ in trees]
    roots: list[DataFrame] = [None] * len(trees)  # type: ignore[list-item]
    streams, evaluators, cached = [], [], []
    try:
        for idx in groups.values():
            stream = _Stream([trees[i].pattern for i in idx], events, negate,
                             stream_obs if not streams else None)
            streams.append(stream)
            for i in idx:
                ev = _Evaluator(trees[i].pattern, stream)
                root = ev.node(trees[i].root, nodes[i], trees[i].pattern.leaf_names())
                roots[i] = root.df.where(F.expr(ev.canonical(root)))
                evaluators.append((i, ev))
        if results is not None:
            final = results(roots).persist()
            cached, job = [final], final
        else:
            roots = cached = [r.persist() for r in roots]
            job = reduce(DataFrame.unionAll, [r.select(F.lit(i).alias("_b")) for i, r in enumerate(roots)])
        try:
            job.write.format("noop").mode("overwrite").save()
        except Exception as exc:  # a Kleene guard raised inside Spark
            err = _kleene_error(exc)
            if err is not None:
                raise err from None
            raise
        for i, ev in evaluators:
            ev.read(nodes[i])
    except BaseException:
        for r in cached:
            r.unpersist()
        raise
    finally:
        for s in streams:
            s.df.unpersist()
        conf.set("spark.sql.adaptive.enabled", aqe)
        conf.set("spark.sql.optimizer.excludedRules", excluded)
    elapsed = time.perf_counter() - start
    keep = results is None
    runs = [JoinRun(t, roots[i], nodes[i], elapsed, [roots[i]] if keep else []) for i, t in enumerate(trees)]
    out = Evaluation(runs, elapsed, results=None if keep else cached[0])
    if stream_obs is not None:
        # a plan Spark pruned to an empty relation sent no metrics: one aggregate over the stream instead
        got = _observed(stream_obs) or events.agg(F.count(F.lit(1)).alias("n"), F.min("ts").alias("lo"),
                                                  F.max("ts").alias("hi")).first().asDict()
        out.events, out.first_ts, out.last_ts = int(got.get("n") or 0), got.get("lo"), got.get("hi")
    return out


def evaluate(tree: JoinTree, events: DataFrame, *, negate: bool = True) -> JoinRun:
    """Run one ``tree`` on ``events``: :func:`evaluate_many` of one tree."""
    return evaluate_many([tree], events, negate=negate).runs[0]


def match_values(pattern: CompiledPattern, matches: DataFrame) -> DataFrame:
    """One ``value`` column: the canonical text of each match (``ref=id,...``; a Kleene item
    ``ref=[id;id]`` with ascending ids), the same text as join_reference.match_text."""
    parts = []
    for k, pos in enumerate(pattern.leaves):
        item = pattern.items[pos]
        sep = "," if k else ""
        if item.kleene:
            parts.append(f"'{sep}{item.ref}=[', array_join(transform(array_sort(transform(i{pos}_set, "
                         f"x -> x.id)), i -> CAST(i AS STRING)), ';'), ']'")
        else:
            parts.append(f"'{sep}{item.ref}=', CAST(i{pos}_id AS STRING)")
    return matches.selectExpr(f"concat({', '.join(parts)}) AS value")
