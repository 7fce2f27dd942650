"""The ``hamlet`` family for solve(): per-burst sharing policies priced by the Hamlet cost model.

The objective of a plan is the Eq. 7 cost (hamlet.md §4.1) of its decisions over the instance's
bursts (``params.bursts``, or the bursts of the embedded stream), under the executor's state
machine (§4.2): the sum over bursts of ``Shared(G_E, Q_E) + NonShared(rest)`` for the chosen set.

Methods: ``dynamic`` (the paper's per-burst optimizer, §4.3), ``static`` (always share),
``nonshared`` (GRETA), ``exhaustive`` (per burst, the cheapest of the 2^k - k plans), ``optimal``
(the cheapest *sequence* of decisions, by enumeration: decisions interact through the open
graphlet, so per-burst optimality is not global optimality). On an embedded stream the ``optimal``
plan is a ``replay`` plan: the executor runs that sequence on the stream's bursts (and refuses another
stream). Burst statistics (``params.bursts``) are no stream to replay on: there its plan records the
sequence and runs the ``exhaustive`` policy, as it says. With a time limit the enumeration stops
when time runs out and the plan is the best found (status feasible).
"""

from __future__ import annotations

import itertools
from collections import Counter

from cepopt.clock import Deadline
from cepopt.hamlet import cost
from cepopt.hamlet.cost import sequence_cost
from cepopt.hamlet.decide import run_policy
from cepopt.hamlet.plan import HamletPlan, plan_from_json, plan_to_json
from cepopt.hamlet.policy import REPLAY, ReplayPolicy
from cepopt.hamlet.problem import HamletProblem, build
from cepopt.params import PositiveInt
from cepopt.registry import Family, declare, register
from cepopt.solution import MethodResult

__all__ = ["FAMILY"]

#: the optimal method enumerates at most this many decision sequences per scope
OPTIMAL_MAX_SEQUENCES = 200_000


def _build(instance, eq7_n: str | None = None, eq7_t: str | None = None) -> HamletProblem:
    return build(instance, eq7_n=eq7_n, eq7_t=eq7_t)


FAMILY = declare(Family(
    name="hamlet",
    description="Hamlet: share a Kleene burst or not, per burst, at run time (SIGMOD'21)",
    build=_build,
    cost=cost,
    plan_to_json=plan_to_json,
    plan_from_json=plan_from_json,
    problem_options=frozenset({"eq7_n", "eq7_t"}),
    default_methods=("dynamic", "static", "nonshared", "exhaustive", "optimal"),
    baseline_plan=lambda problem: HamletPlan("nonshared"),
))


def _result(problem: HamletProblem, policy: str, status: str = "feasible") -> MethodResult:
    decisions, total = run_policy(problem.bursts, policy, problem.t_of)
    actions = Counter(d.action for d in decisions)
    return MethodResult(HamletPlan(policy, tuple(decisions)), status, solver_objective=float(total),
                        stats={"bursts": len(decisions), "actions": dict(actions)})


@register("hamlet", "dynamic", "Hamlet's runtime optimizer: O(m) query-set choice and Benefit > 0 per burst")
def dynamic(problem: HamletProblem, *, time_limit=None, seed=0) -> MethodResult:
    return _result(problem, "dynamic")


@register("hamlet", "static", "static Hamlet: always share every burst among all candidates")
def static(problem: HamletProblem, *, time_limit=None, seed=0) -> MethodResult:
    return _result(problem, "static")


@register("hamlet", "nonshared", "GRETA: never share")
def nonshared(problem: HamletProblem, *, time_limit=None, seed=0) -> MethodResult:
    return _result(problem, "nonshared")


@register("hamlet", "exhaustive", "per burst, the cheapest of all 2^k - k sharing plans (oracle for §4.3)")
def exhaustive(problem: HamletProblem, *, time_limit=None, seed=0) -> MethodResult:
    return _result(problem, "exhaustive")


def _options(burst) -> list[tuple[str, ...]]:
    opts = [()]
    for size in range(2, len(burst.queries) + 1):
        opts.extend(itertools.combinations(burst.queries, size))
    return opts


def _count_options(burst) -> int:
    """len(_options(burst)) without listing them: the empty set and every subset of two or more."""
    k = len(burst.queries)
    return 2**k - k


def _sequence_count(bursts, cap: int) -> int:
    """The number of decision sequences of a group of bursts, counted without listing anything (a burst of
    40 candidates has 2^40 options: listing them is what filled 6 GB); once past ``cap`` some number
    above it."""
    count = 1
    for burst in bursts:
        count *= _count_options(burst)
        if count > cap:
            break
    return count


@register("hamlet", "optimal", "the cheapest sequence of per-burst decisions, by enumeration (small)",
          exact=True)
def optimal(problem: HamletProblem, *, time_limit=None, seed=0,
            max_sequences: PositiveInt = OPTIMAL_MAX_SEQUENCES) -> MethodResult:
    """Enumerate every decision sequence per (scope, type), from the dynamic policy's sequence as the
    incumbent; the plan replays the best one. When ``time_limit`` runs out the groups left keep the
    incumbent and the status is feasible. A group with more than ``max_sequences`` sequences is not
    enumerated (counted first, nothing listed): the plan is then the dynamic policy's, status feasible,
    and the message says so."""
    clock = Deadline.after(time_limit)
    by_key: dict[tuple, list[int]] = {}
    for i, b in enumerate(problem.bursts):
        by_key.setdefault((b.scope, b.type), []).append(i)
    groups = [[problem.bursts[i] for i in idx] for idx in by_key.values()]
    over = [g for g, bursts in enumerate(groups) if _sequence_count(bursts, max_sequences) > max_sequences]
    chosen: list[tuple[str, ...]] = [()] * len(problem.bursts)
    timed_out = False
    for g, (idx, bursts) in enumerate(zip(by_key.values(), groups, strict=True)):
        incumbent, best_cost = run_policy(bursts, "dynamic", problem.t_of)
        best = [d.queries for d in incumbent]
        for seq in () if timed_out or g in over else itertools.product(*(_options(b) for b in bursts)):
            cost = sequence_cost(bursts, seq, problem.t_of)
            if cost < best_cost:
                best, best_cost = list(seq), cost
            if clock.over():
                timed_out = True
                break
        for i, qs in zip(idx, best, strict=True):
            chosen[i] = qs
    decisions, total = run_policy(problem.bursts, ReplayPolicy(problem.bursts, chosen), problem.t_of)
    plan = HamletPlan(REPLAY if problem.from_stream else "exhaustive", tuple(decisions))
    stats = {"bursts": len(decisions), "actions": dict(Counter(d.action for d in decisions)),
             "timed_out": timed_out}
    message = "time limit: the enumeration stopped early" if timed_out else ""
    if over:
        stats["groups_not_enumerated"] = len(over)
        message = "; ".join(m for m in (message, (
            f"optimal: {len(over)} of {len(groups)} (scope, type) groups have more than max_sequences="
            f"{max_sequences:,} decision sequences: not enumerated, they keep the dynamic policy's decisions "
            "(no proof)")) if m)
    return MethodResult(plan, "feasible" if timed_out or over else "optimal", solver_objective=float(total),
                        stats=stats, message=message)
