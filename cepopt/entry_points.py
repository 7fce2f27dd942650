"""Extension points: cepopt finds its parts through entry-point groups, its built-in ones too.

A package extends cepopt by declaring entry points in its own ``pyproject.toml``:

=====================  =============================================  ==================================
group                  name = value                                   what loading it does
=====================  =============================================  ==================================
``cepopt.families``    ``NAME = "pkg.methods"``                       declares the Family NAME (and its
                                                                      methods) with ``solve.declare``
``cepopt.methods``     ``ANY = "pkg.module"``                         registers methods of existing
                                                                      families with ``solve.register``
``cepopt.generators``  ``FAMILY = "pkg.module"``                      an instance generator for FAMILY:
                                                                      ``configure(parser)``, ``generate(args)``
``cepopt.streams``     ``NAME = "pkg.module:function"``               a stream generator (``gen:NAME``)
``cepopt.experiments`` ``NAME = "pkg.module"``                        a module with ``EXPERIMENT``
=====================  =============================================  ==================================

The built-ins are declared the same way in cepopt's ``pyproject.toml``, so the tables are read from
the installed metadata: after changing them, reinstall (``pip install -e .``).
"""

from __future__ import annotations

import importlib.metadata
from functools import cache
from typing import Any

from cepopt.errors import CepoptError, UnknownNameError

__all__ = ["GROUPS", "entries", "load", "names"]

#: short name -> entry-point group
GROUPS = {"families": "cepopt.families", "methods": "cepopt.methods", "generators": "cepopt.generators",
          "streams": "cepopt.streams", "experiments": "cepopt.experiments"}


@cache
def entries(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The entry points of ``group`` (a key of :data:`GROUPS`) by name, sorted by name.

    >>> list(entries("families"))
    ['gloria', 'hamlet', 'joinorder', 'sharon']
    """
    out: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in sorted(importlib.metadata.entry_points(group=GROUPS[group]), key=lambda e: e.name):
        if ep.name in out and out[ep.name].value != ep.value:
            raise CepoptError(f"entry point {ep.name!r} of group {GROUPS[group]} is declared twice: "
                              f"{out[ep.name].value} and {ep.value}")
        out.setdefault(ep.name, ep)
    if group == "families" and not out:
        raise CepoptError("no problem family is registered: cepopt's metadata is missing or stale; "
                          "reinstall it (pip install -e .)")
    return out


def names(group: str) -> tuple[str, ...]:
    """The names declared in ``group``."""
    return tuple(entries(group))


def load(group: str, name: str, what: str) -> Any:
    """Load entry point ``name`` of ``group``; an unknown name is a user error naming ``what``."""
    table = entries(group)
    if name not in table:
        raise UnknownNameError(f"unknown {what} {name!r} (known: {', '.join(table) or 'none'})")
    return table[name].load()
