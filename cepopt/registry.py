"""The method registry, solve() and compare().

Each family declares itself in a module named by the ``cepopt.families`` entry-point group (the
built-ins: ``cepopt/<family>/methods.py``): one :class:`Family` (how to build the problem from an
instance, the family's cost module that scores any plan, plan (de)serialisation) and a table of
methods registered with :func:`register`. Modules of the ``cepopt.methods`` group add methods to
existing families (:mod:`cepopt.entry_points`). A method is a plain function::

    fn(problem, *, time_limit: float | None, seed: int, **options) -> MethodResult | Plan

``solve`` and ``compare`` know methods only through this registry; ``cepopt methods`` prints it.
Family modules are imported on first use, method plug-ins with the first family.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cepopt import entry_points
from cepopt.clock import now
from cepopt.errors import CepoptError, MethodLimitError, ObjectiveMismatchError, UnknownNameError
from cepopt.params import check_seed, check_time_limit, read_options
from cepopt.solution import MethodResult, Objective, Solution, Solutions, gap

__all__ = [
    "Family", "Method", "MethodLimitError", "ObjectiveMismatchError", "compare",
    "families", "family", "method", "methods", "register", "solve",
]

@dataclass(frozen=True)
class Family:
    """A problem family.

    ``build(instance, **problem_options) -> problem``; ``cost`` is the family's cost module
    (``cepopt/<family>/cost.py``): ``evaluate(problem, plan)`` (the objective that re-scores every
    method's plan), ``predict(problem, plan)`` (the operations the executor should measure), the
    :class:`~cepopt.solution.Objective` ``OBJECTIVE`` and, optionally, ``objective_name(problem, plan)``
    when plans of one family are scored by different cost functions (join order: order vs tree).
    ``plan_to_json(plan) -> JSON value``; ``plan_from_json(problem, value) -> plan``.
    ``problem_options`` names the ``--param`` keys that shape the problem (for example Sharon's
    ``expand``); every other key goes to the method. ``baseline_plan(problem)`` is the plan without
    sharing (or the trivial order) that ``--plan nonshared`` executes.
    """

    name: str
    description: str
    build: Callable[..., Any]
    cost: Any
    plan_to_json: Callable[[Any], Any]
    plan_from_json: Callable[[Any, Any], Any]
    problem_options: frozenset[str] = frozenset()
    default_methods: tuple[str, ...] | None = None
    baseline_plan: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        missing = [a for a in ("evaluate", "predict", "OBJECTIVE") if not hasattr(self.cost, a)]
        if missing or not isinstance(self.cost.OBJECTIVE, Objective):
            raise TypeError(f"family {self.name}: its cost module lacks {', '.join(missing) or 'an Objective'}")

    @property
    def objective(self) -> Objective:
        return self.cost.OBJECTIVE

    @property
    def sense(self) -> str:
        return self.objective.sense

    # Looked up on the cost module at each call: the module is the one place of the cost model.
    def evaluate(self, problem: Any, plan: Any) -> float:
        """The objective of ``plan`` (``cost.evaluate``)."""
        return self.cost.evaluate(problem, plan)

    def predict(self, problem: Any, plan: Any) -> float:
        """The operations the executor should measure for ``plan`` (``cost.predict``)."""
        return self.cost.predict(problem, plan)

    def objective_name(self, problem: Any, plan: Any) -> str:
        """The cost function that scores ``plan`` (``cost.objective_name``, else the objective's name)."""
        named = getattr(self.cost, "objective_name", None)
        return self.objective.name if named is None else named(problem, plan)


@dataclass(frozen=True)
class Method:
    family: str
    name: str
    fn: Callable[..., Any]
    description: str
    exact: bool = False
    options: tuple[str, ...] = field(default=())


_METHODS: dict[str, dict[str, Method]] = {}
_FAMILIES: dict[str, Family] = {}


def register(family_name: str, name: str, description: str, *, exact: bool = False):
    """Decorator: register ``fn`` as method ``name`` of ``family_name`` with a one-line description."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = inspect.signature(fn).parameters
        options = tuple(p for p, spec in params.items()
                        if spec.kind == spec.KEYWORD_ONLY and p not in ("time_limit", "seed"))
        _METHODS.setdefault(family_name, {})[name] = Method(family_name, name, fn, description, exact, options)
        return fn

    return decorate


def declare(fam: Family) -> Family:
    """Called once by each family's methods module."""
    _FAMILIES[fam.name] = fam
    return fam


def families() -> tuple[str, ...]:
    """The registered families: the names of the ``cepopt.families`` entry points."""
    return entry_points.names("families")


_plugins_loaded = False


def _load_method_plugins() -> None:
    """Import every module of the ``cepopt.methods`` group once (they register methods)."""
    global _plugins_loaded
    if not _plugins_loaded:
        _plugins_loaded = True
        for ep in entry_points.entries("methods").values():
            ep.load()


def family(name: str) -> Family:
    """The Family ``name``, importing its module on first use."""
    if name not in _FAMILIES:
        declared = entry_points.load("families", name, "problem family")
        if isinstance(declared, Family):
            declare(declared)
        if name not in _FAMILIES:
            raise CepoptError(f"problem family {name!r}: its entry point "
                              f"{entry_points.entries('families')[name].value} declares no Family named {name!r}")
    _load_method_plugins()
    return _FAMILIES[name]


def methods(family_name: str) -> dict[str, Method]:
    family(family_name)
    return dict(_METHODS.get(family_name, {}))


def method(family_name: str, name: str) -> Method:
    table = methods(family_name)
    if name not in table:
        raise UnknownNameError(
            f"unknown method {name!r} for family {family_name!r} (known: {', '.join(table) or 'none'})")
    return table[name]


# solve() and compare() take parameters named `method` and `methods` (the public API); these aliases
# keep the registry lookups reachable inside them.
_method_entry = method
_method_table = methods


def _load(instance: Any):
    from cepopt.instance import Instance, load

    return instance if isinstance(instance, Instance) else load(instance)


def _split_params(fam: Family, params: Mapping[str, Any] | None) -> tuple[dict, dict]:
    params = dict(params or {})
    problem_params = {k: v for k, v in params.items() if k in fam.problem_options}
    method_params = {k: v for k, v in params.items() if k not in fam.problem_options}
    return problem_params, method_params


def build_problem(instance: Any, params: Mapping[str, Any] | None = None):
    """(Family, problem, method options) for an instance (path, bundled name or Instance)."""
    inst = _load(instance)
    fam = family(inst.problem)
    problem_params, method_params = _split_params(fam, params)
    return fam, fam.build(inst, **problem_params), method_params


def solve(instance: Any, method: str, time_limit: float | None = None, seed: int = 0,
          params: Mapping[str, Any] | None = None, *, problem: Any = None) -> Solution:
    """Solve ``instance`` with ``method`` and re-score its plan with the family's cost model.

    ``instance`` is an :class:`~cepopt.instance.Instance`, a path or a bundled instance name;
    ``params`` are method (and problem) options such as ``{"expand": False}``. A prebuilt ``problem``
    (from :func:`build_problem`) skips the build.
    """
    time_limit, seed = check_time_limit(time_limit), check_seed(seed)  # before any work
    inst = _load(instance)
    fam = family(inst.problem)
    problem_params, method_params = _split_params(fam, params)
    meth = _method_entry(fam.name, method)
    options = _method_options(meth, method_params)
    if problem is None:
        started = now()
        problem = fam.build(inst, **problem_params)
        if time_limit is not None and isinstance(time_limit, int | float) and time_limit > 0:
            # building the problem counts against the limit: the method gets what is left
            time_limit = max(time_limit - (now() - started), min(time_limit, 0.01))
    return _run(fam, problem, meth, time_limit, seed, options, inst.name)


def _method_options(meth: Method, options: Mapping[str, Any]) -> dict:
    """``options`` read as ``meth``'s signature declares them (checked before the problem is built)."""
    unknown = sorted(set(options) - set(meth.options))
    if unknown:
        known = ", ".join(meth.options) or "none"
        raise CepoptError(f"method {meth.name!r} has no option {unknown[0]!r} (options: {known})")
    return read_options(meth.fn, meth.options, options, f"method {meth.name!r}")


def _failed(fam: Family, meth: Method, elapsed: float, instance_name: str | None, message: str,
            status: str = "error", bound: float | None = None, stats: dict | None = None) -> Solution:
    """A solve without a plan: ``status`` (error, timeout or infeasible) and the reason."""
    return Solution(fam.name, meth.name, None, None, bound, status, None, elapsed, dict(stats or {}),
                    instance_name, fam.sense, message, objective_info=fam.objective)


def _run(fam: Family, problem: Any, meth: Method, time_limit: float | None, seed: int,
         options: dict, instance_name: str | None) -> Solution:
    start = now()
    try:
        result = meth.fn(problem, time_limit=time_limit, seed=seed, **options)
    except (MethodLimitError, MemoryError) as exc:
        # stats say which: a benchmark records a memory blow-up as such (numpy's says "Unable to allocate")
        return _failed(fam, meth, now() - start, instance_name, str(exc) or type(exc).__name__,
                       stats={"memory_error": True} if isinstance(exc, MemoryError) else None)
    elapsed = now() - start
    if not isinstance(result, MethodResult):
        result = MethodResult(plan=result, status="feasible")
    if result.plan is None:
        # No plan: a time-out or a proof of infeasibility says so; "optimal"/"feasible" without a plan is an error.
        status = result.status if result.status in ("timeout", "infeasible") else "error"
        reason = result.message or ("no plan within the time limit" if status == "timeout"
                                    else "the method returned no plan")
        return _failed(fam, meth, elapsed, instance_name, reason, status, result.bound, result.stats)
    objective = fam.evaluate(problem, result.plan)
    stats = dict(result.stats)
    if result.solver_objective is not None:
        stats["solver_objective"] = result.solver_objective
        tol = float(stats.get("objective_tolerance", 1e-6))
        scale = max(abs(objective), abs(result.solver_objective), 1.0)
        if abs(objective - result.solver_objective) > tol * scale:
            raise ObjectiveMismatchError(
                f"{fam.name}/{meth.name}: solver objective {result.solver_objective!r} but the cost model "
                f"gives {objective!r}")
    # A proven optimum is its own bound (the cost model's exact value), unless the proof closed a gap to
    # a tolerance: then the method's looser proven bound is what it showed, and that is reported.
    bound = result.bound
    if result.status == "optimal" and (bound is None or _tighter_or_equal(bound, objective, fam.sense)):
        bound = objective
    return Solution(fam.name, meth.name, result.plan, objective, bound, result.status,
                    gap(objective, bound, fam.sense), elapsed, stats, instance_name, fam.sense,
                    result.message, fam.plan_to_json(result.plan), fam.objective_name(problem, result.plan),
                    fam.objective)


def compare(instance: Any, methods: Iterable[str] | None = None, time_limit: float | None = None,
            seed: int = 0, params: Mapping[str, Any] | None = None) -> Solutions:
    """Solve one instance with several methods (default: the family's default list, else all).

    The problem is built once. A method that fails (a limit, no plan, or any exception such as
    :class:`ObjectiveMismatchError`) is reported with status "error" and its reason beside the others.
    """
    time_limit, seed = check_time_limit(time_limit), check_seed(seed)  # before any work
    inst = _load(instance)
    fam = family(inst.problem)
    table = _method_table(fam.name)
    names = list(methods) if methods is not None else list(fam.default_methods or table)
    if not names:
        raise CepoptError("compare: no method given")
    chosen = [_method_entry(fam.name, name) for name in names]
    problem_params, method_params = _split_params(fam, params)
    # Each method gets the keys it knows; a key that no compared method knows is a typo, not a no-op.
    known = sorted({o for meth in chosen for o in meth.options})
    unused = sorted(set(method_params) - set(known))
    if unused:
        raise CepoptError(f"no compared method has option {unused[0]!r} (their options: "
                          f"{', '.join(known) or 'none'})")
    runs = [(meth, _method_options(meth, {k: v for k, v in method_params.items() if k in meth.options}))
            for meth in chosen]
    problem = fam.build(inst, **problem_params)
    out = Solutions()
    for meth, options in runs:
        start = now()
        try:
            out.append(_run(fam, problem, meth, time_limit, seed, options, inst.name))
        except Exception as exc:  # noqa: BLE001 -- one failing method must not take the others down
            reason = str(exc) if isinstance(exc, CepoptError) else f"{type(exc).__name__}: {exc}"
            out.append(_failed(fam, meth, now() - start, inst.name, reason))
    return out


def is_close(a: float, b: float, rel: float = 1e-9) -> bool:
    """Objective equality for tests and cross-checks."""
    return math.isclose(a, b, rel_tol=rel, abs_tol=rel)


def _tighter_or_equal(bound: float, objective: float, sense: str) -> bool:
    """Whether a bound reported with an optimum is no looser than the optimum itself."""
    return bound <= objective if sense == "max" else bound >= objective
