"""The trend executors behind the partition-kernel protocol (executor/partitions.py).

:func:`compile_hamlet` (GRETA = the non-shared plan; static, dynamic, every policy, a ``replay`` plan)
and :func:`compile_gloria` compile ``(problem, plan)`` once, on the driver, into a picklable object
with ``classes`` (one :class:`~cepopt.executor.partitions.PartitionClass` per sharing class) and
``run(index, events, block) -> (partials, metrics)``, the kernel of one partition: the events of one
value of the class's keys (the partition attributes; several values are fine too) and one block of
``windows_per_block`` consecutive windows. ``run`` lays the events out per scope
(:func:`cepopt.hamlet.scope.class_layout`: windows of the block, partitions, time order, query masks,
all vectorized), runs the family's compiled kernel over every scope at once and returns the partial
aggregates of the block's windows (:func:`~cepopt.executor.partitions.partial_rows`) and counters
that add up over partitions.

Exact values: the kernels compute residue lanes (:mod:`cepopt.executor.exact`); a run whose shadow
lane shows results beyond the lanes' range runs again with enough lanes (past 2^1000 the lanes come
from a log-space bound, :mod:`cepopt.executor.trend_bound`): :func:`cepopt.executor.trend_inputs.exact_run`.
The lanes of the last run of a class are the first guess of the next.

In process, without an engine: :func:`run_greta`, :func:`run_hamlet` and :func:`run_gloria` run a
workload over a whole pandas stream (one partition per class, :func:`run_all`).

After summing the metrics of every partition the driver calls ``finish(metrics)``: the derived
counters (``operations``; Hamlet's ``fastpath_operations``) and, for a replayed Hamlet plan, the check
that the stream had exactly the bursts the plan decided (CepoptError). A replayed plan run on a burst
it did not decide raises CepoptError from ``run``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cepopt.executor.partitions import PartitionClass, block_bounds, empty_partials
from cepopt.executor.trend_inputs import (
    FIRST_LANES,
    KernelInputs,
    counter_metrics,
    exact_run,
    kernel_inputs,
    kernel_state,
    partial_results,
)

__all__ = ["DEFAULT_WINDOWS_PER_BLOCK", "GloriaCompiled", "HamletCompiled", "compile_gloria", "compile_hamlet",
           "run_all", "run_gloria", "run_greta", "run_hamlet"]

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


def _empty_run(names: tuple[str, ...]) -> tuple[pd.DataFrame, dict]:
    return empty_partials(), dict.fromkeys(names, 0)


# ---------------------------------------------------------------------------------------------
# Hamlet / GRETA
# ---------------------------------------------------------------------------------------------

GRETA_METRICS = ("propagations", "values")
HAMLET_METRICS = ("propagations", "values", "snapshots", "snapshot_reads", "evaluations", "bursts",
                  "shared_bursts", "graphlets", "pred_edges", "shared_edges", "snapshot_edges")


@dataclass
class HamletCompiled:
    """A Hamlet plan (or GRETA, ``policy`` None) compiled for the partition kernels."""

    sharing: tuple                      # the workload's SharingClasses (cepopt.hamlet.problem)
    policy: Any                         # a cepopt.hamlet.policy.Policy, None = GRETA
    classes: tuple[PartitionClass, ...] = field(default=())
    lanes: dict = field(default_factory=dict, repr=False, compare=False)
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    def run(self, index: int, events: pd.DataFrame, block: int | None, *, decisions: list | None = None,
            trace: list | None = None) -> tuple[pd.DataFrame, dict]:
        """The kernel of one partition (module docstring); ``decisions`` collects the policy's
        Decision per burst, ``trace`` every snapshot created as (kind, type, {query: count})."""
        from cepopt.hamlet.scope import class_layout

        start = time.perf_counter()
        names = GRETA_METRICS if self.policy is None else HAMLET_METRICS
        cls, pc = self.sharing[index], self.classes[index]
        lo, hi = block_bounds(pc, block)
        layout = class_layout(cls, events, (lo, hi))
        if not layout.n:
            partials, metrics = _empty_run(names)
        else:
            inp = kernel_inputs(layout)
            if self.policy is None:
                out, omm, counters = self._greta(index, inp)
                metrics = counter_metrics(counters, names)
            else:
                from cepopt.executor.hamlet_kernel import hamlet_run

                out, omm, counters, extra = hamlet_run(self, index, inp, decisions, trace)
                metrics = {**counter_metrics(counters, names), **extra}
            partials = partial_results(inp, out, omm, list(range(len(cls.queries))), lo, hi)
        metrics["kernel_s"] = time.perf_counter() - start
        metrics["events"] = int(layout.n)
        if self.policy is not None:
            metrics.setdefault("predicted", 0.0)
        return partials, metrics

    def _greta(self, index: int, inp: KernelInputs) -> tuple:
        from cepopt.executor.greta import greta_kernel

        k = len(inp.layout.cls.queries)

        def kernel(mods, one, at, out, omm, counters):
            greta_kernel(inp.layout.scope_start, inp.ev, inp.qt, at, np.arange(k), kernel_state(inp, len(mods)), mods,
                         one, out, omm, counters)

        out, omm, counters, lanes = exact_run(inp, kernel, self.lanes.get(index, FIRST_LANES))
        self.lanes[index] = lanes
        return out, omm, counters

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


# ---------------------------------------------------------------------------------------------
# Gloria
# ---------------------------------------------------------------------------------------------

GLORIA_METRICS = ("propagations", "evaluations", "snapshots", "values", "reused")


@dataclass
class GloriaCompiled:
    """A Gloria plan (None = unshared) compiled for the partition kernels."""

    sharing: tuple
    plan: Any
    classes: tuple[PartitionClass, ...] = field(default=())
    #: the queries the Gloria kernel runs with GRETA (other aggregates than COUNT(*), edge predicates)
    greta_queries: tuple[str, ...] = ()
    lanes: dict = field(default_factory=dict, repr=False, compare=False)

    def run(self, index: int, events: pd.DataFrame, block: int | None) -> tuple[pd.DataFrame, dict]:
        from cepopt.hamlet.scope import class_layout

        start = time.perf_counter()
        cls, pc = self.sharing[index], self.classes[index]
        lo, hi = block_bounds(pc, block)
        layout = class_layout(cls, events, (lo, hi))
        if not layout.n:
            partials, metrics = _empty_run(GLORIA_METRICS)
        else:
            from cepopt.executor.gloria_kernel import gloria_run

            inp = kernel_inputs(layout)
            out, omm, counters = gloria_run(self, index, inp)
            metrics = counter_metrics(counters, GLORIA_METRICS)
            partials = partial_results(inp, out, omm, list(range(len(cls.queries))), lo, hi)
        metrics["kernel_s"] = time.perf_counter() - start
        metrics["events"] = int(layout.n)
        return partials, metrics

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


def run_all(compiled: Any, events: pd.DataFrame, **options) -> tuple[pd.DataFrame, dict]:
    """Every class of ``compiled`` on a whole pandas stream, one partition per class (block None):
    the in-process path (:func:`run_greta`, :func:`run_hamlet`, :func:`run_gloria`); results table and finished metrics.
    ``options`` go to ``run`` (Hamlet: ``decisions``, ``trace``)."""
    from cepopt.executor.partitions import merge_partials

    parts = []
    metrics: dict = {}
    start = time.perf_counter()
    for index in range(len(compiled.classes)):
        partials, m = compiled.run(index, events, None, **options)
        parts.append(partials)
        for key, value in m.items():
            metrics[key] = metrics.get(key, 0) + value
    frame = pd.concat(parts, ignore_index=True) if parts else empty_partials()
    metrics = compiled.finish(metrics)
    metrics["time_s"] = time.perf_counter() - start
    return merge_partials(frame), metrics


def run_greta(workload, events: pd.DataFrame, params: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """GRETA over a whole stream in-process: results table and operation counters."""
    from cepopt.hamlet.problem import compile_workload

    classes = compile_workload(workload, params)
    return run_all(HamletCompiled(classes, None, tuple(_partition_class(c, None) for c in classes)), events)


def run_hamlet(workload, events: pd.DataFrame, policy: Any = "dynamic", params: dict | None = None,
               decisions: list | None = None, trace: list | None = None) -> tuple[pd.DataFrame, dict]:
    """Hamlet over a whole stream in-process: results table and operation counters. ``decisions``
    collects the policy's Decision per burst, ``trace`` every snapshot created as (kind, type,
    {query: count value}). A :class:`cepopt.hamlet.policy.ReplayPolicy` replays a plan's decisions on
    the bursts it was made for (CepoptError on other bursts)."""
    from cepopt.hamlet.policy import get_policy
    from cepopt.hamlet.problem import compile_workload

    pol = get_policy(policy) if isinstance(policy, str) else policy
    classes = compile_workload(workload, params)
    compiled = HamletCompiled(classes, pol, tuple(_partition_class(c, None) for c in classes))
    return run_all(compiled, events, decisions=decisions, trace=trace)


def run_gloria(workload, plan: Any, events: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """A Gloria plan (None = unshared) over a whole stream in-process: results table and counters."""

    class _Problem:
        pass

    _Problem.workload = workload
    return run_all(compile_gloria(_Problem, plan, windows_per_block=None), events)
