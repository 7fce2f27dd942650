"""The Hamlet family's driver: compile a Hamlet plan (a policy per burst, or a replayed optimal plan;
GRETA for the non-shared plan) for the engines (executor/engines.py).

:func:`compile` is :func:`cepopt.executor.trend_exec.compile_hamlet`: partition classes by the sharing
classes' GROUP-BY and equivalence attributes, window blocks. After the run the compiled plan derives
the operation counters from the summed metrics (Eq. 7's unit) and, for a replayed plan, checks that
every burst it met was one the plan decided.
"""

from __future__ import annotations

__all__ = ["compile", "finish"]


def compile(problem, plan, *, windows_per_block: int | None = 64):  # noqa: A001
    """The compiled plan; ``windows_per_block``: K, the windows one partition computes (None: one
    partition per key)."""
    from cepopt.executor.trend_exec import compile_hamlet

    return compile_hamlet(problem, plan, windows_per_block=windows_per_block)


def finish(compiled, metrics: dict) -> dict:
    return compiled.finish(metrics)
