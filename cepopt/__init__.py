"""cepopt: exact plan selection for complex event processing, checked on Spark.

The public API is re-exported here; see README.md for the tour. The model classes are imported
with the package; the functions below are imported on first use, so ``import cepopt`` loads neither
a solver nor Spark::

    cepopt.load(name_or_path) -> Instance      cepopt.solve(instance, method, ...) -> Solution
    cepopt.compare(instance, methods=None, ...) -> Solutions
    cepopt.generate(family, seed=0, **options)  cepopt.execute(instance, plan, stream=None, ...)
    cepopt.benchmark(instances, methods=None, ...) -> BenchmarkRun (cepopt.benchmarking)
    cepopt.Instance

The method registry itself is the module :mod:`cepopt.registry`.
"""

import importlib
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

from cepopt.cache import share_numba_cache
from cepopt.errors import CepoptError
from cepopt.model import (
    Aggregate,
    And,
    AttrRef,
    Condition,
    Equivalence,
    Filter,
    Kleene,
    Not,
    Or,
    Query,
    Seq,
    Statistics,
    Type,
    Window,
    Workload,
)

#: name -> (module, attribute), imported on first use
share_numba_cache()  # one compiled-kernel cache for this process and Spark's workers (cepopt/cache.py)

_LAZY = {
    "Instance": ("cepopt.instance", "Instance"),
    "load": ("cepopt.instance", "load"),
    "solve": ("cepopt.registry", "solve"),
    "compare": ("cepopt.registry", "compare"),
    "generate": ("cepopt.instances.generate", "generate"),
    "execute": ("cepopt.pipeline", "execute"),
    "benchmark": ("cepopt.benchmarking", "benchmark"),
}

__all__ = [
    "Aggregate", "And", "AttrRef", "CepoptError", "Condition", "Equivalence", "Filter", "Kleene",
    "Not", "Or", "Query", "Seq", "Statistics", "Type", "Window", "Workload", *_LAZY,
]
try:
    __version__ = _distribution_version("cepopt")   # pyproject.toml's, through the installed metadata
except PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'cepopt' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
