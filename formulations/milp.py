"""Solve a MILP written once in PuLP with a backend chosen by name.

Models are written in PuLP (``pulp.LpProblem``): it has the expression algebra and ships CBC. The
``highs`` and ``scip`` backends translate the PuLP model into an OR-Tools MathOpt model and solve it
in-process (ortools carries both solvers; DESIGN.md explains why highspy must never be installed beside
it). ``cbc`` runs PuLP's bundled CBC binary.

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
from dataclasses import dataclass, field

import pulp

from cepopt.errors import CepoptError

__all__ = ["BACKENDS", "MilpResult", "solve_milp"]

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


def solve_milp(prob: pulp.LpProblem, *, backend: str = "highs", time_limit: float | None = None,
               seed: int = 0, rel_gap: float = 0.0, feas_tol: float | None = None,
               threads: int = 1) -> MilpResult:
    """Solve ``prob`` with ``backend`` ("highs", "scip" or "cbc").

    ``rel_gap`` is the relative optimality gap at which the solver may stop (0: prove the optimum).
    ``feas_tol`` tightens primal feasibility (HiGHS needs 1e-9 for tangent-cut loops). The status is
    optimal / feasible (stopped with a solution) / timeout (no solution) / infeasible / error (the
    solver itself failed; ``message`` says how).
    """
    if backend not in BACKENDS:
        raise CepoptError(f"unknown MILP backend {backend!r} (use one of {', '.join(BACKENDS)})")
    start = time.perf_counter()
    if backend == "cbc":
        result = _solve_cbc(prob, time_limit, seed, rel_gap, threads)
    else:
        result = _solve_mathopt(prob, backend, time_limit, seed, rel_gap, feas_tol, threads)
    result.wall_time = time.perf_counter() - start
    result.backend = backend
    return result


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


def _solve_mathopt(prob, backend, time_limit, seed, rel_gap, feas_tol, threads) -> MilpResult:
    from datetime import timedelta

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

    params = mathopt.SolveParameters(random_seed=int(seed) % 2**31, relative_gap_tolerance=rel_gap,
                                     absolute_gap_tolerance=1e-9 if rel_gap == 0 else None)
    if backend == "scip":
        params.threads = threads  # HiGHS rejects a thread count through MathOpt
    if time_limit is not None:
        params.time_limit = timedelta(seconds=float(time_limit))
    if backend == "highs":
        from ortools.math_opt.solvers import highs_pb2

        options = highs_pb2.HighsOptionsProto()
        if feas_tol is not None:
            options.double_options["primal_feasibility_tolerance"] = feas_tol
            options.double_options["mip_feasibility_tolerance"] = feas_tol
        params.highs = options
        solver_type = mathopt.SolverType.HIGHS
    else:
        if feas_tol is not None:
            params.gscip.real_params["numerics/feastol"] = feas_tol
        solver_type = mathopt.SolverType.GSCIP
    try:
        result = mathopt.solve(model, solver_type, params=params)
    except Exception as exc:  # noqa: BLE001 - seen: HiGHS "kError [INTERNAL]", which OR-Tools re-raises badly
        return MilpResult("error", None, None, message=f"{backend} failed: {exc}"[:300])
    reason = result.termination.reason
    has_solution = result.has_primal_feasible_solution()
    values = {}
    if has_solution:
        values = {name: float(result.variable_values(var)) for name, var in variables.items()}
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
