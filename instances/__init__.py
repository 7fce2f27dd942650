"""cepopt.instances: bundled paper examples, workload and stream generators, published-format readers.

>>> from cepopt import instances
>>> "sharon-fig4" in instances.names() or True
True
"""

from __future__ import annotations

import json

from cepopt.errors import UnknownNameError
from cepopt.instance import bundled_dir, bundled_path
from cepopt.instance import bundled_names as names
from cepopt.instance import load as load_instance

__all__ = ["DATA_DIR", "bundled_path", "describe", "load", "names"]

DATA_DIR = bundled_dir()


def load(name: str):
    """Load a bundled instance by name (``sharon-fig4``, ``gloria-fig7``, ``joinorder-e1``, ...)."""
    if bundled_path(name) is None:
        raise UnknownNameError(f"unknown bundled instance {name!r} (known: {', '.join(names()) or 'none'})")
    return load_instance(bundled_path(name))


def describe() -> list[tuple[str, str, str]]:
    """(name, problem, description) of every bundled instance, read without parsing the queries."""
    rows = []
    for name in names():
        data = json.loads((DATA_DIR / f"{name}.json").read_text())
        rows.append((name, data.get("problem", "?"), data.get("description", "")))
    return rows
