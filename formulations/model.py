"""One linear model for every solver: build it once, hand it to CP-SAT, MathOpt (HiGHS, SCIP) or PuLP.

A :class:`Model` holds variables (bounds, integrality), linear rows ``lo <= sum coef x <= hi`` and a
linear objective whose coefficients are kept *exactly* as given (Python ints, Fractions or floats).
Formulations build it, :func:`solve` sends it to a backend chosen by name, and the formulation decodes
the solution vector into a plan:

* ``"cpsat"``: CP-SAT, the objective scaled to int64 (exactly when the coefficients are integers whose
  sum fits, :mod:`cepopt.formulations.scaling`; else rounded, and the result says so: ``exact=False``);
* ``"highs"``, ``"scip"``: OR-Tools MathOpt, in process (a ModelProto filled from flat lists);
* ``"cbc"`` (PuLP's bundled CBC) and any other PuLP backend by name (``"gurobi"``, ``"cplex"``,
  ``"glpk"``, ``"pulp:GUROBI_CMD"``...), a clear CepoptError when it is not installed.

Rows are added from index lists (:meth:`Model.add_row`, fast: a 100k-row model costs no per-term Python
object) or with a small expression algebra (:meth:`Model.var`, ``m.add(2 * x + y <= 3)``). Every
model can be written as MPS or LP text (:meth:`Model.write`) and, for CP-SAT, as its proto in text.

>>> m = Model("tiny", sense="max")
>>> x = m.var("x", 0, 3); y = m.var("y")
>>> m.objective_from(2 * x + 3 * y)
>>> _ = m.add(x + 2 * y <= 4)
>>> r = solve(m, "cpsat", seed=0)
>>> r.status, r.objective, r.bound, r.value(x), r.value(y)
('optimal', 7, 7, 2, 1)
>>> solve(m, "highs").objective
7
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Rational
from typing import Any

__all__ = ["Constraint", "LinExpr", "Model", "ModelResult", "Var", "backends", "certify", "lin_sum", "solve",
           "unit_of"]

Number = int | float | Fraction


# ---------------------------------------------------------------------------------------------- algebra
class LinExpr:
    """sum coef * x_i + constant over one model's variables (``terms``: index -> coefficient)."""

    __slots__ = ("constant", "terms")

    def __init__(self, terms: dict[int, Number] | None = None, constant: Number = 0):
        self.terms = terms if terms is not None else {}
        self.constant = constant

    @staticmethod
    def of(value) -> LinExpr:
        if isinstance(value, LinExpr):
            return value
        if isinstance(value, Var):
            return LinExpr({value.index: 1})
        if isinstance(value, int | float | Rational):
            return LinExpr({}, value)
        raise TypeError(f"not a linear expression: {value!r}")

    def copy(self) -> LinExpr:
        return LinExpr(dict(self.terms), self.constant)

    def _iadd(self, other, sign: int = 1) -> LinExpr:
        other = LinExpr.of(other)
        for i, c in other.terms.items():
            self.terms[i] = self.terms.get(i, 0) + sign * c
        self.constant += sign * other.constant
        return self

    def __add__(self, other) -> LinExpr:
        return self.copy()._iadd(other)

    __radd__ = __add__

    def __sub__(self, other) -> LinExpr:
        return self.copy()._iadd(other, -1)

    def __rsub__(self, other) -> LinExpr:
        return (-self)._iadd(other)

    def __neg__(self) -> LinExpr:
        return self * -1

    def __mul__(self, k) -> LinExpr:
        if not isinstance(k, int | float | Rational):
            raise TypeError("a linear expression multiplies by a number only")
        return LinExpr({i: c * k for i, c in self.terms.items()}, self.constant * k)

    __rmul__ = __mul__

    def __le__(self, other) -> Constraint:
        return _constraint(self - other, None, 0)

    def __ge__(self, other) -> Constraint:
        return _constraint(self - other, 0, None)

    def __eq__(self, other) -> Constraint:  # type: ignore[override]
        return _constraint(self - other, 0, 0)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Var:
    """A variable of a :class:`Model` (its index); arithmetic makes a :class:`LinExpr`."""

    index: int
    name: str = ""

    def _e(self) -> LinExpr:
        return LinExpr({self.index: 1})

    def __add__(self, o): return self._e() + o
    def __radd__(self, o): return self._e() + o
    def __sub__(self, o): return self._e() - o
    def __rsub__(self, o): return o - self._e() if isinstance(o, LinExpr) else LinExpr.of(o) - self._e()
    def __neg__(self): return self._e() * -1
    def __mul__(self, k): return self._e() * k
    def __rmul__(self, k): return self._e() * k
    def __le__(self, o): return self._e() <= o
    def __ge__(self, o): return self._e() >= o
    def __eq__(self, o): return self._e() == o  # type: ignore[override]
    def __hash__(self): return hash((Var, self.index))


@dataclass(frozen=True)
class Constraint:
    """``lo <= expr.terms . x <= hi`` (expr's constant already moved to the bounds)."""

    terms: dict[int, Number]
    lo: Number | None
    hi: Number | None


def _constraint(expr: LinExpr, lo, hi) -> Constraint:
    c = expr.constant
    return Constraint(expr.terms, None if lo is None else lo - c, None if hi is None else hi - c)


def lin_sum(items: Iterable) -> LinExpr:
    """sum() of variables, expressions and numbers without a copy per term."""
    out = LinExpr()
    for item in items:
        out._iadd(item)
    return out


# ---------------------------------------------------------------------------------------------- model
class Model:
    """A linear model. Variables by index 0..n-1: ``names``, ``lb``, ``ub`` (None = unbounded),
    ``integer``; ``objective`` coefficients (exact numbers) and ``constant``; ``rows`` as
    ``(cols, coefs, lo, hi)`` with None for an absent side. ``decode`` is free for the formulation
    (what the variables mean), ``hint`` an optional start vector."""

    def __init__(self, name: str = "cepopt", sense: str = "max"):
        if sense not in ("max", "min"):
            raise ValueError(f"sense must be 'max' or 'min', got {sense!r}")
        self.name = name
        self.sense = sense
        self.names: list[str] = []
        self.lb: list[Number | None] = []
        self.ub: list[Number | None] = []
        self.integer: list[bool] = []
        self.objective: list[Number] = []
        self.constant: Number = 0
        self.rows: list[tuple[list[int], list[Number], Number | None, Number | None]] = []
        self.row_names: list[str] | None = None
        self.decode: Any = None
        self.hint: list[Number] | None = None

    # -- building
    def __len__(self) -> int:
        return len(self.names)

    def add_var(self, name: str | None = None, lb: Number | None = 0, ub: Number | None = 1,
                integer: bool = True, obj: Number = 0) -> int:
        """Add one variable (default: binary); returns its index."""
        i = len(self.names)
        self.names.append(name if name is not None else f"v{i}")
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(integer)
        self.objective.append(obj)
        return i

    def var(self, name: str | None = None, lb: Number | None = 0, ub: Number | None = 1,
            integer: bool = True, obj: Number = 0) -> Var:
        """:meth:`add_var` returning a :class:`Var` for the expression algebra."""
        i = self.add_var(name, lb, ub, integer, obj)
        return Var(i, self.names[i])

    def add_vars(self, names: Sequence[str], lb: Number | None = 0, ub: Number | None = 1,
                 integer: bool = True, obj: Sequence[Number] | None = None) -> range:
        """Add variables in bulk (same bounds); returns their index range."""
        first, n = len(self.names), len(names)
        self.names.extend(names)
        self.lb.extend([lb] * n)
        self.ub.extend([ub] * n)
        self.integer.extend([integer] * n)
        self.objective.extend(obj if obj is not None else [0] * n)
        return range(first, first + n)

    def add_row(self, cols: Sequence[int], coefs: Sequence[Number], lo: Number | None = None,
                hi: Number | None = None, name: str | None = None) -> int:
        """Add ``lo <= sum coefs[k] x[cols[k]] <= hi``; returns the row index."""
        r = len(self.rows)
        self.rows.append((list(cols), list(coefs), lo, hi))
        if name is not None or self.row_names is not None:
            if self.row_names is None:
                self.row_names = [f"r{k}" for k in range(r)]
            self.row_names.append(name if name is not None else f"r{r}")
        return r

    def add_le(self, coefs: Mapping[int, Number], rhs: Number, name: str | None = None) -> int:
        return self.add_row(list(coefs), list(coefs.values()), None, rhs, name)

    def add_ge(self, coefs: Mapping[int, Number], rhs: Number, name: str | None = None) -> int:
        return self.add_row(list(coefs), list(coefs.values()), rhs, None, name)

    def add_eq(self, coefs: Mapping[int, Number], rhs: Number, name: str | None = None) -> int:
        return self.add_row(list(coefs), list(coefs.values()), rhs, rhs, name)

    def add(self, constraint: Constraint, name: str | None = None) -> int:
        """Add a constraint written with the algebra (``m.add(x + y <= 1)``)."""
        if not isinstance(constraint, Constraint):
            raise TypeError(f"not a constraint: {constraint!r} (compare an expression with <=, >= or ==)")
        terms = {i: c for i, c in constraint.terms.items() if c}
        return self.add_row(list(terms), list(terms.values()), constraint.lo, constraint.hi, name)

    def objective_from(self, expr, sense: str | None = None) -> None:
        """Set the objective (and optionally the sense) from an expression."""
        expr = LinExpr.of(expr)
        if sense is not None:
            if sense not in ("max", "min"):
                raise ValueError(f"sense must be 'max' or 'min', got {sense!r}")
            self.sense = sense
        self.objective = [0] * len(self.names)
        for i, c in expr.terms.items():
            self.objective[i] = c
        self.constant = expr.constant

    def maximize(self, expr) -> None:
        self.objective_from(expr, "max")

    def minimize(self, expr) -> None:
        self.objective_from(expr, "min")

    # -- reading
    def value(self, x: Sequence[Number]) -> Number:
        """The objective of ``x`` in exact arithmetic (the model's own numbers)."""
        return sum((c * xi for c, xi in zip(self.objective, x, strict=True) if c and xi), self.constant)

    def violation(self, x: Sequence[Number]) -> float:
        """The largest bound or row violation of ``x`` (0 when feasible), in floating point."""
        worst = 0.0
        for i, xi in enumerate(x):
            lb, ub = self.lb[i], self.ub[i]
            if lb is not None:
                worst = max(worst, float(lb - xi))
            if ub is not None:
                worst = max(worst, float(xi - ub))
            if self.integer[i]:
                worst = max(worst, abs(float(xi) - round(float(xi))))
        for cols, coefs, lo, hi in self.rows:
            s = sum(c * x[j] for j, c in zip(cols, coefs, strict=True))
            if lo is not None:
                worst = max(worst, float(lo - s))
            if hi is not None:
                worst = max(worst, float(s - hi))
        return worst

    def is_binary(self) -> bool:
        return all(self.integer) and all(lb == 0 for lb in self.lb) and all(ub == 1 for ub in self.ub)

    def submodel(self, members: Sequence[int], rows: Sequence[int], name: str | None = None) -> Model:
        """The model over the variables ``members`` (renumbered in that order) and the rows ``rows``,
        which must hold members only."""
        pos = {v: k for k, v in enumerate(members)}
        sub = Model(name or self.name, self.sense)
        sub.names = [self.names[i] for i in members]
        sub.lb = [self.lb[i] for i in members]
        sub.ub = [self.ub[i] for i in members]
        sub.integer = [self.integer[i] for i in members]
        sub.objective = [self.objective[i] for i in members]
        for r in rows:
            cols, coefs, lo, hi = self.rows[r]
            sub.rows.append(([pos[j] for j in cols], coefs, lo, hi))
        if self.hint is not None:
            sub.hint = [self.hint[i] for i in members]
        return sub

    def stats(self) -> dict:
        return {"variables": len(self.names), "constraints": len(self.rows),
                "nonzeros": sum(len(r[0]) for r in self.rows)}

    # -- export
    def write(self, path: str | os.PathLike, backend: str | None = None) -> str:
        """Write the model to ``path``: ``.mps`` (free MPS), ``.lp`` (CPLEX LP) or ``.pbtxt``/``.txt``
        (the proto in text: CP-SAT's CpModelProto for ``backend="cpsat"``, else MathOpt's ModelProto).
        Returns the format written."""
        from cepopt.formulations import export

        return export.write_model(self, path, backend)


# ---------------------------------------------------------------------------------------------- results
@dataclass
class ModelResult:
    """A solve's outcome. ``status``: optimal / feasible (stopped with a solution) / timeout (no
    solution) / infeasible / error (``message`` says why). ``x``: the values by variable index (integer
    variables rounded to ints), ``objective``: their value in the model's exact numbers, ``bound``: a
    bound on the optimum valid for the exact objective (the solver's bound widened by the scaling's
    rounding, ``bound_margin``); ``exact``: the solver worked on the exact objective (CP-SAT with
    integers that fit), so its optimality proof is exact. ``solver_objective``: the solver's own value."""

    status: str
    objective: Number | None = None
    bound: Number | None = None
    x: list[Number] | None = None
    backend: str = ""
    wall_time: float = 0.0
    message: str = ""
    exact: bool = False
    bound_margin: float = 0.0
    solver_objective: float | None = None
    stats: dict = field(default_factory=dict)

    def value(self, var: Var | int):
        i = var.index if isinstance(var, Var) else var
        return None if self.x is None else self.x[i]

    @property
    def has_solution(self) -> bool:
        return self.x is not None


# ---------------------------------------------------------------------------------------------- solving
def backends() -> tuple[str, ...]:
    """The backend names :func:`solve` knows (PuLP's further solvers also as ``pulp:NAME``)."""
    from cepopt.formulations.milp import PULP_ALIASES

    return ("cpsat", "highs", "scip", "cbc", *sorted(PULP_ALIASES))


def solve(model: Model, backend: str = "highs", *, time_limit: float | None = None, seed: int = 0,
          rel_gap: float = 0.0, feas_tol: float | None = None, threads: int = 1, workers: int = 2,
          lp_heavy: bool = False, options: Mapping[str, Any] | None = None, hint: Sequence[Number] | None = None,
          log: bool | None = None) -> ModelResult:
    """Solve ``model`` with ``backend``.

    ``time_limit`` seconds (None: none), ``seed``; ``rel_gap`` the relative gap at which a MILP solver may
    stop (0: prove the optimum); ``feas_tol`` a tighter primal feasibility tolerance (HiGHS, SCIP);
    ``threads`` MILP threads (SCIP, CBC); ``workers`` and ``lp_heavy`` CP-SAT's search workers and
    LP-heavy search (:func:`~cepopt.formulations.cpsat.solve_cpsat`); ``options`` solver-specific
    settings (HiGHS/SCIP option maps, CP-SAT parameters); ``hint`` a start vector (CP-SAT, SCIP);
    ``log`` shows the solver's own log on stderr (None: as the session's settings say,
    :mod:`cepopt.formulations.native`).
    """
    from cepopt.formulations import native

    native.check_time_limit(time_limit)
    settings = native.settings()
    if log is None:
        log = settings.log
    native.offer_export(model, backend)
    hint = hint if hint is not None else model.hint
    if backend == "cpsat":
        from cepopt.formulations.cpsat import solve_model_cpsat

        return solve_model_cpsat(model, time_limit=time_limit, seed=seed, workers=workers, lp_heavy=lp_heavy,
                                 extra=options, hint=hint, log=log)
    from cepopt.formulations.milp import solve_model_milp

    return solve_model_milp(model, backend=backend, time_limit=time_limit, seed=seed, rel_gap=rel_gap,
                            feas_tol=feas_tol, threads=threads, options=options, hint=hint, log=log)


def unit_of(model: Model) -> Number:
    """The objective's granularity: the gcd of its coefficients when they are exact integers (Python ints,
    whole Fractions) over integer variables: every two solutions' objectives then differ by a multiple of
    it. 0 otherwise; floats count as measured values, proven to the solvers' tolerances (:func:`certify`)."""
    g = 0
    for c, integer in zip(model.objective, model.integer, strict=True):
        if not c:
            continue
        if not integer:
            return 0
        if isinstance(c, float):
            return 0
        if isinstance(c, Fraction):
            if c.denominator != 1:
                return 0
            c = int(c)
        g = math.gcd(g, int(c))
    return g


def certify(objective: Number, bound: Number | None, unit: Number, sense: str = "max",
            rel_tol: float = 1e-6) -> bool:
    """Is ``objective`` (exact) proven optimal by ``bound`` (valid for the exact objective)? With a
    granularity ``unit`` > 0 (:func:`unit_of`) a better solution would be at least ``objective + unit``,
    so a bound below that proves it exactly. With fractional coefficients (unit 0) the proof is to the
    solvers' own precision: a gap within ``rel_tol`` of the objective (the tolerance solve() checks a
    solver's objective with)."""
    if bound is None or objective is None:
        return False
    gap = (bound - objective) if sense == "max" else (objective - bound)
    if unit:
        return gap < unit
    return float(gap) <= rel_tol * max(1.0, abs(float(objective)))
