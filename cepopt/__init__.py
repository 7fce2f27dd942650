"""cepopt: exact plan selection for complex event processing, checked on Spark.

The public API is re-exported here; see README.md for the tour. The model classes are imported
with the package; the functions below are imported on first use, so ``import cepopt`` loads neither
a solver nor Spark::

    cepopt.load(name_or_path) -> Instance      cepopt.compare(instance, methods=None, ...) -> Solutions
    cepopt.generate(family, seed=0, **options)  cepopt.execute(instance, plan, stream=None, ...)
    cepopt.Instance

``solve(instance, method, ...)`` is ``from cepopt.solve import solve`` until the registry module
``cepopt/solve.py`` is renamed; then it joins :data:`_LAZY` (a module would shadow the function).
"""

import importlib

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
_LAZY = {
    "Instance": ("cepopt.instance", "Instance"),
    "load": ("cepopt.instance", "load"),
    "compare": ("cepopt.solve", "compare"),
    "generate": ("cepopt.instances.generate", "generate"),
    "execute": ("cepopt.pipeline", "execute"),
}

__all__ = [
    "Aggregate", "And", "AttrRef", "CepoptError", "Condition", "Equivalence", "Filter", "Kleene",
    "Not", "Or", "Query", "Seq", "Statistics", "Type", "Window", "Workload", *_LAZY,
]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'cepopt' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
