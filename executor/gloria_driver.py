"""The Gloria family's driver: compile a Gloria plan (None: unshared) for the engines.

:func:`compile` is :func:`cepopt.executor.trend_exec.compile_gloria` (windows of one slide and different
lengths share a class). ``operations`` = propagations (Eqs. 2-3) + evaluations (Eq. 4) measured on the
events.
"""

from __future__ import annotations

__all__ = ["OPERATIONS", "compile", "finish", "predict"]

OPERATIONS = "propagations + evaluations (Eqs. 2-4)"


def compile(problem, plan, **knobs):  # noqa: A001
    from cepopt.executor.trend_exec import compile_gloria

    return compile_gloria(problem, plan, **knobs)


def finish(compiled, metrics: dict) -> dict:
    return compiled.finish(metrics)


def predict(problem, plan) -> float | None:
    """The Gloria cost model's value of the plan (statistics-based, Eqs. 2-4)."""
    if plan is None:
        return None
    from cepopt.gloria.cost import evaluate

    return float(evaluate(problem, plan))
