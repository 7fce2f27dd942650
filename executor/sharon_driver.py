"""The Sharon family's driver: compile a sharing plan (or the Non-Shared plan) for the engines.

:func:`compile` is :func:`cepopt.executor.sharon_exec.compile_sharon` (partition classes by GROUP-BY and
equivalence attributes, window blocks); the engines (executor/engines.py) run it on Spark or in process.
The measured operations are the A-Seq updates and combines the kernels count, the quantity
``cepopt.sharon.cost.predict`` predicts.
"""

from __future__ import annotations

from cepopt.executor.sharon_exec import WINDOWS_PER_BLOCK, compile_sharon

__all__ = ["compile", "finish"]


def compile(problem, plan, *, windows_per_block: int | None = WINDOWS_PER_BLOCK,  # noqa: A001
            jit: bool | None = None):
    """The compiled plan (see :func:`compile_sharon`; ``jit`` as there); an invalid plan fails here, on the
    driver."""
    return compile_sharon(problem, plan, windows_per_block=windows_per_block, jit=jit)


def finish(compiled, metrics: dict) -> dict:
    """The summed metrics with ``operations`` = updates + combines."""
    metrics["update"], metrics["combine"] = int(metrics.get("update", 0)), int(metrics.get("combine", 0))
    metrics["operations"] = metrics["update"] + metrics["combine"]
    return metrics
