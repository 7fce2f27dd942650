"""The Hamlet plan: which sharing policy runs, and (for an instance's bursts) the decisions it made.

The executor runs ``policy`` per burst on the real stream (hamlet.md §4.2); ``decisions`` records what
the policy decided on the instance's burst statistics, in burst order, so that the cost model can
re-price exactly that sequence and a report can show it (share +12, split -32, merge +44 on Fig. 6).
A policy's decisions are its own: on the stream they were made for, running it decides them again.
A ``replay`` plan (the ``optimal`` method's on an embedded stream) has no policy: the executor replays
its decisions on the bursts of that stream, and refuses any other stream (:func:`plan_policy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cepopt.errors import CepoptError
from cepopt.hamlet.policy import REPLAY, Decision, Policy, ReplayPolicy, get_policy

__all__ = ["HamletPlan", "plan_from_json", "plan_policy", "plan_to_json"]


@dataclass(frozen=True)
class HamletPlan:
    """``policy``: dynamic | static | nonshared | exhaustive | random-SEED[-PCT] | replay; ``decisions``:
    one per burst (may be empty)."""

    policy: str
    decisions: tuple[Decision, ...] = ()

    def __post_init__(self) -> None:
        if self.policy != REPLAY:
            get_policy(self.policy)  # raises CepoptError for an unknown name
        object.__setattr__(self, "decisions", tuple(self.decisions))

    def priced_policy(self, problem: Any) -> Policy:
        """The policy whose decisions on ``problem``'s bursts the cost model prices: the recorded
        decisions when there are any (or a replay plan), else the plan's policy."""
        if self.decisions or self.policy == REPLAY:
            return ReplayPolicy(problem.bursts, [d.queries for d in self.decisions])
        return get_policy(self.policy)

    def describe(self) -> str:
        lines = [f"policy {self.policy}"]
        for i, d in enumerate(self.decisions):
            lines.append(f"burst {i} ({d.type}): {d.action} {list(d.queries)} benefit {d.benefit:+g}")
        return "\n".join(lines)


def plan_policy(problem: Any, plan: HamletPlan | str) -> Policy:
    """What the executor runs for ``plan``: a replay plan's decisions on ``problem``'s bursts, else
    the plan's policy."""
    if isinstance(plan, str):
        plan = HamletPlan(plan)
    if plan.policy == REPLAY:
        return ReplayPolicy(problem.bursts, [d.queries for d in plan.decisions])
    return get_policy(plan.policy)


def plan_to_json(plan: HamletPlan) -> dict:
    return {"policy": plan.policy, "decisions": [d.to_json() for d in plan.decisions]}


def plan_from_json(problem: Any, value: Any) -> HamletPlan:
    if isinstance(value, str):
        return HamletPlan(value)
    if not isinstance(value, Mapping) or "policy" not in value:
        raise CepoptError("plan: expected an object with a 'policy' (dynamic, static, nonshared, exhaustive, replay)")
    try:
        decisions = tuple(Decision.from_json(d) for d in value.get("decisions", ()))
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # OverflowError: float(10**400)
        raise CepoptError(f"plan.decisions: malformed decision ({str(exc)[:100]})") from None
    return HamletPlan(str(value["policy"]), decisions)
