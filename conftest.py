"""pytest collects the doctests of the whole package (``--doctest-modules``, pyproject.toml).

The folders that pyproject.toml maps into the package (``formulations/`` is ``cepopt.formulations``,
likewise ``instances/``, ``executor/``, ``experiments/``) would be imported by path under a second name
(``formulations.model``), loading the module twice (two ``Var`` classes, two registries). Before such a
file is collected, its pytest name is made an alias of the package module, so it is loaded once.
"""

from __future__ import annotations

import importlib
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent
_DIRS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
#: top-level folder -> the package it is (only the folders whose name differs from their package)
MAPPED = {folder: package for package, folder in _DIRS.items() if package != folder}


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix != ".py":
        return None
    try:
        parts = list(file_path.relative_to(ROOT).with_suffix("").parts)
    except ValueError:
        return None
    if not parts or parts[0] not in MAPPED:
        return None
    if parts[-1] == "__init__":
        parts.pop()
    for depth in range(1, len(parts) + 1):  # the folder's package and the module, under both names
        local = ".".join(parts[:depth])
        if local not in sys.modules:
            sys.modules[local] = importlib.import_module(".".join([MAPPED[parts[0]], *parts[1:depth]]))
    return None
