"""The Gloria family's driver: compile a Gloria plan (None: unshared) for the engines.

:func:`compile` is :func:`cepopt.executor.trend_exec.compile_gloria` (windows of one slide and different
lengths share a class). ``operations`` = propagations (Eqs. 2-3) + evaluations (Eq. 4) measured on the
events.
"""

from __future__ import annotations

__all__ = ["compile", "finish"]


def compile(problem, plan, *, windows_per_block: int | None = 64):  # noqa: A001
    """The compiled plan; ``windows_per_block``: K, the windows one partition computes (None: one
    partition per key)."""
    from cepopt.executor.trend_exec import compile_gloria

    return compile_gloria(problem, plan, windows_per_block=windows_per_block)


def finish(compiled, metrics: dict) -> dict:
    return compiled.finish(metrics)
