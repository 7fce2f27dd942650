"""Run a policy over bursts: the per-burst decisions and the Eq. 7 cost of the run (hamlet.md §4).

>>> from cepopt.hamlet.graphlets import Burst
>>> b1 = Burst("B", ("q1", "q2"), 4, 7)
>>> decide(b1, t=2).benefit
12
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from cepopt.hamlet.cost import GroupState, price
from cepopt.hamlet.graphlets import Burst
from cepopt.hamlet.policy import Decision, Policy, ReplayPolicy, get_policy

__all__ = ["decide", "run_policy"]


def _t_fn(t: float | Callable[[Sequence[str]], float]) -> Callable[[Sequence[str]], float]:
    return t if callable(t) else (lambda _qs: t)


def decide(burst: Burst, state: GroupState | None = None, policy: str | Policy = "dynamic",
           t: float | Callable[[Sequence[str]], float] = 2) -> Decision:
    """The decision of ``policy`` for one burst in ``state`` (a fresh state by default); ``t`` is the
    number of types per query of Eq. 7 (a number, or a function of the costed query set)."""
    pol = get_policy(policy) if isinstance(policy, str) else policy
    return pol.decide(burst, state or GroupState(), _t_fn(t))


def run_policy(bursts: Iterable[Burst], policy: str | Policy,
               t: float | Callable[[Sequence[str]], float] = 2,
               decisions: Sequence[Decision] | None = None) -> tuple[list[Decision], float]:
    """Decide every burst in order (state per scope and type) and sum the chosen options' costs.
    With ``decisions`` the given shared sets are replayed and re-priced instead."""
    bursts = list(bursts)
    if decisions is not None:
        policy = ReplayPolicy(bursts, [d.queries for d in decisions])
    return price(bursts, get_policy(policy) if isinstance(policy, str) else policy, _t_fn(t))
