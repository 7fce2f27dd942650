"""Per-burst sharing policies (hamlet.md §4.2, §4.3): what the executor asks once per complete burst.

A policy is stateless; the caller keeps one :class:`~cepopt.hamlet.cost.GroupState` per (scope, Kleene
type) and passes it with each burst. Every option is priced by :func:`cepopt.hamlet.cost.option_cost`
(Eq. 7 under the executor's state machine, §4.2).

Policies: ``dynamic`` (the paper: §4.3 choice of the query set, then the Benefit > 0 check),
``static`` (always share all candidates), ``nonshared`` (never share, GRETA), ``exhaustive``
(the cheapest option of the burst over every query subset: 2^k - k options), and
``random-SEED[-PCT]`` (:class:`RandomPolicy`: a seeded random valid plan, for ranking experiments);
:class:`ReplayPolicy` replays recorded decisions on the bursts they were made for (the plan of the
``optimal`` method).
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from cepopt.errors import CepoptError
from cepopt.hamlet.cost import GroupState, extends, nonshared_cost, option_cost
from cepopt.hamlet.graphlets import Burst

__all__ = ["POLICIES", "REPLAY", "Decision", "Policy", "RandomPolicy", "ReplayPolicy", "choose_query_set",
           "get_policy", "plan_space"]

#: the exhaustive policy enumerates 2^k subsets: refuse larger candidate sets
EXHAUSTIVE_MAX_K = 16


@dataclass(frozen=True)
class Decision:
    """The decision for one burst: the shared set (empty = none), the action, the Eq. 7 cost of the
    chosen option, and the benefit NonShared - Shared of the share option considered (the chosen set,
    or all candidates when nothing is shared): +12 / -32 / +44 in Eqs. 8-10."""

    type: str
    queries: tuple[str, ...]
    action: str
    cost: float
    benefit: float

    @property
    def shared(self) -> bool:
        return len(self.queries) >= 2

    def to_json(self) -> dict:
        return {"type": self.type, "queries": list(self.queries), "action": self.action, "cost": self.cost,
                "benefit": self.benefit}

    @classmethod
    def from_json(cls, data) -> Decision:
        return cls(str(data["type"]), tuple(data.get("queries", ())), str(data.get("action", "")),
                   float(data.get("cost", 0.0)), float(data.get("benefit", 0.0)))


def _action(burst: Burst, state: GroupState, queries: Sequence[str]) -> str:
    if len(queries) >= 2:
        if extends(burst, state, queries):
            return "extend"
        if burst.continues and state.decided:
            return "merge"
        return "share"
    if burst.continues and state.shared is not None:
        return "split"
    return "none"


def _decision(burst: Burst, state: GroupState, queries: Sequence[str], t) -> Decision:
    queries = tuple(sorted(queries)) if len(queries) >= 2 else ()
    cost = option_cost(burst, state, queries, t)
    none = nonshared_cost(len(burst.queries), burst.b, burst.n_eq7)
    considered = queries or burst.queries
    return Decision(burst.type, queries, _action(burst, state, queries), cost,
                    none - option_cost(burst, state, considered, t))


def plan_space(queries: Sequence[str], no_snapshots: Iterable[str] | None = None) -> list[tuple[frozenset, ...]]:
    """The plans of §4.3 / Fig. 7: one shared group of >= 2 queries (others alone) or nothing shared,
    2^k - k plans, most shared first. With ``no_snapshots`` (Thm 4.3 pruning) only the plans that
    share every such query survive (Example 4.4)."""
    qs = list(queries)
    plans = []
    for size in range(len(qs), 1, -1):
        for group in itertools.combinations(qs, size):
            rest = [frozenset([q]) for q in qs if q not in group]
            plans.append((frozenset(group), *rest))
    plans.append(tuple(frozenset([q]) for q in qs))
    if no_snapshots is not None:
        keep = frozenset(no_snapshots)
        plans = [p for p in plans if any(len(g) >= 2 and keep <= g for g in p)]
    return plans


def choose_query_set(candidates: Sequence[str], introduce: Iterable[str],
                     cost: Callable[[frozenset], float]) -> frozenset:
    """§4.3 (Theorems 4.3, 4.5) in O(m): share every query that introduces no snapshot; share a
    query of ``introduce`` iff removing it does not lower the cost; then keep the set only if it
    beats no sharing (the final Benefit > 0 check, hamlet.md §8.11). ``cost(S)`` prices the plan that
    shares S and runs the others alone (|S| < 2: nothing shared). Returns the shared set or {}."""
    cands = frozenset(candidates)
    m = [q for q in candidates if q in set(introduce)]
    c0 = cost(cands)
    chosen = (cands - set(m)) | {q for q in m if c0 <= cost(cands - {q})}
    if len(chosen) >= 2 and cost(chosen) < cost(frozenset()):
        return frozenset(chosen)
    return frozenset()


class Policy:
    """Base: ``decide(burst, state, t) -> Decision``; ``name`` is the method name."""

    name = "policy"

    def choose(self, burst: Burst, state: GroupState, t) -> Sequence[str]:
        raise NotImplementedError

    def decide(self, burst: Burst, state: GroupState, t: Callable[[Sequence[str]], float]) -> Decision:
        return _decision(burst, state, tuple(self.choose(burst, state, t)), t)

    def finished(self, bursts: int) -> None:
        """Called after a run that decided ``bursts`` bursts."""


class DynamicPolicy(Policy):
    """The paper's optimizer: choose the query set (§4.3), share iff Benefit > 0 (Eq. 7)."""

    name = "dynamic"

    def choose(self, burst, state, t):
        chosen = choose_query_set(burst.queries, burst.snapshot_queries(),
                                  lambda s: option_cost(burst, state, s, t))
        return sorted(chosen)


class StaticPolicy(Policy):
    """Static Hamlet (§6.4): always share the burst among all candidates."""

    name = "static"

    def choose(self, burst, state, t):
        return burst.queries


class NonSharedPolicy(Policy):
    """GRETA: never share."""

    name = "nonshared"

    def choose(self, burst, state, t):
        return ()


class ExhaustivePolicy(Policy):
    """The cheapest option of each burst over all 2^k - k plans (an oracle for the §4.3 pruning)."""

    name = "exhaustive"

    def choose(self, burst, state, t):
        if len(burst.queries) > EXHAUSTIVE_MAX_K:
            raise CepoptError(f"exhaustive policy: {len(burst.queries)} candidates exceed "
                              f"{EXHAUSTIVE_MAX_K} (2^k plans)")
        best, best_cost = (), option_cost(burst, state, (), t)
        for size in range(len(burst.queries), 1, -1):
            for group in itertools.combinations(burst.queries, size):
                c = option_cost(burst, state, group, t)
                if c < best_cost:
                    best, best_cost = group, c
        return best


class RandomPolicy(Policy):
    """A seeded random valid plan: with probability ``share`` a burst is shared by a random subset
    of >= 2 candidates (size uniform in 2..k, then the members), else by none. The draw depends
    only on the seed and the burst (scope, type, b, n, candidates, continues), not on the order in
    which partitions run, so every Spark worker replays the same plan. Name ``random-SEED`` (share
    = 0.5) or ``random-SEED-PCT`` (share = PCT %)."""

    def __init__(self, seed: int = 0, share: float = 0.5):
        if not 0 <= share <= 1:
            raise CepoptError(f"random Hamlet policy: share probability {share} not in [0, 1]")
        self.seed = int(seed)
        self.share = float(share)
        pct = round(100 * self.share)
        self.name = f"random-{self.seed}" if pct == 50 else f"random-{self.seed}-{pct}"

    def choose(self, burst, state, t):
        key = (f"{self.seed}|{burst.scope}|{burst.type}|{burst.b}|{burst.n}|{','.join(burst.queries)}|"
               f"{burst.continues}")
        rng = random.Random(key)  # str seeds are hashed with SHA-512: stable across processes
        if rng.random() >= self.share:
            return ()
        size = rng.randint(2, len(burst.queries))
        return sorted(rng.sample(list(burst.queries), size))


#: the plan policy that replays its decisions (:class:`ReplayPolicy`)
REPLAY = "replay"


class ReplayPolicy(Policy):
    """Replays recorded shared sets: ``choices[i]`` for ``bursts[i]``. A burst is looked up by its
    scope, type and rank in that scope, and must be the burst the choice was made for (the same
    statistics; event order inside a tie group aside): on any other burst, or when the run decides
    fewer or more bursts, replaying would run a plan nobody chose, so it is an error."""

    name = REPLAY

    def __init__(self, bursts: Sequence[Burst], choices: Sequence[Sequence[str]]):
        if len(choices) != len(bursts):
            raise CepoptError(f"plan.decisions: {len(choices)} decisions for {len(bursts)} bursts")
        self.plan: dict[tuple, tuple[Burst, tuple[str, ...]]] = {}
        rank: Counter = Counter()
        for i, (burst, qs) in enumerate(zip(bursts, choices, strict=True)):
            unknown = [q for q in qs if q not in burst.queries]
            if unknown:
                raise CepoptError(f"plan.decisions[{i}]: query {unknown[0]!r} is not a candidate of the burst")
            key = (burst.scope, burst.type)
            self.plan[(*key, rank[key])] = (burst, tuple(qs))
            rank[key] += 1

    @staticmethod
    def _canonical(burst: Burst) -> Burst:
        return dataclasses.replace(burst, classes=tuple(sorted(burst.classes)))

    def choose(self, burst, state, t):
        recorded, qs = self.plan.get((burst.scope, burst.type, state.decided), (None, ()))
        if recorded is None or self._canonical(recorded) != self._canonical(burst):
            raise CepoptError(
                # no scope named: on Spark the partition that fails first names it, so the same stream and plan
                # would give another message per engine (tests/differential)
                f"plan.decisions: burst {state.decided + 1} of {burst.type} (b={burst.b}, n={burst.n}) is not a "
                "burst the plan decided: the plan replays the decisions made for the bursts of the stream it was "
                "solved on")
        return qs

    def finished(self, bursts: int) -> None:
        if bursts != len(self.plan):
            raise CepoptError(f"plan.decisions: the plan decides {len(self.plan)} bursts, the stream has {bursts}")


POLICIES: dict[str, type[Policy]] = {p.name: p for p in (DynamicPolicy, StaticPolicy, NonSharedPolicy,
                                                         ExhaustivePolicy)}


def get_policy(name: str) -> Policy:
    """The policy called ``name``: one of :data:`POLICIES` or ``random-SEED[-PCT]``."""
    if name.startswith("random-"):
        parts = name.split("-")[1:]
        if len(parts) in (1, 2) and all(p.isdigit() for p in parts):
            return RandomPolicy(int(parts[0]), int(parts[1]) / 100 if len(parts) == 2 else 0.5)
    if name not in POLICIES:
        raise CepoptError(f"unknown Hamlet policy {name!r} (known: {', '.join(POLICIES)}, random-SEED[-PCT])")
    return POLICIES[name]()
