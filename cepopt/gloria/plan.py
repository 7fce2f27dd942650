"""The Gloria plan: one annotated partition of the queries per template transition.

A Gloria *workload sharing plan* (paper Defs 2.6 and 2.7, specs/gloria.md §1.5 and §7.1) gives, for
every transition ``(source, target)`` of the workload's GRETA template, a partition of the queries that
use the transition into **blocks** (the paper's Q-sets):

* a **shared** block holds at least two queries and a snapshot event type ``snapshot``: the block's
  events carry one snapshot expression over snapshots created at events of that type (HAMLET's
  mechanism, §3.2). ``snapshot == source`` means snapshots are (re)created on this transition (a fresh
  share, a local snapshot or a merge); an older, upstream type means the block is REUSEd unchanged
  from the previous transition.
* an **unshared** block holds exactly one query and ``snapshot is None``: that query keeps plain
  per-query aggregates (GRETA, Eq. 2).

Inside a Kleene sub-graph (a cycle of the template) every transition of the cycle carries the same
plan (Lemma 6.1): either all queries of the Kleene group shared with one snapshot type of the cycle,
or all unshared.

How to execute a plan (for the executor), per transition ``(Ei, Ej)`` and block:

* unshared ``(q)``: every Ej event adds the per-query value ``cnt_q`` of each earlier compatible Ei
  event (GRETA propagation, Eq. 2);
* shared ``(S)^X`` with ``X == Ei``: every Ei event of the region is a snapshot ``sp_e`` holding its
  per-query values for the queries of S (computed under the previous transition's plan); Ej events
  carry one expression (coefficients over snapshot variables) = the sum of their Ei predecessors'
  snapshots;
* shared ``(S)^X`` with an older ``X``: Ei events already carry expressions over X snapshots; Ej
  events carry the sum of those expressions (REUSE, Eq. 3);
* an expression is evaluated into per-query values (Eq. 4) where a query ends, and where the next
  transition puts the query in a different block (re-snapshot, merge, split).

Every plan yields the same results as the unshared plan; it changes the cost only.

The plan is a small frozen dataclass and round-trips through JSON::

    {"transitions": [{"from": "A", "to": "B",
                      "blocks": [{"queries": ["q1", "q2"], "snapshot": "A"},
                                 {"queries": ["q3"], "snapshot": null}]}, ...]}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from cepopt.errors import CepoptError
from cepopt.gloria.block import Block
from cepopt.gloria.canonical import restrict_blocks, sort_blocks

__all__ = ["Block", "GloriaPlan", "TransitionPlan", "plan_from_json", "plan_to_json", "restrict_blocks",
           "sort_blocks"]


@dataclass(frozen=True)
class TransitionPlan:
    """The annotated partition of one transition ``(source, target)``: blocks sorted canonically."""

    source: str
    target: str
    blocks: tuple[Block, ...]

    def __post_init__(self) -> None:
        blocks = sort_blocks(self.blocks)
        names = [q for block in blocks for q in block.queries]
        if len(set(names)) != len(names):  # some query twice: name the first block that repeats one
            seen: set[str] = set()
            for block in blocks:
                dup = seen.intersection(block.queries)
                if dup:
                    raise CepoptError(f"query {sorted(dup)[0]!r} is in two blocks of transition "
                                      f"{self.source}->{self.target}")
                seen.update(block.queries)
        object.__setattr__(self, "blocks", blocks)

    @classmethod
    def of_disjoint(cls, source: str, target: str, blocks: Iterable[Block]) -> TransitionPlan:
        """The plan of blocks known to hold disjoint queries (the options of a candidate graph: each
        partitions its own pool's queries, and the pools of one transition hold different queries):
        sorted as the constructor sorts them, without its check for a query in two blocks. Why: the
        search decodes one plan of ~180 transitions per published workload, and that check was about 2 %
        of the compiled search's instructions (callgrind, bus Mix kleeneRatio workload_5);
        tests/gloria/test_plan_from_options.py compares it with the constructor."""
        plan = object.__new__(cls)
        fields = plan.__dict__  # what object.__setattr__ would write, without a call per field
        fields["source"] = source
        fields["target"] = target
        fields["blocks"] = sort_blocks(blocks)
        return plan

    @property
    def transition(self) -> tuple[str, str]:
        return (self.source, self.target)

    @property
    def queries(self) -> frozenset[str]:
        return frozenset(q for b in self.blocks for q in b.queries)

    def block_of(self, query: str) -> Block | None:
        for block in self.blocks:
            if query in block.queries:
                return block
        return None


@dataclass(frozen=True)
class GloriaPlan:
    """A workload sharing plan: one :class:`TransitionPlan` per template transition (sorted)."""

    transitions: tuple[TransitionPlan, ...]

    def __post_init__(self) -> None:
        given = tuple(self.transitions)
        keys = [tp.transition for tp in given]
        if all(k1 < k2 for k1, k2 in zip(keys, keys[1:])):  # sorted, one plan each: nothing to merge
            object.__setattr__(self, "transitions", given)
            return
        merged: dict[tuple[str, str], list[Block]] = {}
        for tp in given:
            merged.setdefault(tp.transition, []).extend(tp.blocks)
        tps = tuple(TransitionPlan(s, t, tuple(bs)) for (s, t), bs in sorted(merged.items()))
        object.__setattr__(self, "transitions", tps)

    @classmethod
    def from_blocks(cls, blocks: Mapping[tuple[str, str], Iterable[Block]], *, disjoint: bool = False) -> GloriaPlan:
        """The plan of each transition's blocks; ``disjoint``: the caller knows that no query is in two
        blocks of a transition (:meth:`TransitionPlan.of_disjoint`)."""
        if not disjoint:
            return cls(tuple(TransitionPlan(s, t, tuple(bs)) for (s, t), bs in sorted(blocks.items())))
        # one plan per transition, in sorted order: what the constructor would merge and sort is so
        # already (the search decodes ~180 transitions per published workload this way)
        make = TransitionPlan.of_disjoint
        plan = object.__new__(cls)
        plan.__dict__["transitions"] = tuple([make(s, t, blocks[(s, t)]) for s, t in sorted(blocks)])
        return plan

    @cached_property
    def _by_transition(self) -> dict[tuple[str, str], TransitionPlan]:
        return {(tp.source, tp.target): tp for tp in reversed(self.transitions)}

    def transition(self, source: str, target: str) -> TransitionPlan | None:
        """The transition's plan (the first listed, if listed twice), by a dictionary built once."""
        return self._by_transition.get((source, target))

    def blocks(self, source: str, target: str) -> tuple[Block, ...]:
        tp = self.transition(source, target)
        return tp.blocks if tp is not None else ()

    def block_of(self, source: str, target: str, query: str) -> Block | None:
        tp = self.transition(source, target)
        return tp.block_of(query) if tp is not None else None

    def shared_blocks(self) -> list[tuple[tuple[str, str], Block]]:
        return [(tp.transition, b) for tp in self.transitions for b in tp.blocks if b.shared]

    def describe(self) -> str:
        """Human-readable: ``A->B: (q1,q2)^A (q3)`` per line."""
        lines = []
        for tp in self.transitions:
            parts = [f"({','.join(b.queries)})" + (f"^{b.snapshot}" if b.shared else "") for b in tp.blocks]
            lines.append(f"{tp.source}->{tp.target}: " + " ".join(parts))
        return "\n".join(lines)


def plan_to_json(plan: GloriaPlan) -> dict:
    return {"transitions": [{"from": tp.source, "to": tp.target, "blocks": [b.to_json() for b in tp.blocks]}
                            for tp in plan.transitions]}


def plan_from_json(problem: Any, value: Any) -> GloriaPlan:
    """Parse the JSON form; ``problem`` (optional) is not needed: validity is checked by the cost model."""
    if not isinstance(value, Mapping) or not isinstance(value.get("transitions"), list):
        raise CepoptError("plan: expected an object with a 'transitions' list")
    tps = []
    for i, item in enumerate(value["transitions"]):
        try:
            blocks = tuple(Block(tuple(b["queries"]), b.get("snapshot")) for b in item["blocks"])
            tps.append(TransitionPlan(str(item["from"]), str(item["to"]), blocks))
        except (KeyError, TypeError) as exc:
            raise CepoptError(f"plan.transitions[{i}]: malformed transition ({exc})") from None
    return GloriaPlan(tuple(tps))
