"""The Hamlet family's driver: compile a Hamlet plan (a policy per burst, or a replayed optimal plan;
GRETA for the non-shared plan) for the engines (executor/engines.py).

:func:`compile` is :func:`cepopt.executor.trend_exec.compile_hamlet`: partition classes by the sharing
classes' GROUP-BY and equivalence attributes, window blocks. After the run the compiled plan derives
the operation counters from the summed metrics (Eq. 7's unit) and, for a replayed plan, checks that
every burst it met was one the plan decided.
"""

from __future__ import annotations

__all__ = ["compile", "finish"]


def compile(problem, plan, **knobs):  # noqa: A001
    from cepopt.executor.trend_exec import compile_hamlet

    return compile_hamlet(problem, plan, **knobs)


def finish(compiled, metrics: dict) -> dict:
    metrics = compiled.finish(metrics)
    policy = getattr(compiled, "policy", None)
    if policy is not None:
        metrics["policy"] = policy.name
    return metrics
