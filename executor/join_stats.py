"""Statistics of a join pattern estimated from a stream: rates per type and condition selectivities.

``estimate_statistics(query, events)`` gives what the join-order cost model needs (spec joinorder
§1.2): the rate of every event type of the query (events per time unit over the stream's span) and
the selectivity of every filter (key (x, x)) and of the conditions between every pair of event
references (key (x, y), the product of all its conditions measured jointly), keyed by variables as
:class:`cepopt.model.Statistics` expects. Counts run on Spark over the whole stream; selectivities on
a random sample of each type's events: a filter on the sampled events, a pair condition on
``sample`` random pairs of sampled events that pass their filters; a missing value is never a hit,
as in the executors (cepopt.predicates). SEQ order predicates are not measured: the cost model has
its own parameter for them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.executor.join_plan import CompiledPattern, compile_query
from cepopt.model import Query, Statistics
from cepopt.predicates import compare_arrays

__all__ = ["estimate_statistics"]


def _patterns(query: Query) -> list[CompiledPattern]:
    from cepopt.joinorder.reduce import dnf

    return [compile_query(query, p) for p in dnf(query.pattern)]


def _type_samples(events, types: list[str], columns: list[str], sample: int, seed: int):
    """(rows per type, duration, samples per type as pandas)."""
    if isinstance(events, pd.DataFrame):
        if len(events) == 0:
            raise CepoptError("the stream is empty: no statistics can be estimated")
        counts = events["type"].value_counts().to_dict()
        duration = float(events["ts"].max() - events["ts"].min())
        samples = {}
        for i, t in enumerate(types):
            rows = events[events["type"] == t]
            if len(rows) > sample:
                rows = rows.sample(n=sample, random_state=seed + i)
            samples[t] = rows[[c for c in columns if c in rows.columns]].reset_index(drop=True)
        return counts, duration, samples
    from pyspark.sql import functions as F

    from cepopt.executor.integers import to_pandas

    agg = events.agg(F.min("ts").alias("lo"), F.max("ts").alias("hi"), F.count(F.lit(1)).alias("n")).first()
    if not agg["n"]:
        raise CepoptError("the stream is empty: no statistics can be estimated")
    duration = float(agg["hi"] - agg["lo"])
    counts = {r["type"]: int(r["count"]) for r in
              events.where(F.col("type").isin(types)).groupBy("type").count().collect()}
    cols = [c for c in columns if c in events.columns]
    samples = {}
    for i, t in enumerate(types):
        n = counts.get(t, 0)
        rows = events.where(F.col("type") == t).select(*cols)
        if n > sample:
            rows = rows.sample(fraction=min(1.0, 1.2 * sample / n), seed=seed + i).limit(sample)
        samples[t] = to_pandas(rows)
    return counts, duration, samples


def estimate_statistics(query: Query, events, *, sample: int = 20_000, seed: int = 0,
                        time_unit: float = 1.0) -> Statistics:
    """Rates and selectivities of ``query`` measured on ``events`` (a Spark or pandas DataFrame).

    ``sample`` bounds the events read per type and the random pairs per condition; ``time_unit``
    scales the rates (1: per unit of ``ts``). A type absent from the stream gets a tiny rate so
    that planning still works; a condition never met gets half a hit (selectivities must be > 0).
    """
    if sample < 1:
        raise CepoptError(f"sample must be >= 1, got {sample!r}")
    patterns = _patterns(query)
    types = sorted({it.type for p in patterns for it in p.items})
    columns = {"ts", "type"}
    for p in patterns:
        for it in p.items:
            columns.update(p.attrs_of(it.position))
            columns.update(f.attr for f in p.filters_of(it.position))
    counts, duration, samples = _type_samples(events, types, sorted(columns), sample, seed)
    duration = max(duration, 1.0) / time_unit
    rates = {t: (counts.get(t, 0) or 0.5) / duration for t in types}
    rng = np.random.default_rng(seed)
    sels: dict[tuple[str, str], float] = {}
    for p in patterns:
        passing: dict[int, pd.DataFrame] = {}
        for it in p.items:
            rows = samples[it.type]
            mask = np.ones(len(rows), dtype=bool)
            for f in p.filters_of(it.position):
                mask &= compare_arrays(f.op, rows[f.attr], f.value)
            passing[it.position] = rows[mask].reset_index(drop=True)
            if p.filters_of(it.position):
                sels[tuple(sorted((it.ref, it.ref)))] = _ratio(int(mask.sum()), len(rows))
        pairs: dict[tuple[int, int], list] = {}
        for c in p.checks:
            if c.kind in ("cond", "equiv"):
                pairs.setdefault((c.a, c.b), []).append(c)
        for (a, b), checks in pairs.items():
            xa, xb = passing[a], passing[b]
            key = tuple(sorted((p.items[a].ref, p.items[b].ref)))
            if not len(xa) or not len(xb):
                sels.setdefault(key, 1.0)
                continue
            ia = rng.integers(0, len(xa), sample)
            ib = rng.integers(0, len(xb), sample)
            ok = np.ones(sample, dtype=bool)
            for c in checks:
                left = xa[c.attr].to_numpy()[ia]
                right = xb[c.battr].to_numpy()[ib]
                ok &= compare_arrays(c.op, left, right)
            sels[key] = _ratio(int(ok.sum()), sample)
    return Statistics(rates=rates, selectivities=sels)


def _ratio(hits: int, total: int) -> float:
    if total == 0:
        return 1.0
    return min(1.0, max(hits, 0.5) / total)
