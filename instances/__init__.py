"""cepopt.instances: bundled paper examples, workload and stream generators, published-format readers.

>>> from cepopt import instances
>>> "sharon-fig4" in instances.names() or True
True
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_DIR", "bundled_path", "describe", "load", "names"]

DATA_DIR = Path(__file__).resolve().parent / "data"


def names() -> list[str]:
    """Names of the bundled instances."""
    return sorted(p.stem for p in DATA_DIR.glob("*.json"))


def bundled_path(name: str) -> Path | None:
    path = DATA_DIR / f"{name}.json"
    return path if path.is_file() else None


def load(name: str):
    """Load a bundled instance by name (``sharon-fig4``, ``gloria-fig7``, ``joinorder-e1``, ...)."""
    from cepopt.errors import UnknownNameError
    from cepopt.instance import load as load_instance

    if bundled_path(name) is None:
        raise UnknownNameError(f"unknown bundled instance {name!r} (known: {', '.join(names()) or 'none'})")
    return load_instance(bundled_path(name))


def describe() -> list[tuple[str, str, str]]:
    """(name, problem, description) of every bundled instance, read without parsing the queries."""
    import json

    rows = []
    for name in names():
        data = json.loads((DATA_DIR / f"{name}.json").read_text())
        rows.append((name, data.get("problem", "?"), data.get("description", "")))
    return rows
