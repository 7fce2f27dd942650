"""The Hamlet cost model (hamlet.md §4.1-§4.2, Definition 4.2, Eq. 7): the one place that prices a burst.

    Shared(G_E, Q_E)      = b*n*s_p + s_c*k*g*t
    NonShared(G_E^i, Q_E) = k*b*n
    Benefit               = NonShared - Shared          share iff Benefit > 0

:func:`option_cost` prices one option of a burst under the executor's state machine (§4.2,
:class:`GroupState`): *extend* the open shared graphlet (same query set, graphlet still open), start a
*new* shared graphlet (one new graphlet-level snapshot), or process the burst per query. Every
policy (:mod:`cepopt.hamlet.policy`) chooses with it, and :func:`price` sums the chosen options.

A Hamlet plan is a policy run at run time, burst by burst. :func:`evaluate` (the family objective)
and :func:`predict` (the executor's expected operations) run the plan's policy on the problem's
bursts, the instance's burst statistics or the bursts of its embedded stream, and sum Eq. 7 over
its decisions: the executor's kernel prices each decision it takes with the same
:func:`option_cost` (``metrics["predicted"]`` of the Hamlet driver is the sum of its decisions' costs), so on
the embedded stream the kernel's sum equals :func:`predict`; on any other stream it is the same
sum over that stream's bursts.

>>> benefit(4, 7, 1, 1, 2, 4, 2), benefit(4, 11, 2, 1, 2, 8, 2), benefit(4, 15, 1, 1, 2, 4, 2)
(12, -32, 44)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cepopt.hamlet.graphlets import Burst
from cepopt.solution import Objective

__all__ = ["OBJECTIVE", "GroupState", "benefit", "evaluate", "extends", "nonshared_cost", "option_cost",
           "predict", "price", "sequence_cost", "shared_cost"]

OBJECTIVE = Objective("Eq. 7 cost", "Hamlet's Eq. 7 summed over the per-burst decisions", "min",
                      "operations in Eq. 7's unit: predecessor edges x coefficient width + snapshot reads")


def shared_cost(b: int, n: int, s_p: int, s_c: int, k: int, g: int, t: float) -> float:
    """Eq. 7, shared part: propagate s_p snapshots over b events with n predecessors each, and
    create s_c snapshots whose per-query values read g events in t graphlets for each of k queries."""
    return b * n * s_p + s_c * k * g * t


def nonshared_cost(k: int, b: int, n: int) -> float:
    """Eq. 7, non-shared part: each of k queries propagates b events over n predecessors."""
    return k * b * n


def benefit(b: int, n: int, s_p: int, s_c: int, k: int, g: int, t: float) -> float:
    """Eq. 7: NonShared - Shared for one burst; argument order as in hamlet.md §7 T7."""
    return nonshared_cost(k, b, n) - shared_cost(b, n, s_p, s_c, k, g, t)


@dataclass
class GroupState:
    """State of one Kleene type in one scope (§4.2): the shared set of the open shared graphlet
    (None when the last burst was not shared), its size g and its number of snapshots s, and the
    number of bursts decided so far."""

    shared: tuple[str, ...] | None = None
    g: int = 0
    s: int = 0
    decided: int = 0

    def after(self, burst: Burst, queries: Sequence[str]) -> None:
        """Apply the decision to share ``queries`` (empty: not shared) for ``burst``."""
        self.decided += 1
        if len(queries) < 2:
            self.shared, self.g, self.s = None, 0, 0
            return
        ev = burst.snapshot_events(queries)
        if extends(burst, self, queries):
            self.g += burst.b
            self.s += ev
        else:
            self.shared, self.g, self.s = tuple(sorted(queries)), burst.b, 1 + ev


def extends(burst: Burst, state: GroupState, queries: Iterable[str]) -> bool:
    """Does sharing ``queries`` extend the open shared graphlet (same set, burst continues it)?"""
    return burst.continues and state.shared is not None and set(state.shared) == set(queries)


def option_cost(burst: Burst, state: GroupState, queries: Iterable[str], t: Callable[[Sequence[str]], float]) -> float:
    """Eq. 7 cost of the burst when ``queries`` share it and the other candidates do not (§4.3)."""
    queries = tuple(sorted(queries))
    k_all = len(burst.queries)
    if len(queries) < 2:
        return nonshared_cost(k_all, burst.b, burst.n_eq7)
    ev = burst.snapshot_events(queries)
    if extends(burst, state, queries):
        s_c, s_p, g = ev, state.s + ev, state.g + burst.b
    else:
        s_c, s_p, g = 1 + ev, 1 + ev, burst.b
    return (shared_cost(burst.b, burst.n_eq7, s_p, s_c, len(queries), g, t(queries))
            + nonshared_cost(k_all - len(queries), burst.b, burst.n_eq7))


def sequence_cost(bursts: Iterable[Burst], choices: Iterable[Sequence[str]],
                  t: Callable[[Sequence[str]], float]) -> float:
    """The Eq. 7 cost of sharing ``choices[i]`` (empty: nothing) for ``bursts[i]``, in order."""
    states: dict[tuple[str, str], GroupState] = {}
    total = 0.0
    for burst, queries in zip(bursts, choices, strict=True):
        state = states.setdefault((burst.scope, burst.type), GroupState())
        total += option_cost(burst, state, queries, t)
        state.after(burst, queries)
    return total


def price(bursts: Iterable[Burst], policy: Any, t: Callable[[Sequence[str]], float]) -> tuple[list, float]:
    """Run ``policy`` (a :class:`~cepopt.hamlet.policy.Policy`) over ``bursts`` in order, one
    :class:`GroupState` per (scope, type): its decisions and the sum of their Eq. 7 costs."""
    states: dict[tuple[str, str], GroupState] = {}
    decisions: list = []
    total = 0.0
    for burst in bursts:
        state = states.setdefault((burst.scope, burst.type), GroupState())
        d = policy.decide(burst, state, t)
        total += option_cost(burst, state, d.queries, t)
        state.after(burst, d.queries)
        decisions.append(d)
    policy.finished(len(decisions))
    return decisions, total


def evaluate(problem: Any, plan: Any) -> float:
    """The family objective: the Eq. 7 cost of ``plan`` (a :class:`~cepopt.hamlet.plan.HamletPlan`) on
    ``problem``'s bursts: its recorded decisions re-priced, or its policy run."""
    return float(price(problem.bursts, plan.priced_policy(problem), problem.t_of)[1])


def predict(problem: Any, plan: Any) -> float:
    """What the executor should measure, in Eq. 7's unit: :func:`evaluate` (see the module docstring
    for how it relates to the kernel's per-decision sum)."""
    return evaluate(problem, plan)
