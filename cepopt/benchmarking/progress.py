"""Primal and dual bound over time of one solve, and the integrals of Berthold (Oper. Res. Lett. 41, 2013).

Recording (:class:`Recorder`, the ``progress`` hook of :func:`cepopt.formulations.native.solver_settings`):
CP-SAT calls it with each incumbent (solution callback) and each new proven bound (``best_bound_callback``),
in the model's objective units. The trajectory of a cell keeps those points only when they are surely the
method's objective: exactly one solver call reported, and its best incumbent equals the objective the
family's cost model gives the method's plan (a method that solves several models, or a surrogate, is
recorded by its final point only, ``source: "final"``). Every trajectory ends with the cell's final
objective and bound at the time the solve returned: MILP backends, DPs and searches report there.

Integrals, over ``[0, T]`` with the incumbent (bound) held constant between points and after the end::

    gamma(x, ref) = 0                                   if x == ref (both 0 included)
                  = 1                                   if x is missing or x * ref < 0
                  = |ref - x| / max(|ref|, |x|)         otherwise
    primal integral       P(T)  = integral_0^T gamma(incumbent(t), ref) dt
    dual integral         D(T)  = integral_0^T gamma(bound(t), ref) dt
    primal-dual integral  PD(T) = integral_0^T gamma(incumbent(t), bound(t)) dt

``ref`` is the best known objective of the cell's instance over the run (the best objective any cell of
the instance found), ``T`` the time limit (the longest cell of the instance when there is none). Each
integral is in seconds; divided by T it is the mean gap over the run (0 best, 1 worst).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["Recorder", "gamma", "integrals", "step_value"]

Points = list[list[float]]


class Recorder:
    """Collects (seconds since ``start``, value) for incumbents and bounds of the solver calls it hears."""

    def __init__(self, start: float | None = None):
        self.start = time.perf_counter() if start is None else start
        self.calls = 0
        self.primal: Points = []
        self.dual: Points = []

    def __call__(self, event: str, value: float | None) -> None:
        if event == "start":
            self.calls += 1
        elif value is not None and math.isfinite(value):
            (self.primal if event == "primal" else self.dual).append([time.perf_counter() - self.start, value])

    def trajectory(self, objective: float | None, bound: float | None, end: float, sense: str) -> dict:
        """The cell's primal and dual points (improving ones only), ending with the final values at ``end``."""
        values = [v for _, v in self.primal]
        best = (min(values) if sense == "min" else max(values)) if values else None
        matches = (self.calls == 1 and best is not None and objective is not None
                   and math.isclose(best, objective, rel_tol=1e-6, abs_tol=1e-9))
        primal = list(self.primal) if matches else []
        dual = list(self.dual) if matches else []
        if objective is not None:
            primal.append([end, objective])
        if bound is not None and math.isfinite(bound):
            dual.append([end, bound])
        return {"source": "callbacks" if matches else "final",
                "primal": _improving(primal, sense == "min"), "dual": _improving(dual, sense == "max")}


def _improving(points: Points, lower_is_better: bool) -> Points:
    """The points that improve on every earlier one (rounded for a compact JSON column)."""
    out: Points = []
    for t, v in sorted(points, key=lambda p: p[0]):
        if not out or (v < out[-1][1] if lower_is_better else v > out[-1][1]):
            out.append([round(t, 6), v])
    return out


def gamma(x: float | None, ref: float | None) -> float:
    """Berthold's gap function (see the module docstring).

    >>> gamma(None, 5.0), gamma(5.0, 5.0), gamma(4.0, 5.0), gamma(-1.0, 2.0), gamma(0.0, 0.0)
    (1.0, 0.0, 0.2, 1.0, 0.0)
    """
    if x is None or ref is None:
        return 1.0
    if x == ref:
        return 0.0
    if x * ref < 0:
        return 1.0
    return min(abs(ref - x) / max(abs(ref), abs(x)), 1.0)


def step_value(points: Sequence[Sequence[float]], t: float) -> float | None:
    """The value of the last point at or before ``t`` (None before the first)."""
    value = None
    for when, v in points:
        if when > t:
            break
        value = v
    return value


def _integral(times: list[float], gap_at, horizon: float) -> float:
    """The integral over [0, horizon] of a step function whose value changes only at ``times``."""
    cuts = sorted({0.0, *(t for t in times if 0 < t < horizon)})
    total = 0.0
    for a, b in zip(cuts, [*cuts[1:], horizon]):
        total += gap_at(a) * (b - a)
    return total


def integrals(trajectory: dict[str, Any], reference: float | None, horizon: float) -> dict[str, float]:
    """Primal, dual and primal-dual integrals of a trajectory against ``reference`` over [0, horizon]."""
    primal, dual = trajectory.get("primal", []), trajectory.get("dual", [])
    times = [p[0] for p in primal] + [d[0] for d in dual]
    if not horizon > 0:
        return {"primal_integral": math.nan, "dual_integral": math.nan, "primal_dual_integral": math.nan}
    return {
        "primal_integral": _integral(times, lambda t: gamma(step_value(primal, t), reference), horizon),
        "dual_integral": _integral(times, lambda t: gamma(step_value(dual, t), reference), horizon),
        "primal_dual_integral": _integral(times, lambda t: gamma(step_value(primal, t), step_value(dual, t)),
                                          horizon),
    }
