"""Compiled GLORIA modules: which they are, and the guard that never runs stale compiled code.

Why compiled. The published search (problem build, node generation, edge tables, pruning, path search)
is hundreds of small Python functions over small containers: its profile is flat, and the interpreter's
own overhead is what is left to save. ``setup.py`` therefore compiles the modules of
:data:`COMPILED_MODULES` with mypyc at install (``pip install .`` and ``pip install -e .``) into C
extensions that sit beside their sources. The sources stay the reference: a machine without a C
compiler, or ``CEPOPT_PURE_PYTHON=1`` at build time, installs them as plain Python, and both forms give
the same graphs, values and plans (tests/gloria/test_compiled.py). The costs are typed ``Any``, never
``float``, so that compiled code keeps Python's ints and Fractions (cepopt/gloria/problem.py, ``Cost``).

Why a guard. An extension beside ``cost.py`` is imported instead of ``cost.py``, so in an editable
checkout an edited source would silently not run. At build, ``setup.py`` records the SHA-256 of every
compiled source in :data:`MANIFEST` (``compiled_sources.json``, beside this module). When
``cepopt.gloria`` is imported (its ``__init__`` calls :func:`guard` before any submodule), if some
source no longer matches its record, or ``CEPOPT_PURE_PYTHON=1`` is set at run time, every compiled
module is loaded from its ``.py`` source instead, by a meta-path finder for exactly those module names;
a stale source is named in one warning. All or none: compiled modules call each other's compiled
functions directly, so one fresh source among stale extensions would still run the old code.

Writing for the compiled modules: mypy must accept them (else setup.py warns and installs pure Python);
annotations are checked at run time (an argument annotated with a class must be one: hence the Protocol
of ``graph.pool_graph_is_forest``); ``float`` is a C double (costs are ``Any``); and a compiled class's
``functools.cached_property`` is a plain property, recomputed on every use (GloriaProblem caches by hand).

This module imports only the standard library: ``setup.py`` loads it by path to read the module list.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

__all__ = ["COMPILED_MODULES", "MANIFEST", "PURE_PYTHON_ENV", "SHARED_LIBRARY", "available_modules",
           "compiled_modules", "guard", "source_hash"]

#: the modules of cepopt.gloria that setup.py compiles: the search's hot path (problem build, node
#: generation, edge tables, pruning, path search), their cost model and the canonical form of options.
#: block.py and plan.py stay Python: Block subclasses tuple, which mypyc cannot compile as a native class.
COMPILED_MODULES = ("canonical", "cost", "graph", "nodes", "pruning", "path_search", "problem", "template")
#: mypyc's shared library: a top-level extension module that the compiled modules' small shims import
SHARED_LIBRARY = "cepopt_gloria__mypyc"
#: the build's record of the compiled sources (module -> SHA-256 of its .py)
MANIFEST = "compiled_sources.json"
#: set to 1 at build time to skip compiling, at run time to load the Python sources
PURE_PYTHON_ENV = "CEPOPT_PURE_PYTHON"

_PACKAGE = "cepopt.gloria"
_HERE = Path(__file__).resolve().parent
_compiled: tuple[str, ...] = ()


def source_hash(path: Path) -> str:
    """SHA-256 of a source file's bytes (what the manifest records)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pure_python_requested() -> bool:
    return os.environ.get(PURE_PYTHON_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _has_extension(directory: Path, module: str) -> bool:
    return any((directory / f"{module}{suffix}").exists() for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def _stale(directory: Path, built: Sequence[str], recorded: dict[str, str]) -> list[str]:
    """The modules with an extension whose source differs from the build's record (or has none)."""
    stale = []
    for module in built:
        source = directory / f"{module}.py"
        if recorded.get(module) != (source_hash(source) if source.exists() else None):
            stale.append(module)
    return stale


class PureSourceFinder(importlib.abc.MetaPathFinder):
    """Finds the listed modules' ``.py`` sources, ahead of the extensions beside them."""

    def __init__(self, sources: dict[str, Path]):
        self.sources = sources

    def find_spec(self, fullname, path=None, target=None):
        source = self.sources.get(fullname)
        if source is None:
            return None
        return importlib.util.spec_from_file_location(fullname, source)


def _built(directory: Path) -> tuple[list[str], dict[str, str]]:
    """(the modules with an extension beside their source, the manifest's records)."""
    manifest = directory / MANIFEST
    recorded: dict[str, str] = json.loads(manifest.read_text())["modules"] if manifest.exists() else {}
    names = dict.fromkeys([*COMPILED_MODULES, *recorded])
    return [m for m in names if _has_extension(directory, m)], recorded


def available_modules(directory: Path = _HERE) -> tuple[str, ...]:
    """The modules an import would run compiled without ``CEPOPT_PURE_PYTHON``: all that have an
    extension when every one matches its source, else none."""
    built, recorded = _built(directory)
    return () if _stale(directory, built, recorded) else tuple(built)


def guard(directory: Path = _HERE, package: str = _PACKAGE) -> tuple[str, ...]:
    """Decide, before any of them is imported, whether the package's compiled modules may be used;
    when not, install a :class:`PureSourceFinder` for them. Returns (and :func:`compiled_modules` then
    reports) the modules that will load compiled."""
    global _compiled
    built, recorded = _built(directory)
    stale = _stale(directory, built, recorded)
    if built and (stale or pure_python_requested()):
        if stale:
            one = len(stale) == 1
            warnings.warn(f"cepopt: compiled {', '.join(f'{package}.{m}' for m in stale)} "
                          f"{'does' if one else 'do'} not match {'its' if one else 'their'} source (edited "
                          "since the build?): running all of cepopt.gloria as pure Python; reinstall "
                          "(pip install -e .) to compile again", RuntimeWarning, stacklevel=3)
        names = {f"{package}.{m}": directory / f"{m}.py" for m in built}
        if not any(isinstance(f, PureSourceFinder) and f.sources == names for f in sys.meta_path):
            sys.meta_path.insert(0, PureSourceFinder(names))
        built = []
    _compiled = tuple(built)
    return _compiled


def compiled_modules() -> tuple[str, ...]:
    """The modules of cepopt.gloria running as compiled code in this process (empty: all pure Python).
    The ``gloria`` methods report it in their stats (``compiled_modules``)."""
    loaded = []
    for module in _compiled:
        mod = sys.modules.get(f"{_PACKAGE}.{module}")
        if mod is None or not str(getattr(mod, "__file__", "")).endswith(".py"):
            loaded.append(module)
    return tuple(loaded)
