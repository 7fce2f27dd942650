"""The trend executors behind the partition-kernel protocol (executor/partitions.py).

:func:`compile_hamlet` (GRETA = the non-shared plan; static, dynamic, every policy, a ``replay`` plan)
and :func:`compile_gloria` compile ``(problem, plan)`` once, on the driver, into a picklable object
with ``classes`` (one :class:`~cepopt.executor.partitions.PartitionClass` per sharing class) and
``run(index, events, block) -> (partials, metrics)``, the kernel of one partition: the events of one
value of the class's keys (the partition attributes) and one block of ``windows_per_block``
consecutive windows. ``run`` assigns the block's windows to the events, runs the family kernel on each
(key, window) scope and returns the partial aggregates of the block's windows only
(:func:`~cepopt.executor.partitions.partial_rows`) and counters that add up over partitions.

After summing the metrics of every partition the driver calls ``finish(metrics)``: the derived
counters (``operations``; Hamlet's ``fastpath_operations``) and, for a replayed Hamlet plan, the check
that the stream had exactly the bursts the plan decided (CepoptError). A replayed plan run on a burst
it did not decide raises CepoptError from ``run``.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cepopt.executor.partitions import PartitionClass, block_bounds, empty_partials, partial_rows
from cepopt.executor.results import AggAccumulator

__all__ = ["DEFAULT_WINDOWS_PER_BLOCK", "GloriaCompiled", "HamletCompiled", "compile_gloria", "compile_hamlet",
           "run_all"]

#: K, the windows one partition computes, unless the class's windows need more (K >= ceil(W/S))
DEFAULT_WINDOWS_PER_BLOCK = 64


def _columns(cls) -> tuple[str, ...]:
    """``ts``, ``type`` and every attribute the kernels read: partition keys, filters, edge
    predicates, aggregate targets."""
    cols: dict[str, None] = {"ts": None, "type": None}
    cols.update(dict.fromkeys(cls.partition))
    for cq in cls.queries:
        cols.update(dict.fromkeys(attr for _t, attr, _op, _v in cq.filters))
        for ep in cq.edges:
            cols.update(dict.fromkeys((ep.left, ep.right)))
        cols.update(dict.fromkeys(attr for _ref, attr in cq.targets if attr is not None))
    return tuple(cols)


def _partition_class(cls, windows_per_block: int | None) -> PartitionClass:
    length, slide = float(cls.length), float(cls.slide)
    k = None
    if windows_per_block is not None:
        k = max(int(windows_per_block), -int(-length // slide))  # K >= ceil(W / S)
    return PartitionClass(tuple(sorted(cls.types)), _columns(cls), tuple(cls.partition), length, slide, k)


def _cell_partials(acc: AggAccumulator, lo: int, hi: float) -> list[tuple]:
    """Partial rows of one query's accumulator, windows in [lo, hi) only."""
    from cepopt.executor.results import aggregate_label

    out = []
    name = acc.query.name
    for (g, w), (cnt, per) in acc.cells.items():
        if cnt <= 0 or not lo <= w < hi:
            continue
        for agg in acc.aggs:
            label = aggregate_label(agg)
            if agg.ref is None:
                out.append((name, g, w, label, "sum", int(cnt)))
                continue
            c, s, mn, mx = per[(agg.ref, agg.attr)]
            if agg.func == "COUNT":
                out.append((name, g, w, label, "sum", int(c)))
            elif agg.func == "SUM":
                out.append((name, g, w, label, "sum", s))
            elif agg.func == "AVG":
                if c > 0:
                    out.append((name, g, w, label, "avg", s, int(c)))
            elif agg.func == "MIN":
                if mn is not None:
                    out.append((name, g, w, label, "min", mn))
            elif mx is not None:
                out.append((name, g, w, label, "max", mx))
    return out


def _partials(accs: dict[str, AggAccumulator], lo: int, hi: float) -> pd.DataFrame:
    rows = [r for acc in accs.values() for r in _cell_partials(acc, lo, hi)]
    return partial_rows(rows) if rows else empty_partials()


def _add(metrics: dict, more: dict) -> None:
    for k, v in more.items():
        metrics[k] = metrics.get(k, 0) + v


@dataclass
class HamletCompiled:
    """A Hamlet plan (or GRETA, ``policy`` None) compiled for the partition kernels."""

    sharing: tuple                      # the workload's SharingClasses (cepopt.hamlet.problem)
    policy: Any                         # a cepopt.hamlet.policy.Policy, None = GRETA
    classes: tuple[PartitionClass, ...] = field(default=())

    def run(self, index: int, events: pd.DataFrame, block: int | None) -> tuple[pd.DataFrame, dict]:
        from cepopt.executor.greta import Scope, greta_class, scopes
        from cepopt.executor.hamlet_kernel import _COUNTERS, hamlet_class
        from cepopt.hamlet.graphlets import scope_label

        cls, pc = self.sharing[index], self.classes[index]
        lo, hi = block_bounds(pc, block)
        accs = {cq.name: AggAccumulator(cq.query) for cq in cls.queries}
        metrics: dict = {"propagations": 0, "values": 0} if self.policy is None else dict.fromkeys(_COUNTERS, 0)
        decisions: list = []
        size = 0
        start = time.perf_counter()
        for key, k, part in scopes(cls, events):
            if not lo <= k < hi:
                continue
            scope = Scope(cls, part, key, k)
            size += scope.n
            if self.policy is None:
                greta_class(cls, scope, accs, metrics)
            else:
                hamlet_class(cls, scope, self.policy, accs, metrics, decisions, label=scope_label(index, scope))
        metrics["kernel_s"] = time.perf_counter() - start
        metrics["events"] = size
        if self.policy is not None:
            metrics["predicted"] = float(sum(d.cost for d in decisions))
            for action, n in Counter(d.action for d in decisions).items():
                metrics[f"action_{action}"] = n
        return _partials(accs, lo, hi), metrics

    def finish(self, metrics: dict) -> dict:
        """Derived counters of the summed metrics (``operations``, ``fastpath_operations``); raises
        CepoptError when a replayed plan decided another number of bursts than the stream has."""
        if self.policy is None:
            metrics["operations"] = metrics.get("propagations", 0)
            return metrics
        from cepopt.executor.hamlet_kernel import finish_metrics

        self.policy.finished(metrics.get("bursts", 0))
        finish_metrics(metrics)
        metrics["policy"] = self.policy.name
        return metrics


def compile_hamlet(problem: Any, plan: Any = None, *, windows_per_block: int | None = DEFAULT_WINDOWS_PER_BLOCK,
                   ) -> HamletCompiled:
    """Compile a Hamlet plan (a HamletPlan or a policy name; None or "greta": GRETA, no bursts)
    for ``problem`` (a HamletProblem, or anything with ``classes`` / a ``workload``).
    ``windows_per_block``: K (None: the whole stream of a key is one partition)."""
    from cepopt.hamlet.plan import plan_policy
    from cepopt.hamlet.problem import compile_workload

    sharing = getattr(problem, "classes", None)
    if sharing is None:
        sharing = compile_workload(problem.workload)
    policy = None if plan is None or plan == "greta" else plan_policy(problem, plan)
    classes = tuple(_partition_class(cls, windows_per_block) for cls in sharing)
    return HamletCompiled(tuple(sharing), policy, classes)


@dataclass
class GloriaCompiled:
    """A Gloria plan (None = unshared) compiled for the partition kernels."""

    sharing: tuple
    plan: Any
    classes: tuple[PartitionClass, ...] = field(default=())
    #: the queries the Gloria kernel runs with GRETA (other aggregates than COUNT(*), edge predicates)
    greta_queries: tuple[str, ...] = ()

    def run(self, index: int, events: pd.DataFrame, block: int | None) -> tuple[pd.DataFrame, dict]:
        from cepopt.executor.gloria_kernel import gloria_class
        from cepopt.executor.greta import Scope, scopes

        cls, pc = self.sharing[index], self.classes[index]
        lo, hi = block_bounds(pc, block)
        accs = {cq.name: AggAccumulator(cq.query) for cq in cls.queries}
        metrics: dict = dict.fromkeys(("propagations", "evaluations", "snapshots", "values", "reused"), 0)
        size = 0
        start = time.perf_counter()
        for key, k, part in scopes(cls, events):
            if not lo <= k < hi:
                continue
            scope = Scope(cls, part, key, k)
            size += scope.n
            gloria_class(cls, scope, self.plan, accs, metrics)
        metrics.pop("greta_queries", None)
        metrics["kernel_s"] = time.perf_counter() - start
        metrics["events"] = size
        return _partials(accs, lo, hi), metrics

    def finish(self, metrics: dict) -> dict:
        """``operations`` = propagations (Eqs. 2-3) + evaluations (Eq. 4); ``greta_queries``."""
        metrics["operations"] = metrics.get("propagations", 0) + metrics.get("evaluations", 0)
        metrics["greta_queries"] = list(self.greta_queries)
        return metrics


def compile_gloria(problem: Any, plan: Any = None, *, windows_per_block: int | None = DEFAULT_WINDOWS_PER_BLOCK,
                   ) -> GloriaCompiled:
    """Compile a Gloria plan (cepopt.gloria.plan.GloriaPlan; None = unshared) for ``problem`` (a
    GloriaProblem or anything with a ``workload``): one class per (slide, partition attributes),
    windows of one slide but different lengths together (gloria.md §10 A13)."""
    from cepopt.hamlet.problem import compile_workload

    sharing = compile_workload(problem.workload, mixed_lengths=True)
    greta = tuple(sorted(cq.name for cls in sharing for cq in cls.queries
                         if cq.edges or any(not a.is_count_star for a in cq.query.aggregates)))
    classes = tuple(_partition_class(cls, windows_per_block) for cls in sharing)
    return GloriaCompiled(tuple(sharing), plan, classes, greta)


def run_all(compiled: Any, events: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Every class of ``compiled`` on a whole pandas stream in one partition per class (block None):
    the in-process path of the kernels' own ``run_local``; results table and finished metrics."""
    from cepopt.executor.partitions import merge_partials

    parts = []
    metrics: dict = {}
    for index in range(len(compiled.classes)):
        partials, m = compiled.run(index, events, None)
        parts.append(partials)
        _add(metrics, m)
    frame = pd.concat(parts, ignore_index=True) if parts else empty_partials()
    return merge_partials(frame), compiled.finish(metrics)
