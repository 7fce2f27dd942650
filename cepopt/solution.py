"""What a family's cost model measures (Objective), what a method returns (MethodResult) and what
solve() reports (Solution, Solutions)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MethodResult", "Objective", "Solution", "Solutions", "STATUSES", "gap"]

STATUSES = ("optimal", "feasible", "timeout", "infeasible", "error")
SENSES = ("min", "max")


@dataclass(frozen=True)
class Objective:
    """What a family's ``cost.evaluate`` computes and in which unit ``cost.predict`` answers.

    >>> print(Objective("ln Cost", "ln of partial matches", "min", "partial matches"))
    ln Cost (ln of partial matches), lower is better
    """

    name: str
    unit: str
    sense: str
    predict_unit: str

    def __post_init__(self) -> None:
        if self.sense not in SENSES:
            raise ValueError(f"objective sense must be 'min' or 'max', got {self.sense!r}")

    def describe(self, name: str | None = None) -> str:
        """``name`` (a variant such as ``ln Cost_ord``, default :attr:`name`), unit and sense."""
        better = "lower" if self.sense == "min" else "higher"
        return f"{name or self.name} ({self.unit}), {better} is better"

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class MethodResult:
    """A method's answer: the plan, how sure it is, and what it wants to report.

    ``status`` is "optimal" only when the method proves it; a heuristic says "feasible". ``bound`` is a
    proven bound on the optimum in the objective's sense (an upper bound when maximising, a lower
    bound when minimising). ``solver_objective`` is the solver's own value of the plan; solve()
    checks it against the family's cost model. ``stats`` holds anything else worth reporting
    (nodes explored, model size, guaranteed weight, options cut by a cap, ...).
    """

    plan: Any
    status: str = "feasible"
    bound: float | None = None
    solver_objective: float | None = None
    stats: dict = field(default_factory=dict)
    message: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")


def gap(objective: float | None, bound: float | None, sense: str) -> float | None:
    """Relative gap between the plan's objective and the proven bound (0 when proven optimal)."""
    if objective is None or bound is None:
        return None
    if not (math.isfinite(objective) and math.isfinite(bound)):
        return None
    diff = (bound - objective) if sense == "max" else (objective - bound)
    diff = max(diff, 0.0)
    if diff == 0:
        return 0.0
    return diff / max(abs(objective), abs(bound), 1e-12)


@dataclass(frozen=True)
class Solution:
    """One solve: the plan and its objective as re-evaluated by the family's cost model."""

    problem: str
    method: str
    plan: Any
    objective: float | None
    bound: float | None
    status: str
    gap: float | None
    time_s: float
    stats: dict = field(default_factory=dict)
    instance: str | None = None
    sense: str = "min"
    message: str = ""
    plan_json: Any = None
    #: the cost function that scored the plan (join order: ``ln Cost_ord`` or ``ln Cost_tree``)
    objective_name: str | None = None
    #: the family's objective, for printing
    objective_info: Objective | None = None

    def to_json(self) -> dict:
        return {
            "problem": self.problem,
            "instance": self.instance,
            "method": self.method,
            "status": self.status,
            "objective": _json_number(self.objective),
            "bound": _json_number(self.bound),
            "gap": _json_number(self.gap),
            "sense": self.sense,
            "objective_name": self.objective_name,
            "objective_unit": None if self.objective_info is None else self.objective_info.unit,
            "time_s": round(self.time_s, 6),
            "plan": self.plan_json,
            "stats": _jsonable(self.stats),
            "message": self.message,
        }

    def row(self) -> dict:
        return {
            "method": self.method,
            "status": self.status,
            "objective_name": self.objective_name,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "time_s": self.time_s,
            "message": self.message,
        }


def _json_number(x: float | None) -> float | None | str:
    if x is None:
        return None
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


def _jsonable(value: Any) -> Any:
    """Best-effort conversion of method stats to JSON values (tuples, sets, numpy scalars)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        return f"{x:.6g}"
    return str(x)


class Solutions(list):
    """A list of Solution that prints as a table and converts to pandas."""

    def __init__(self, items: Iterable[Solution] = ()):
        super().__init__(items)

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame([s.row() for s in self])

    def to_json(self) -> list[dict]:
        return [s.to_json() for s in self]

    def best(self) -> Solution | None:
        """The solution with the best objective among those that have a plan; on a tie, a proven
        optimum, then the faster one."""
        usable = [s for s in self if s.objective is not None and s.status in ("optimal", "feasible", "timeout")]
        if not usable:
            return None
        sign = -1 if usable[0].sense == "max" else 1
        return min(usable, key=lambda s: (sign * s.objective, s.status != "optimal", s.time_s))

    def groups(self) -> dict[str | None, list[Solution]]:
        """The solutions by the cost function that scored them (None: no plan), in order."""
        out: dict[str | None, list[Solution]] = {}
        for s in self:
            out.setdefault(s.objective_name, []).append(s)
        return out

    def __str__(self) -> str:
        """A table per objective: methods whose plans are scored by different cost functions (join
        order: order plans by Cost_ord, tree plans by Cost_tree) are listed apart, and it says so."""
        header = ["method", "status", "objective", "bound", "gap", "time_s"]
        rows = [[s.method, s.status, _fmt(s.objective), _fmt(s.bound),
                 "-" if s.gap is None else f"{100 * s.gap:.2f}%", f"{s.time_s:.3f}"] for s in self]
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
        row_of = {id(s): r for s, r in zip(self, rows, strict=True)}
        info = next((s.objective_info for s in self if s.objective_info is not None), None)
        groups = self.groups()
        named = [g for g in groups if g is not None]
        if len(named) <= 1:
            groups = {named[0] if named else None: list(self)}
        lines = []
        if len(named) > 1:
            lines.append(f"{len(named)} different objectives ({', '.join(named)}): compare methods within a "
                         "group only")
        for name, members in groups.items():
            if name is None and len(named) > 1:
                lines.append("no plan:")
            elif info is not None:
                lines.append(f"objective: {info.describe(name)}")
            lines += ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)),
                      "  ".join("-" * w for w in widths)]
            for s in members:
                line = "  ".join(c.ljust(w) for c, w in zip(row_of[id(s)], widths, strict=True))
                if s.message and s.status in ("error", "infeasible"):
                    line += f"  ({s.message})"
                lines.append(line.rstrip())
            lines.append("")
        return "\n".join(lines).rstrip()

    def __repr__(self) -> str:
        return f"Solutions({list.__repr__(self)})"


def dumps(obj: Any) -> str:
    return json.dumps(_jsonable(obj), indent=2, sort_keys=False)
