"""Solve a MILP written once in PuLP with a backend chosen by name.

Models are written in PuLP (``pulp.LpProblem``): it has the expression algebra and ships CBC. The
``highs`` and ``scip`` backends translate the PuLP model into an OR-Tools MathOpt model and solve it
in-process (ortools carries both solvers; DESIGN.md explains why highspy must never be installed beside
it). ``cbc`` runs PuLP's bundled CBC binary.

A model with thousands of rows can also be handed over in matrix form (:class:`MatrixMilp`): the
MathOpt backends then get a ``ModelProto`` filled from flat lists, without PuLP's and MathOpt's
per-term Python expressions (measured: 1.5-2 s of 3-10 s for a 20k-row Sharon model went to those
expressions); ``cbc`` turns it into a PuLP problem, so there is still one model and one solve path.

HiGHS and SCIP take an objective coefficient of 1e20 as infinite (measured: status "error"; CBC solves):
an objective whose coefficients sum beyond :data:`~cepopt.formulations.scaling.MAX_OBJECTIVE` is solved
multiplied by a power of two below 1 (exact in floating point, :func:`~cepopt.formulations.scaling.milp_scale`),
and its value and bound are multiplied back. The solvers' tolerances (about 1e-6) then apply to the scaled
objective: an objective they cannot resolve is refused (CepoptError).

>>> import pulp
>>> prob = pulp.LpProblem("tiny", pulp.LpMaximize)
>>> x = pulp.LpVariable("x", 0, 3, cat="Integer"); y = pulp.LpVariable("y", 0, 1, cat="Binary")
>>> prob += 2 * x + 3 * y
>>> prob += x + 2 * y <= 4
>>> r = solve_milp(prob, backend="highs")
>>> r.status, r.objective, r.values["x"], r.values["y"]
('optimal', 7.0, 2.0, 1.0)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import pulp

from cepopt.errors import CepoptError
from cepopt.formulations.scaling import coefficient_total, milp_scale, require_resolution

__all__ = ["BACKENDS", "MatrixMilp", "MilpResult", "solve_milp"]

BACKENDS = ("highs", "scip", "cbc")


@dataclass
class MilpResult:
    status: str
    objective: float | None
    bound: float | None
    values: dict[str, float] = field(default_factory=dict)
    wall_time: float = 0.0
    backend: str = ""
    message: str = ""

    def value(self, var: pulp.LpVariable) -> float:
        return self.values.get(var.name, 0.0)


@dataclass
class MatrixMilp:
    """A MILP in matrix form: variables ``names`` with bounds [lb, ub] (integer where ``integer``),
    objective coefficients, and rows ``(columns, coefficients, lower, upper)`` (None = unbounded)."""

    names: list[str]
    objective: list[float]
    rows: list[tuple[list[int], list[float], float | None, float | None]]
    maximize: bool = True
    lb: list[float] | None = None  # default 0
    ub: list[float] | None = None  # default 1
    integer: list[bool] | None = None  # default all integer
    name: str = "cepopt"

    def to_pulp(self) -> pulp.LpProblem:
        prob = pulp.LpProblem(self.name, pulp.LpMaximize if self.maximize else pulp.LpMinimize)
        n = len(self.names)
        lb, ub = self.lb or [0.0] * n, self.ub or [1.0] * n
        integer = self.integer or [True] * n
        xs = [pulp.LpVariable(nm, lb[i], ub[i], cat=pulp.LpInteger if integer[i] else pulp.LpContinuous)
              for i, nm in enumerate(self.names)]
        prob += pulp.LpAffineExpression([(xs[i], float(c)) for i, c in enumerate(self.objective) if c])
        for r, (cols, coefs, lo, up) in enumerate(self.rows):
            expr = pulp.LpAffineExpression(list(zip((xs[i] for i in cols), coefs, strict=True)))
            if lo is not None and up is not None and lo == up:
                prob += expr == up, f"r{r}"
                continue
            if up is not None:
                prob += expr <= up, f"r{r}"
            if lo is not None:
                prob += expr >= lo, f"r{r}_lo"
        return prob


def solve_milp(prob: pulp.LpProblem | MatrixMilp, *, backend: str = "highs", time_limit: float | None = None,
               seed: int = 0, rel_gap: float = 0.0, feas_tol: float | None = None,
               threads: int = 1, options: dict | None = None) -> MilpResult:
    """Solve ``prob`` (a PuLP problem or a :class:`MatrixMilp`) with ``backend`` ("highs", "scip" or "cbc").

    ``rel_gap`` is the relative optimality gap at which the solver may stop (0: prove the optimum).
    ``feas_tol`` tightens primal feasibility (HiGHS needs 1e-9 for tangent-cut loops). The status is
    optimal / feasible (stopped with a solution) / timeout (no solution) / infeasible / error (the
    solver itself failed; ``message`` says how). ``options`` are solver-specific settings passed to
    HiGHS (e.g. ``{"presolve": "off"}``) or SCIP (e.g. ``{"presolving/maxrounds": 0}``); CBC ignores them.
    Values of a :class:`MatrixMilp` are keyed by its ``names``.
    """
    if backend not in BACKENDS:
        raise CepoptError(f"unknown MILP backend {backend!r} (use one of {', '.join(BACKENDS)})")
    coefs = _objective_coefs(prob)
    factor = milp_scale(coefficient_total(coefs))
    if factor != 1:
        prob = _scale_objective(prob, factor)
    start = time.perf_counter()
    if backend == "cbc":
        result = _solve_cbc(prob.to_pulp() if isinstance(prob, MatrixMilp) else prob, time_limit, seed, rel_gap,
                            threads)
    else:
        result = _solve_mathopt(prob, backend, time_limit, seed, rel_gap, feas_tol, threads, options or {})
    result.wall_time = time.perf_counter() - start
    result.backend = backend
    if factor != 1:
        result.objective, result.bound = (None if v is None else v / factor for v in (result.objective, result.bound))
        if result.objective is not None:
            # the solvers' tolerances (about 1e-6 per term) hold for the scaled objective
            require_resolution(len(coefs) * 1e-6 / factor, result.objective, backend)
    if result.status == "error" and options:  # the options are the usual suspects: name them
        result.message += f" (solver options given: {', '.join(sorted(options))})"
    return result


def _objective_coefs(prob: pulp.LpProblem | MatrixMilp) -> list:
    if isinstance(prob, MatrixMilp):
        return [c for c in prob.objective if c]
    return [] if prob.objective is None else [*prob.objective.values(), prob.objective.constant]


def _scale_objective(prob: pulp.LpProblem | MatrixMilp, factor: float) -> pulp.LpProblem | MatrixMilp:
    """A copy of ``prob`` whose objective is multiplied by ``factor`` (the caller's model is left alone)."""
    if isinstance(prob, MatrixMilp):
        return replace(prob, objective=[float(c) * factor for c in prob.objective])
    scaled = prob.copy()
    scaled.objective = prob.objective * factor
    return scaled


def _solve_cbc(prob, time_limit, seed, rel_gap, threads) -> MilpResult:
    options = [f"randomSeed {int(seed) % 2**31}", f"randomCbcSeed {int(seed) % 2**31 + 1}"]
    # Passing threads=1 makes this CBC build run to the time limit on trivial models: leave it unset.
    solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, gapRel=rel_gap,
                               threads=threads if threads > 1 else None, options=options)
    code = prob.solve(solver)
    values = {v.name: (v.varValue if v.varValue is not None else 0.0) for v in prob.variables()}
    sol_status = prob.sol_status
    if code == pulp.LpStatusOptimal and sol_status == pulp.LpSolutionOptimal:
        objective = pulp.value(prob.objective)
        return MilpResult("optimal", _num(objective), _num(objective), values)
    if sol_status == pulp.LpSolutionIntegerFeasible:
        # CBC through PuLP does not report its best bound.
        return MilpResult("feasible", _num(pulp.value(prob.objective)), None, values)
    if code == pulp.LpStatusInfeasible:
        return MilpResult("infeasible", None, None)
    if sol_status == pulp.LpSolutionNoSolutionFound:
        return MilpResult("timeout", None, None)
    return MilpResult("error", None, None)


def _num(x) -> float | None:
    return None if x is None else float(x)


def _matrix_model(prob: MatrixMilp):
    """A MathOpt model filled from flat lists through its ModelProto (no per-term Python objects)."""
    from ortools.math_opt import model_pb2
    from ortools.math_opt.python import mathopt

    n = len(prob.names)
    proto = model_pb2.ModelProto(name=prob.name)
    proto.variables.ids.extend(range(n))
    proto.variables.lower_bounds.extend(prob.lb or [0.0] * n)
    proto.variables.upper_bounds.extend(prob.ub or [1.0] * n)
    proto.variables.integers.extend(prob.integer or [True] * n)
    proto.variables.names.extend(prob.names)
    proto.objective.maximize = prob.maximize
    nz = [(i, float(c)) for i, c in enumerate(prob.objective) if c]
    proto.objective.linear_coefficients.ids.extend(i for i, _ in nz)
    proto.objective.linear_coefficients.values.extend(c for _, c in nz)
    cons, mat = proto.linear_constraints, proto.linear_constraint_matrix
    for r, (cols, coefs, lo, up) in enumerate(prob.rows):
        cons.ids.append(r)
        cons.lower_bounds.append(-math.inf if lo is None else float(lo))
        cons.upper_bounds.append(math.inf if up is None else float(up))
        order = sorted(range(len(cols)), key=cols.__getitem__)  # the matrix must be sorted by column
        mat.row_ids.extend([r] * len(cols))
        mat.column_ids.extend(cols[k] for k in order)
        mat.coefficients.extend(float(coefs[k]) for k in order)
    model = mathopt.Model.from_model_proto(proto)
    return model, {nm: model.get_variable(i) for i, nm in enumerate(prob.names)}


def _solve_mathopt(prob, backend, time_limit, seed, rel_gap, feas_tol, threads, options) -> MilpResult:
    from datetime import timedelta

    from ortools.math_opt.python import mathopt

    if isinstance(prob, MatrixMilp):
        model, variables = _matrix_model(prob)
    else:
        model, variables = _pulp_model(prob)
    params = mathopt.SolveParameters(random_seed=int(seed) % 2**31, relative_gap_tolerance=rel_gap,
                                     absolute_gap_tolerance=1e-9 if rel_gap == 0 else None)
    if backend == "scip":
        params.threads = threads  # HiGHS rejects a thread count through MathOpt
    if time_limit is not None:
        params.time_limit = timedelta(seconds=float(time_limit))
    if backend == "highs":
        from ortools.math_opt.solvers import highs_pb2

        hopts = highs_pb2.HighsOptionsProto()
        if feas_tol is not None:
            hopts.double_options["primal_feasibility_tolerance"] = feas_tol
            hopts.double_options["mip_feasibility_tolerance"] = feas_tol
        for key, value in options.items():
            _set_option(hopts, key, value)
        params.highs = hopts
        solver_type = mathopt.SolverType.HIGHS
    else:
        if feas_tol is not None:
            params.gscip.real_params["numerics/feastol"] = feas_tol
        for key, value in options.items():
            _set_option(params.gscip, key, value, scip=True)
        solver_type = mathopt.SolverType.GSCIP
    return _run_mathopt(model, variables, solver_type, params, backend)


def _set_option(target, key: str, value, scip: bool = False) -> None:
    """Typed HiGHS (``*_options``) / gSCIP (``*_params``) option maps."""
    kind = ("bool" if isinstance(value, bool) else "int" if isinstance(value, int)
            else ("real" if scip else "double") if isinstance(value, float) else "string")
    getattr(target, kind + ("_params" if scip else "_options"))[key] = value if kind != "string" else str(value)


def _pulp_model(prob: pulp.LpProblem):
    from ortools.math_opt.python import mathopt

    model = mathopt.Model(name=prob.name or "cepopt")
    variables = {}
    for v in prob.variables():
        lb = -math.inf if v.lowBound is None else float(v.lowBound)
        ub = math.inf if v.upBound is None else float(v.upBound)
        variables[v.name] = model.add_variable(lb=lb, ub=ub, is_integer=v.cat == pulp.LpInteger, name=v.name)
    for name, con in prob.constraints.items():
        expr = sum(coef * variables[var.name] for var, coef in con.items())
        rhs = -con.constant
        if con.sense == pulp.LpConstraintLE:
            model.add_linear_constraint(expr <= rhs, name=name)
        elif con.sense == pulp.LpConstraintGE:
            model.add_linear_constraint(expr >= rhs, name=name)
        else:
            model.add_linear_constraint(expr == rhs, name=name)
    objective = prob.objective if prob.objective is not None else pulp.LpAffineExpression()
    obj_expr = sum(coef * variables[var.name] for var, coef in objective.items()) + objective.constant
    if prob.sense == pulp.LpMaximize:
        model.maximize(obj_expr)
    else:
        model.minimize(obj_expr)

    return model, variables


def _solver_reason(exc: BaseException) -> str:
    """The solver's reason for a failed MathOpt solve. OR-Tools 9.15 re-raises a solver's StatusNotOk as
    an unrelated AttributeError ('StatusNotOk' object has no attribute 'canonical_code') with the real
    error as its context: step past that wrapper only, not further down the chain (which may hold an
    exception the caller was handling)."""
    inner = exc.__cause__ or exc.__context__
    if isinstance(exc, AttributeError) and "canonical_code" in str(exc) and inner is not None:
        return str(inner)
    return str(exc)


def _run_mathopt(model, variables, solver_type, params, backend) -> MilpResult:
    from ortools.math_opt.python import mathopt

    try:
        result = mathopt.solve(model, solver_type, params=params)
    except Exception as exc:  # noqa: BLE001 - seen: HiGHS "kError [INTERNAL]", which OR-Tools re-raises badly
        return MilpResult("error", None, None, message=f"{backend} failed: {_solver_reason(exc)}"[:300])
    reason = result.termination.reason
    has_solution = result.has_primal_feasible_solution()
    values = {}
    if has_solution:
        found = result.variable_values()
        values = {name: float(found[var]) for name, var in variables.items()}
    bound = result.termination.objective_bounds.dual_bound
    bound = None if bound is None or not math.isfinite(bound) else float(bound)
    objective = float(result.objective_value()) if has_solution else None
    T = mathopt.TerminationReason
    if reason == T.OPTIMAL:
        return MilpResult("optimal", objective, objective if bound is None else bound, values)
    if reason in (T.INFEASIBLE,):
        return MilpResult("infeasible", None, None)
    if has_solution:
        return MilpResult("feasible", objective, bound, values)
    if reason in (T.NO_SOLUTION_FOUND, T.FEASIBLE):
        return MilpResult("timeout", None, bound)
    return MilpResult("error", None, None)
