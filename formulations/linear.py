"""The model container's data: a linear model with exact coefficients, its expression algebra, and what a
solve returns (:class:`ModelResult`, with :func:`unit_of` and :func:`certify` for exact proofs).

The public face is :mod:`cepopt.formulations.model`, which adds :func:`~cepopt.formulations.model.solve`;
this module imports no solver, so the solvers' modules can build on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import chain
from numbers import Rational
from typing import Any

__all__ = ["Constraint", "LinExpr", "Model", "ModelResult", "Number", "Var", "certify", "lin_sum", "unit_of"]

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
        self._matrix: tuple | None = None  # (rows list, its length, matrix()): see matrix()

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
        """The largest bound, integrality or row violation of ``x`` (0 when feasible), in floating point."""
        import numpy as np

        v = np.asarray([float(xi) for xi in x], dtype=np.float64)
        worst = 0.0
        lb = np.array([-math.inf if b is None else float(b) for b in self.lb])
        ub = np.array([math.inf if b is None else float(b) for b in self.ub])
        if len(v):
            worst = max(worst, float(np.max(lb - v)), float(np.max(v - ub)))
            ints = np.asarray(self.integer, dtype=bool)
            if ints.any():
                worst = max(worst, float(np.max(np.abs(v[ints] - np.round(v[ints])))))
        if self.rows:
            rows, cols, vals = self.matrix()
            act = np.bincount(rows, weights=vals * v[cols], minlength=len(self.rows))
            lo = np.array([-math.inf if r[2] is None else float(r[2]) for r in self.rows])
            hi = np.array([math.inf if r[3] is None else float(r[3]) for r in self.rows])
            worst = max(worst, float(np.max(lo - act)), float(np.max(act - hi)))
        return worst

    def matrix(self):
        """The rows as coordinate arrays (row, column, coefficient as float), sorted by row, then column.
        Kept until ``rows`` is replaced or grows (rows are only appended): writing a solver's model and
        checking its solution share one build (0.65 s of CPU each at 2.2 million nonzeros)."""
        cached = self._matrix
        if cached is not None and cached[0] is self.rows and cached[1] == len(self.rows):
            return cached[2]
        arrays = self._build_matrix()
        self._matrix = (self.rows, len(self.rows), arrays)
        return arrays

    def _build_matrix(self):
        import numpy as np

        lens = np.fromiter((len(r[0]) for r in self.rows), dtype=np.int64, count=len(self.rows))
        rows = np.repeat(np.arange(len(self.rows), dtype=np.int64), lens)
        cols = np.fromiter(chain.from_iterable(r[0] for r in self.rows), dtype=np.int64, count=int(lens.sum()))
        vals = np.fromiter((float(c) for r in self.rows for c in r[1]), dtype=np.float64, count=int(lens.sum()))
        order = np.lexsort((cols, rows))
        return rows[order], cols[order], vals[order]

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


def unit_of(model: Model) -> Number:
    """The objective's granularity: the gcd of its coefficients when they are exact integers (Python ints,
    whole Fractions) over integer variables: every two solutions' objectives then differ by a multiple of
    it. 0 otherwise; floats count as measured values, proven to the solvers' tolerances (:func:`certify`)."""
    coefs = []
    for c, integer in zip(model.objective, model.integer, strict=True):
        if not c:
            continue
        if not integer or isinstance(c, float):
            return 0
        if isinstance(c, Fraction):
            if c.denominator != 1:
                return 0
            c = int(c)
        coefs.append(int(c))
    return math.gcd(*coefs)


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
