"""Lazy imports of the parts that plug into the core (families, generators, drivers, experiments).

A part that is declared but not there yet is reported as :class:`~cepopt.errors.NotBuiltError`,
which the CLI prints as one line; an import error inside an existing module still propagates.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from cepopt.errors import NotBuiltError

__all__ = ["import_built"]


def import_built(module_name: str, what: str) -> ModuleType:
    """Import ``module_name``; if the module itself (or its package) is missing, raise
    ``NotBuiltError(f"{what} is not built yet")``.

    >>> import_built("cepopt.model", "the model").__name__
    'cepopt.model'
    >>> import_built("cepopt.nothing_here", "the nothing family")
    Traceback (most recent call last):
    ...
    cepopt.errors.NotBuiltError: the nothing family is not built yet
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise NotBuiltError(f"{what} is not built yet") from None
        raise
