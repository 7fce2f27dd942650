"""Benchmark metrics, written here from their definitions (plain Python, no solver).

* **Performance profile** (Dolan & Moré, Math. Prog. 91, 2002): for problems p and methods s with a
  measure m[p][s] (lower is better; None for a failure), the ratio r[p][s] = m[p][s] / min_s' m[p][s']
  (infinite for a failure, and for every method on a problem no method solved) and
  rho_s(tau) = |{p : r[p][s] <= tau}| / |P|. Times below :data:`MIN_TIME` count as MIN_TIME (a ratio
  to 0 s means nothing).
* **Objective ratio** to the best known objective ``best``: ``obj / best`` (minimisation) or
  ``best / obj`` (maximisation) when both are positive, else ``1 + |obj - best| / max(|obj|, |best|)``
  (an objective that may be 0 or negative, such as a log-cost): 1 for the best, larger for worse.
* **PAR10**: the mean over cells of the time when solved, else 10 x the time limit.
* **Shifted geometric mean** of times: ``exp(mean(ln(t + s))) - s`` with shift ``s`` (default
  :data:`SGM_SHIFT` = 1 s, which keeps sub-second times from dominating), an unsolved cell counted at the
  time limit (as MIPLIB does).
* **Virtual best solver**: per problem the least time of any method that solved it.
* **Win/tie/loss** of a method against a baseline on each problem: the better objective wins (equal
  within a relative 1e-9: tie); an objective beats none; two failures tie.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["MIN_TIME", "SGM_SHIFT", "cactus", "compare_objective", "objective_ratio", "par", "profile",
           "ratios", "shifted_geometric_mean", "virtual_best", "win_tie_loss"]

MIN_TIME = 1e-3
SGM_SHIFT = 1.0
TIE_TOLERANCE = 1e-9

Measure = float | None


def _finite(value: Measure) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and math.isfinite(value)


def ratios(measures: Mapping[str, Sequence[Measure]], floor: float = 0.0) -> dict[str, list[float]]:
    """Per method, its performance ratio on each problem (the lists are aligned over the problems).

    >>> ratios({"a": [1.0, 2.0, None], "b": [2.0, 2.0, None]})
    {'a': [1.0, 1.0, inf], 'b': [2.0, 1.0, inf]}
    """
    names = list(measures)
    counts = {len(v) for v in measures.values()}
    if len(counts) > 1:
        raise ValueError("every method needs one measure per problem")
    n = counts.pop() if counts else 0
    out: dict[str, list[float]] = {s: [] for s in names}
    for p in range(n):
        row = {s: max(float(measures[s][p]), floor) for s in names if _finite(measures[s][p])}
        best = min(row.values(), default=None)
        for s in names:
            if s not in row:
                out[s].append(math.inf)
            elif best == 0:  # only with floor 0: a 0 is the best, any other value infinitely worse
                out[s].append(1.0 if row[s] == 0 else math.inf)
            else:
                out[s].append(row[s] / best)
    return out


def profile(method_ratios: Sequence[float], taus: Sequence[float]) -> list[float]:
    """rho(tau) for each tau: the share of problems whose ratio is at most tau.

    >>> profile([1.0, 2.0, math.inf, 1.5], [1.0, 1.5, 2.0, 100.0])
    [0.25, 0.5, 0.75, 0.75]
    """
    n = len(method_ratios)
    if n == 0:
        return [0.0 for _ in taus]
    return [sum(r <= tau for r in method_ratios) / n for tau in taus]


def objective_ratio(objective: Measure, best: Measure, sense: str) -> float:
    """The ratio of ``objective`` to the best known ``best`` (1 = best; inf when there is no objective).

    >>> objective_ratio(12.0, 10.0, "min"), objective_ratio(8.0, 10.0, "max"), objective_ratio(-1.0, 0.0, "min")
    (1.2, 1.25, 2.0)
    """
    if not _finite(objective) or not _finite(best):
        return math.inf
    if objective == best:
        return 1.0
    if objective > 0 and best > 0:
        return objective / best if sense == "min" else best / objective
    return 1.0 + abs(objective - best) / max(abs(objective), abs(best))


def best_known(objectives: Sequence[Measure], sense: str) -> float | None:
    """The best of the finite objectives (None when there is none)."""
    values = [float(v) for v in objectives if _finite(v)]
    if not values:
        return None
    return min(values) if sense == "min" else max(values)


def par(times: Sequence[Measure], solved: Sequence[bool], time_limit: float, factor: float = 10.0) -> float:
    """Penalised average runtime (PAR10 with ``factor`` 10).

    >>> par([1.0, 3.0, 2.0], [True, True, False], time_limit=5.0)
    18.0
    """
    if not times:
        return math.nan
    return sum(float(t) if ok else factor * time_limit for t, ok in zip(times, solved, strict=True)) / len(times)


def shifted_geometric_mean(times: Sequence[Measure], solved: Sequence[bool], time_limit: float,
                           shift: float = SGM_SHIFT) -> float:
    """``exp(mean(ln(t + shift))) - shift``, an unsolved cell at ``time_limit``.

    >>> round(shifted_geometric_mean([0.0, 3.0], [True, True], 10.0), 9)
    1.0
    """
    if not times:
        return math.nan
    logs = [math.log((float(t) if ok else time_limit) + shift) for t, ok in zip(times, solved, strict=True)]
    return math.exp(sum(logs) / len(logs)) - shift


def virtual_best(times: Mapping[str, Sequence[Measure]], solved: Mapping[str, Sequence[bool]]) -> list[Measure]:
    """Per problem, the least time among the methods that solved it (None when none did)."""
    names = list(times)
    n = len(times[names[0]]) if names else 0
    out: list[Measure] = []
    for p in range(n):
        solved_times = [float(times[s][p]) for s in names if solved[s][p]]
        out.append(min(solved_times) if solved_times else None)
    return out


def cactus(times: Sequence[Measure], solved: Sequence[bool]) -> list[float]:
    """The solved times in increasing order: the k-th is the time within which k problems were solved."""
    return sorted(float(t) for t, ok in zip(times, solved, strict=True) if ok)


def compare_objective(a: Measure, b: Measure, sense: str) -> int:
    """1 when ``a`` is better than ``b``, -1 when worse, 0 for a tie (see the module docstring)."""
    fa, fb = _finite(a), _finite(b)
    if not fa or not fb:
        return int(fa) - int(fb)
    if math.isclose(a, b, rel_tol=TIE_TOLERANCE, abs_tol=TIE_TOLERANCE):
        return 0
    better = a < b if sense == "min" else a > b
    return 1 if better else -1


def win_tie_loss(method: Sequence[Measure], baseline: Sequence[Measure], sense: str) -> tuple[int, int, int]:
    """(wins, ties, losses) of ``method`` against ``baseline`` over aligned problems.

    >>> win_tie_loss([3.0, 5.0, None, None, 7.0], [4.0, 5.0, 1.0, None, None], "max")
    (1, 2, 2)
    """
    results = [compare_objective(a, b, sense) for a, b in zip(method, baseline, strict=True)]
    return results.count(1), results.count(0), results.count(-1)
