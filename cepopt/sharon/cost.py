"""The Sharon cost model (§3, Eq. 1-9): the single evaluator of every sharing plan.

Notation (spec §2): a query q has the type sequence E^q_1..E^q_n; a shared pattern p occupies positions
[s, e] of q (0-based, inclusive); its prefix is E^q_1..E^q_{s-1}, its suffix E^q_{e+1}..E^q_n.

    Eq.1  Rate(X)          = sum of Rate(X_j) over X's types (Rate(empty) = 0)
    Eq.2  NonShared(q)     = Rate(E^q_1) * Rate(P^q)
    Eq.4  Comp(p, q)       = Rate(E^q_1) * Rate(prefix) + Rate(first suffix type) * Rate(suffix)
                             (a term is 0 when its side is empty)
    Eq.5  Comb(p, q)       = Rate(E^q_1) * Rate(E_m) * Rate(first suffix type)
    Eq.6  Shared(p, q)     = Comp + Comb
    Eq.7  Shared(p, Q')    = Rate(E_m) * Rate(p) + sum_q Shared(p, q)
    Eq.8  BValue(p, Q')    = sum_q NonShared(q) - Shared(p, Q')
    Eq.9  Score(plan)      = sum of BValue over the plan's entries

Empty prefix or suffix (spec §2.5, A3): ``comb="both_required"`` (default) sets Comb = 0 unless both
sides are non-empty; ``comb="missing_as_one"`` lets a missing side contribute a factor 1 (Comb = 0 when
both are missing).

Rates (spec A4): Rate(E) is the statistics' expected events of E per window when given
(``events_per_window``), else the stated rate as is (the user's unit). The model is not scale-invariant
(Comb is cubic, the rest quadratic), so the unit changes which candidates are beneficial. Integer rates
give exact integer costs.

Because Eq. 7 is a fixed charge plus a sum over queries, BValue(p, Q') = sum_{q in Q'} gain(p, q) -
fixed(p), with gain(p, q) = NonShared(q) - Shared(p, q) and fixed(p) = Rate(E_m) * Rate(p). The compact
CP-SAT/MILP models use exactly these two terms.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from cepopt.errors import CepoptError
from cepopt.solution import Objective

__all__ = ["COMB_RULES", "OBJECTIVE", "CostModel", "evaluate", "predict"]

COMB_RULES = ("both_required", "missing_as_one")

OBJECTIVE = Objective("Score", "sum of BValue over the shared candidates, Eq. 9, in rate products", "max",
                      "operations: A-Seq updates + combines (Non-Shared cost minus Score)")


class CostModel:
    """Eq. 1-8 over a fixed set of queries (name -> type tuple) and rates (type -> rate)."""

    def __init__(self, types: Mapping[str, Sequence[str]], rates: Mapping[str, float],
                 comb: str = "both_required"):
        if comb not in COMB_RULES:
            raise CepoptError(f"comb must be one of {', '.join(COMB_RULES)}, got {comb!r}")
        self.comb = comb
        self.types = {q: tuple(t) for q, t in types.items()}
        for q, seq in self.types.items():
            for t in seq:
                if t not in rates:
                    raise CepoptError(f"query {q}: event type {t!r} has no rate in the statistics")
        self.rates = dict(rates)
        # prefix sums of rates per query: Rate(E_a..E_b) in O(1)
        self._cum: dict[str, list[float]] = {}
        for q, seq in self.types.items():
            cum = [0]
            for t in seq:
                cum.append(cum[-1] + self.rates[t])
            self._cum[q] = cum
        # Every cost term multiplies at most three rates, each at most ``top`` (Eq. 5), BValues sum
        # a term per query: refuse rates whose costs would overflow, as inf - inf makes BValues nan.
        top = 1.0 + sum(float(self.rates[t]) for seq in self.types.values() for t in seq)
        if not math.isfinite(3.0 * (len(self.types) + 1) * top * top * top):
            raise CepoptError("statistics: costs overflow: rates too large for the Sharon cost model "
                              "(Eq. 5 multiplies three rates)")

    def rate_of(self, pattern: Iterable[str]) -> float:
        """Eq. 1: Rate(X) = sum of its types' rates."""
        return sum(self.rates[t] for t in pattern)

    def nonshared(self, q: str) -> float:
        """Eq. 2: NonShared(q) = Rate(E^q_1) * Rate(P^q)."""
        seq = self.types[q]
        return self.rates[seq[0]] * self._cum[q][-1] if seq else 0

    def total_nonshared(self) -> float:
        """Cost of the Non-Shared plan: every query on its own (A-Seq)."""
        return sum(self.nonshared(q) for q in self.types)

    def shared_query(self, q: str, start: int, length: int) -> float:
        """Eq. 6: Shared(p, q) = Comp + Comb for p at positions [start, start+length) of q."""
        seq, cum, r = self.types[q], self._cum[q], self.rates
        end = start + length  # first suffix position
        has_prefix, has_suffix = start > 0, end < len(seq)
        comp = 0
        if has_prefix:
            comp += r[seq[0]] * cum[start]
        if has_suffix:
            comp += r[seq[end]] * (cum[-1] - cum[end])
        r_start = r[seq[start]]
        if self.comb == "both_required":
            comb = r[seq[0]] * r_start * r[seq[end]] if has_prefix and has_suffix else 0
        elif not has_prefix and not has_suffix:
            comb = 0
        else:
            comb = (r[seq[0]] if has_prefix else 1) * r_start * (r[seq[end]] if has_suffix else 1)
        return comp + comb

    def gain(self, q: str, start: int, length: int) -> float:
        """NonShared(q) - Shared(p, q): what query q saves by sharing p (before p's fixed charge)."""
        return self.nonshared(q) - self.shared_query(q, start, length)

    def gains(self, length: int, placed: Iterable[tuple[str, int]]) -> list:
        """gain(p, q) for each (query, start) of a pattern of ``length`` (the loop of the compact models,
        with the lookups hoisted)."""
        types, cum_of, r, both = self.types, self._cum, self.rates, self.comb == "both_required"
        out = []
        for q, start in placed:
            seq, cum = types[q], cum_of[q]
            end = start + length
            first = r[seq[0]]
            nonshared = first * cum[-1]
            has_prefix, has_suffix = start > 0, end < len(seq)
            comp = 0
            if has_prefix:
                comp += first * cum[start]
            if has_suffix:
                comp += r[seq[end]] * (cum[-1] - cum[end])
            if both:
                comb = first * r[seq[start]] * r[seq[end]] if has_prefix and has_suffix else 0
            elif not has_prefix and not has_suffix:
                comb = 0
            else:
                comb = (first if has_prefix else 1) * r[seq[start]] * (r[seq[end]] if has_suffix else 1)
            out.append(nonshared - (comp + comb))
        return out

    def fixed(self, pattern: Sequence[str]) -> float:
        """The one-time term of Eq. 7: Rate(E_m) * Rate(p)."""
        return self.rates[pattern[0]] * self.rate_of(pattern)

    def shared(self, pattern: Sequence[str], placed: Iterable[tuple[str, int]]) -> float:
        """Eq. 7: Shared(p, Q') for ``placed`` = [(query, start of p in it)]."""
        return self.fixed(pattern) + sum(self.shared_query(q, s, len(pattern)) for q, s in placed)

    def bvalue(self, pattern: Sequence[str], placed: Iterable[tuple[str, int]]) -> float:
        """Eq. 8: BValue(p, Q') = NonShared(p, Q') - Shared(p, Q')."""
        return sum(self.gains(len(pattern), placed)) - self.fixed(pattern)


def evaluate(problem, plan) -> float:
    """Eq. 9, the family objective: Score(plan) = the sum of the BValues of the plan's entries, after
    checking that ``plan`` is a valid sharing plan of ``problem`` (a
    :class:`~cepopt.sharon.problem.SharonProblem`)."""
    problem.check(plan)
    return sum((problem.bvalue(p, qs) for p, qs in plan.shared), 0)


def predict(problem, plan) -> float:
    """What the executor should measure: the Non-Shared cost of the workload minus Score(plan) (Eq. 2,
    Eq. 9; the additive model of spec A5), compared with the A-Seq updates plus combines it counts.
    The model is additive, not a count: a plan whose entries overlap in the queries they save on can
    score more than the workload's Non-Shared cost, and the prediction is then negative."""
    return float(problem.cost.total_nonshared() - evaluate(problem, plan))
