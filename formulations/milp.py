"""MILP backends of the one model container: MathOpt (HiGHS, SCIP) in process, PuLP (CBC and the rest).

:func:`solve_model_milp` solves a :class:`~cepopt.formulations.model.Model` (through
:func:`cepopt.formulations.model.solve`):

* ``highs`` and ``scip``: the model goes to OR-Tools MathOpt as a ``ModelProto`` filled from flat lists
  and is solved by MathOpt's core solver, without per-term Python objects (measured: 1.5-2 s of 3-10 s
  for a 20k-row Sharon model went to PuLP's and MathOpt's expressions). ortools ships both solvers;
  DESIGN.md explains why highspy must never be installed beside it.
  A large HiGHS model with a time limit is solved in a child process that is killed just after the
  limit (:data:`CHILD_NONZEROS`, :mod:`cepopt.formulations.mathopt_child`): HiGHS computes the root's
  analytic centre (an interior-point solve of up to 200 iterations) without looking at its clock and
  ignores MathOpt's interrupter. A killed solve keeps the last bound HiGHS logged and its last improving
  solution ("feasible"; "timeout" when it had none).
* ``cbc`` (PuLP's bundled binary) and every other PuLP backend by name: ``gurobi``, ``cplex``, ``glpk``,
  ``xpress``, ``mosek``, ``copt``, ... (:data:`PULP_ALIASES`) or ``pulp:NAME`` with a name of
  ``pulp.listSolvers()``; one that is not installed is a CepoptError naming what is. PuLP's in-process
  HiGHS is refused (it loads highspy); its ``HiGHS_CMD`` binary is fine.

HiGHS and SCIP take an objective coefficient of 1e20 as infinite (measured: status "error"; CBC solves):
an objective whose coefficients sum beyond :data:`~cepopt.formulations.scaling.MAX_OBJECTIVE` is solved
multiplied by a power of two below 1 (exact in floating point, :func:`~cepopt.formulations.scaling.milp_scale`),
and its value and bound are multiplied back. Floating-point solvers work to tolerances (about 1e-6): the
bound they report is widened by :data:`BOUND_TOLERANCE` of itself, and "optimal" stands only when that
bound proves the exact objective of the rounded solution (:func:`~cepopt.formulations.model.certify`:
within one unit for integer objectives); otherwise the status is "feasible".

:func:`solve_milp` keeps the older entry point for models written in PuLP (the join-order and Gloria
formulations): the PuLP problem is read into a Model and solved the same way.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cepopt.clock import now
from cepopt.errors import CepoptError
from cepopt.formulations.convert import from_pulp, mathopt_proto, to_pulp
from cepopt.formulations.export import offer_export
from cepopt.formulations.linear import Model, ModelResult, certify, unit_of
from cepopt.formulations.native import check_seed, check_time_limit, native_output_to_stderr, settings, solver_reason
from cepopt.formulations.scaling import coefficient_total, milp_scale, require_resolution

__all__ = ["BACKENDS", "BOUND_TOLERANCE", "MilpResult", "PULP_ALIASES", "from_pulp", "mathopt_proto",
           "solve_milp", "solve_model_milp", "to_pulp"]

#: the in-process MILP backends (and PuLP's bundled CBC); PuLP's other solvers by name (PULP_ALIASES)
BACKENDS = ("highs", "scip", "cbc")

#: PuLP solvers by short name: the first available of the listed PuLP classes is used
PULP_ALIASES: dict[str, tuple[str, ...]] = {
    "gurobi": ("GUROBI", "GUROBI_CMD"), "cplex": ("CPLEX_PY", "CPLEX_CMD"), "glpk": ("GLPK_CMD", "PYGLPK"),
    "xpress": ("XPRESS_PY", "XPRESS"), "mosek": ("MOSEK",), "copt": ("COPT", "COPT_DLL", "COPT_CMD"),
    "coin": ("COIN_CMD",), "mipcl": ("MIPCL_CMD",), "cuopt": ("CUOPT",), "scip-cmd": ("SCIP_CMD", "FSCIP_CMD"),
    "highs-cmd": ("HiGHS_CMD",), "choco": ("CHOCO_CMD",),
}

#: relative width added to a floating-point solver's bound (its feasibility and optimality tolerances)
BOUND_TOLERANCE = 1e-7


@dataclass
class MilpResult:
    status: str
    objective: float | None
    bound: float | None
    values: dict[str, float] = field(default_factory=dict)
    wall_time: float = 0.0
    backend: str = ""
    message: str = ""

    def value(self, var) -> float:
        return self.values.get(var.name, 0.0)


# ------------------------------------------------------------------------------------ solving
def solve_model_milp(model, *, backend: str, time_limit: float | None = None, seed: int = 0, rel_gap: float = 0.0,
                     feas_tol: float | None = None, threads: int = 1, options: Mapping | None = None,
                     hint: Sequence | None = None, log: bool = False, prove: bool = True):
    """Solve a Model with a MILP backend (see the module doc); a :class:`~cepopt.formulations.model.ModelResult`.
    ``prove=False`` keeps the solver's own "optimal" (for callers that judge its tolerances themselves)."""
    seed = check_seed(seed, 0, 2**31 - 1, solver=backend)  # HiGHS refuses negative seeds
    kind = _backend_kind(backend)
    factor = milp_scale(coefficient_total([c for c in model.objective if c]))
    start = now()
    if kind == "mathopt":
        out = _solve_mathopt(model, backend, factor, time_limit, seed, rel_gap, feas_tol, threads,
                             dict(options or {}), hint, log)
    else:
        out = _solve_pulp(model, backend, factor, time_limit, seed, rel_gap, threads, log)
    out.backend = backend
    out.stats.update(model.stats(), objective_factor=factor)
    if out.status == "error" and options:  # the options are the usual suspects: name them
        out.message += f" (solver options given: {', '.join(sorted(options))})"
    _finish(model, out, prove)
    out.wall_time = now() - start
    return out


def _backend_kind(backend: str) -> str:
    if backend in ("highs", "scip"):
        return "mathopt"
    if backend == "cbc" or backend in PULP_ALIASES or backend.lower().startswith("pulp:"):
        return "pulp"
    raise CepoptError(f"unknown MILP backend {backend!r} (use one of {', '.join(BACKENDS)}, a PuLP solver "
                      f"({', '.join(sorted(PULP_ALIASES))}) or pulp:NAME)")


def _finish(model, out, prove: bool) -> None:
    """Round integer variables, take the exact objective, widen the bound, and keep "optimal" only
    when it is proven for the exact objective."""
    if out.x is not None:
        x = [round(v) if integer else v for v, integer in zip(out.x, model.integer, strict=True)]
        if all(model.integer) and model.violation(x) > 1e-9:
            out.status, out.x = "error", None
            out.message = f"{out.backend}: the solution, rounded to integers, violates the model"
            return
        out.x = x
        out.objective = model.value(x)
    if out.status == "optimal":
        if out.x is None or prove and not certify(out.objective, out.bound, unit_of(model), model.sense):
            out.status = "feasible"
            out.message = (out.message + "; " if out.message else "") + (
                f"{out.backend} stopped as optimal within its floating-point tolerances; not proven for the "
                "exact objective")


def _param_value(key: str, value, target, scip: bool) -> None:
    """Typed HiGHS (``*_options``) / gSCIP (``*_params``) option maps."""
    kind = ("bool" if isinstance(value, bool) else "int" if isinstance(value, int)
            else ("real" if scip else "double") if isinstance(value, float) else "string")
    getattr(target, kind + ("_params" if scip else "_options"))[key] = value if kind != "string" else str(value)


def _mathopt_parameters(backend, time_limit, seed, rel_gap, feas_tol, threads, options, log):
    from datetime import timedelta

    from ortools.math_opt import parameters_pb2
    from ortools.math_opt.solvers import highs_pb2
    from ortools.math_opt.solvers.gscip import gscip_pb2

    params = parameters_pb2.SolveParametersProto(random_seed=seed, relative_gap_tolerance=rel_gap,
                                                 enable_output=bool(log))
    if rel_gap == 0:
        params.absolute_gap_tolerance = 1e-9
    if time_limit is not None:
        params.time_limit.FromTimedelta(timedelta(seconds=float(time_limit)))
    if backend == "highs":
        hopts = highs_pb2.HighsOptionsProto()
        if feas_tol is not None:
            hopts.double_options["primal_feasibility_tolerance"] = feas_tol
            hopts.double_options["mip_feasibility_tolerance"] = feas_tol
        for key, value in options.items():
            _param_value(key, value, hopts, scip=False)
        params.highs.CopyFrom(hopts)
        return params, parameters_pb2.SOLVER_TYPE_HIGHS
    params.threads = threads  # HiGHS rejects a thread count through MathOpt
    gscip = gscip_pb2.GScipParameters()
    if feas_tol is not None:
        gscip.real_params["numerics/feastol"] = feas_tol
    for key, value in options.items():
        _param_value(key, value, gscip, scip=True)
    params.gscip.CopyFrom(gscip)
    return params, parameters_pb2.SOLVER_TYPE_GSCIP


#: HiGHS models with at least this many nonzeros and a time limit are solved in a child process that is
#: killed :data:`CHILD_GRACE` seconds after the limit (:mod:`cepopt.formulations.mathopt_child`): HiGHS
#: ignores MathOpt's interrupter and overran its limit by 30-40 s on 20,000-query Sharon models (its root
#: analytic-centre computation has no time limit and no option turns it off). Smaller
#: models stay in process (the child costs about 0.2 s of CPU to start; no overrun was seen on them).
CHILD_NONZEROS = 100_000
CHILD_GRACE = 1.0


def _widened_bound(out: ModelResult, model, dual: float, margin: float, factor: float) -> None:
    """The solver's dual bound, widened by ``margin`` away from the optimum: the solver's tolerances hold
    in its (scaled) units, so widen there, then scale back."""
    out.bound_margin = margin / factor
    out.bound = (dual + margin if model.sense == "max" else dual - margin) / factor


def _killed_result(model, child, backend: str, factor: float) -> ModelResult:
    """A child killed past its deadline: the last dual bound HiGHS logged (widened for the log's rounding
    too) and its last improving solution (a file read back: kept only if it satisfies the model)."""
    from cepopt.formulations.mathopt_child import LOG_BOUND_SLACK

    out = ModelResult("timeout", backend=backend, stats={"solver_process_cpu_s": child.cpu_s},
                      message=f"{backend} ran {CHILD_GRACE:g} s past its time limit and was stopped")
    if child.log_bound is not None:
        dual = child.log_bound
        _widened_bound(out, model, dual, (BOUND_TOLERANCE + LOG_BOUND_SLACK) * max(1.0, abs(dual)) + 1e-9, factor)
    if child.incumbent is not None and len(child.incumbent) == len(model.names):
        x = [round(v) if integer else v for v, integer in zip(child.incumbent, model.integer, strict=True)]
        if model.violation(x) <= 1e-6:
            out.x, out.status = child.incumbent, "feasible"
    return out


def _solve_mathopt(model, backend, factor, time_limit, seed, rel_gap, feas_tol, threads, options, hint, log):
    from ortools.math_opt import model_parameters_pb2, result_pb2
    from ortools.math_opt.core.python import solver as core

    started = now()
    proto, _ = mathopt_proto(model, factor)
    if time_limit is not None:  # the limit covers writing the proto
        time_limit = time_limit - (now() - started)
        if time_limit <= 0:
            return ModelResult("timeout", backend=backend,
                               message=f"time limit reached while writing the {backend} model")
    try:
        params, solver_type = _mathopt_parameters(backend, time_limit, seed, rel_gap, feas_tol, threads, options, log)
    except (ValueError, TypeError) as exc:
        return ModelResult("error", message=f"{backend} failed: bad option ({exc})"[:300])
    model_params = model_parameters_pb2.ModelSolveParametersProto()
    if hint is not None and backend in ("scip", "highs"):
        h = model_params.solution_hints.add()
        h.variable_values.ids.extend(range(len(hint)))
        h.variable_values.values.extend(float(v) for v in hint)
    from ortools.math_opt import callback_pb2, parameters_pb2

    child_cpu = None
    if backend == "highs" and time_limit is not None and len(proto.linear_constraint_matrix.row_ids) >= CHILD_NONZEROS:
        from cepopt.formulations.mathopt_child import solve_in_child

        child = solve_in_child(proto, solver_type, params, model_params, time.time() + time_limit, CHILD_GRACE,
                               echo=bool(log))
        if child.killed:
            return _killed_result(model, child, backend, factor)
        if child.result is None:
            return ModelResult("error", message=f"{backend} failed: {child.error}"[:300])
        res, child_cpu = child.result, child.cpu_s
    else:
        try:
            with native_output_to_stderr():
                res = core.solve(proto, solver_type, parameters_pb2.SolverInitializerProto(), params,
                                 model_params, None, callback_pb2.CallbackRegistrationProto(), None, None)
        except Exception as exc:  # noqa: BLE001 - seen: HiGHS "kError [INTERNAL]", which OR-Tools re-raises badly
            return ModelResult("error", message=f"{backend} failed: {solver_reason(exc)}"[:300])
    T = result_pb2
    reason = res.termination.reason
    out = ModelResult("error")
    sol = next((s.primal_solution for s in res.solutions if s.HasField("primal_solution")
                and s.primal_solution.feasibility_status == 2), None)  # SOLUTION_STATUS_FEASIBLE
    if sol is not None:
        x = [0.0] * len(model.names)
        for i, v in zip(sol.variable_values.ids, sol.variable_values.values, strict=True):
            x[i] = v
        out.x = x
        out.solver_objective = sol.objective_value / factor
    dual = res.termination.objective_bounds.dual_bound
    if math.isfinite(dual):
        margin = BOUND_TOLERANCE * max(1.0, abs(dual)) + (1e-9 if rel_gap == 0 else rel_gap * abs(dual))
        _widened_bound(out, model, dual, margin, factor)
    if reason == T.TERMINATION_REASON_OPTIMAL:
        out.status = "optimal"
    elif reason in (T.TERMINATION_REASON_INFEASIBLE, T.TERMINATION_REASON_INFEASIBLE_OR_UNBOUNDED):
        out.status, out.bound = "infeasible", None
    elif sol is not None:
        out.status = "feasible"
    elif reason in (T.TERMINATION_REASON_NO_SOLUTION_FOUND, T.TERMINATION_REASON_FEASIBLE):
        out.status = "timeout"
    else:
        out.message = f"{backend}: {res.termination.detail or result_pb2.TerminationReasonProto.Name(reason)}"[:300]
    if child_cpu is not None:
        out.stats["solver_process_cpu_s"] = child_cpu
    if out.solver_objective is not None and factor != 1:
        # the solvers' tolerances (about 1e-6 per term) hold for the scaled objective
        out.stats["objective_resolution"] = len(model.objective) * 1e-6 / factor
    return out


def _pulp_solver(backend: str, *, msg: bool, time_limit, rel_gap, threads, seed):
    import pulp

    if backend == "cbc":
        options = [f"randomSeed {seed % 2**31}", f"randomCbcSeed {seed % 2**31 + 1}"]
        # Passing threads=1 makes this CBC build run to the time limit on trivial models: leave it unset.
        return pulp.PULP_CBC_CMD(msg=msg, timeLimit=time_limit, gapRel=rel_gap,
                                 threads=threads if threads > 1 else None, options=options)
    if backend.lower().startswith("pulp:"):
        wanted = backend.split(":", 1)[1]
        names = tuple(n for n in pulp.listSolvers() if n.lower() == wanted.lower())
        if not names:
            raise CepoptError(f"unknown PuLP solver {wanted!r} (PuLP knows {', '.join(pulp.listSolvers())})")
    else:
        names = PULP_ALIASES[backend]
    if any(n == "HiGHS" for n in names):
        raise CepoptError("PuLP's in-process HiGHS loads highspy, which cannot sit beside OR-Tools' HiGHS "
                          "(DESIGN.md): use backend=highs (MathOpt) or highs-cmd")
    for name in names:
        solver = pulp.getSolver(name, msg=msg, timeLimit=time_limit)
        if solver.available():
            return solver
    available = ", ".join(pulp.listSolvers(onlyAvailable=True))
    raise CepoptError(f"MILP backend {backend!r} (PuLP {' / '.join(names)}) is not installed or not licensed "
                      f"here; PuLP finds: {available or 'none'}; in-process: highs, scip")


def _solve_pulp(model, backend, factor, time_limit, seed, rel_gap, threads, log):
    import pulp

    solver = _pulp_solver(backend, msg=bool(log), time_limit=time_limit, rel_gap=rel_gap, threads=threads,
                          seed=seed)
    prob, xs = to_pulp(model, factor)
    try:
        with native_output_to_stderr():
            code = prob.solve(solver)
    except pulp.PulpSolverError as exc:
        return ModelResult("error", message=f"{backend} failed: {exc}"[:300])
    sol_status = prob.sol_status
    out = ModelResult("error")
    if sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        out.x = [v.varValue if v.varValue is not None else 0.0 for v in xs]
        out.solver_objective = float(pulp.value(prob.objective) or 0.0) / factor
    if code == pulp.LpStatusOptimal and sol_status == pulp.LpSolutionOptimal:
        out.status = "optimal"  # CBC through PuLP does not report its bound: the optimum is its own,
        scaled = out.solver_objective * factor  # widened by the tolerances, in the solver's units
        margin = BOUND_TOLERANCE * max(1.0, abs(scaled)) + (1e-9 if rel_gap == 0 else rel_gap * abs(scaled))
        out.bound_margin = margin / factor
        out.bound = (scaled + margin if model.sense == "max" else scaled - margin) / factor
    elif sol_status == pulp.LpSolutionIntegerFeasible:
        out.status = "feasible"
    elif code == pulp.LpStatusInfeasible:
        out.status = "infeasible"
    elif sol_status == pulp.LpSolutionNoSolutionFound:
        out.status = "timeout"
    return out


# ------------------------------------------------------------------------------------ the PuLP entry point
def solve_milp(prob, *, backend: str = "highs", time_limit: float | None = None, seed: int = 0,
               rel_gap: float = 0.0, feas_tol: float | None = None, threads: int = 1,
               options: dict | None = None) -> MilpResult:
    """Solve ``prob`` (a PuLP problem or a :class:`~cepopt.formulations.model.Model`) with ``backend``.

    ``rel_gap`` is the relative optimality gap at which the solver may stop (0: prove the optimum).
    ``feas_tol`` tightens primal feasibility (HiGHS needs 1e-9 for tangent-cut loops). The status is
    optimal / feasible (stopped with a solution) / timeout (no solution) / infeasible / error (the
    solver itself failed; ``message`` says how). ``options`` are solver-specific settings passed to
    HiGHS (e.g. ``{"presolve": "off"}``) or SCIP (e.g. ``{"presolving/maxrounds": 0}``); CBC ignores them.
    Values are keyed by variable name. The status is the solver's: the model's objective may be
    fractional, so the exact-unit proof of :func:`solve_model_milp` is left to the caller here; an
    objective scaled down too far for the solver's tolerances is refused (CepoptError).
    """
    model = prob if isinstance(prob, Model) else from_pulp(prob)
    check_time_limit(time_limit)
    offer_export(model, backend)
    factor = milp_scale(coefficient_total([c for c in model.objective if c]))
    res = solve_model_milp(model, backend=backend, time_limit=time_limit, seed=seed, rel_gap=rel_gap,
                           feas_tol=feas_tol, threads=threads, options=options, log=settings().log,
                           prove=False)
    bound = res.bound
    if bound is not None:  # the raw solver bound, as before
        bound = bound - res.bound_margin if model.sense == "max" else bound + res.bound_margin
    status = res.status
    objective = None if res.objective is None else float(res.objective)
    if res.x is None:
        objective = None
    elif factor != 1 and objective is not None:
        require_resolution(len(model.objective) * 1e-6 / factor, objective, backend)
    values = {} if res.x is None else {n: float(v) for n, v in zip(model.names, res.x, strict=True)}
    return MilpResult(status, objective, bound, values, res.wall_time, backend, res.message)
