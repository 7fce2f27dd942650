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

import os
from collections.abc import Mapping, Sequence
from typing import Any

from cepopt.formulations import export, native
from cepopt.formulations.linear import (
    Constraint,
    LinExpr,
    Model,
    ModelResult,
    Number,
    Var,
    certify,
    lin_sum,
    unit_of,
)
from cepopt.formulations.milp import PULP_ALIASES, solve_model_milp

__all__ = ["Constraint", "LinExpr", "Model", "ModelResult", "Var", "backends", "certify", "lin_sum", "solve",
           "unit_of", "write"]


def backends() -> tuple[str, ...]:
    """The backend names :func:`solve` knows (PuLP's further solvers also as ``pulp:NAME``)."""
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
    settings (HiGHS/SCIP option maps, CP-SAT parameters); ``hint`` a start vector (CP-SAT; SCIP and
    HiGHS take it as a MIP start, checked by the solver and dropped when infeasible);
    ``log`` shows the solver's own log on stderr (None: as the session's settings say,
    :mod:`cepopt.formulations.native`).
    """
    native.check_time_limit(time_limit)
    settings = native.settings()
    if log is None:
        log = settings.log
    export.offer_export(model, backend)
    hint = hint if hint is not None else model.hint
    if backend == "cpsat":
        # imported here: ortools (and the pandas it imports) cost a second that building a problem to
        # execute a plan does not need
        from cepopt.formulations.cpsat import solve_model_cpsat

        return solve_model_cpsat(model, time_limit=time_limit, seed=seed, workers=workers, lp_heavy=lp_heavy,
                                 extra=options, hint=hint, log=log)
    return solve_model_milp(model, backend=backend, time_limit=time_limit, seed=seed, rel_gap=rel_gap,
                            feas_tol=feas_tol, threads=threads, options=options, hint=hint, log=log)




def write(model: Model, path: str | os.PathLike, backend: str | None = None) -> str:
    """Write ``model`` to ``path``: ``.mps`` (free MPS), ``.lp`` (CPLEX LP) or ``.pbtxt``/``.txt`` (the proto in
    text: CP-SAT's CpModelProto for ``backend="cpsat"``, else MathOpt's ModelProto). Returns the format."""
    return export.write_model(model, path, backend)
