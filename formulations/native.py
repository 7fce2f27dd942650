"""What surrounds every native solver call: checked limits, where solver output goes, log and export.

* :func:`check_time_limit` / :func:`check_seed`: a time limit is a finite number of seconds in
  (0, :data:`MAX_TIME_LIMIT`]; a seed an integer the solvers take (CP-SAT and MathOpt: 32-bit). Both
  raise CepoptError (one line, exit 2) before any solver starts.
* :func:`native_output_to_stderr`: the solvers' C/C++ code prints to file descriptor 1 (seen: HiGHS's
  ``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();`` through MathOpt, CBC's
  banner, CP-SAT's log); around every native solve, descriptor 1 points at descriptor 2, so standard
  output stays the caller's (one JSON document under ``--json``) and the solver's words reach stderr.
* :func:`solver_settings`: per-run settings a caller sets around a method (the CLI's ``--param log=true``
  and ``--export FILE``): ``log`` shows the solver's own log on stderr; ``export`` names the file the
  model a method solves is written to (:func:`cepopt.formulations.export.offer_export`); ``progress``
  is told each new incumbent and bound of a solve (CP-SAT's callbacks; ``cepopt benchmark`` records them).
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import math
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path

from cepopt import params
from cepopt.errors import CepoptError

__all__ = ["EXPORT_FORMATS", "MAX_TIME_LIMIT", "SEED_RANGE", "Export", "Settings", "check_export_path",
           "check_seed", "check_time_limit", "native_output_to_stderr", "settings", "solver_reason", "solver_settings"]

#: Longest time limit accepted, in seconds (the one bound the CLI and solve() check too; every solver's own
#: limit is larger, and MathOpt's duration overflows near 1e14 s).
MAX_TIME_LIMIT = params.MAX_TIME_LIMIT

#: Seeds the solvers take: CP-SAT's ``random_seed`` and MathOpt's are 32-bit signed integers; CBC and
#: the LP tree take any. The CLI accepts the non-negative ones.
SEED_RANGE = (0, params.MAX_SEED)

EXPORT_FORMATS = {".mps": "mps", ".lp": "lp", ".pbtxt": "proto", ".txt": "proto"}


def check_time_limit(time_limit, what: str = "time limit") -> None:
    """CepoptError unless ``time_limit`` is None or a number of seconds in (0, MAX_TIME_LIMIT]."""
    if time_limit is None:
        return
    if isinstance(time_limit, bool) or not isinstance(time_limit, Real):
        raise CepoptError(f"{what}: expected a number of seconds, got {time_limit!r}")
    try:
        value = float(time_limit)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value) or not 0 < value <= MAX_TIME_LIMIT:
        raise CepoptError(f"{what}: expected seconds in (0, {MAX_TIME_LIMIT:g}], got {time_limit!r}")


def check_seed(seed, low: int = -(2**31), high: int = 2**31 - 1, solver: str = "the solver") -> int:
    """``seed`` as an int, or CepoptError when it is not an integer in [low, high]."""
    if isinstance(seed, bool) or not isinstance(seed, Integral):
        raise CepoptError(f"seed: expected an integer, got {seed!r}")
    if not low <= seed <= high:
        raise CepoptError(f"seed: {solver} takes seeds in [{low}, {high}], got {seed}")
    return int(seed)


# --------------------------------------------------------------------------------------- native output
_lock = threading.Lock()
_depth = 0
_saved_fd: int | None = None


def _flush_c_stdio() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def native_output_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at descriptor 2 while the block runs (re-entrant, thread-safe); C stdio
    buffers are flushed on the way out so nothing printed inside reaches the real stdout later."""
    global _depth, _saved_fd
    with _lock:
        if _depth == 0:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            _flush_c_stdio()
            try:
                _saved_fd = os.dup(1)
                os.dup2(2, 1)
            except OSError:  # no descriptors to play with (closed stdout): leave them alone
                _saved_fd = None
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved_fd is not None:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                _flush_c_stdio()
                os.dup2(_saved_fd, 1)
                os.close(_saved_fd)
                _saved_fd = None


# --------------------------------------------------------------------------------------- run settings
@dataclass
class Export:
    """Where the model a method solves is written. The last model offered is kept, unless a formulation
    wrote its whole model on purpose (``locked``: its blocks or follow-up models do not overwrite it)."""

    path: str
    written: int = 0
    locked: bool = False
    formats: list[str] = field(default_factory=list)
    error: str = ""


#: ``progress(event, value)``: ``event`` is "start" (a solver call begins; value None), "primal" (a new
#: incumbent) or "dual" (a new proven bound), ``value`` in the model's objective units
ProgressHook = Callable[[str, float | None], None]


@dataclass
class Settings:
    log: bool = False
    export: Export | None = None
    progress: ProgressHook | None = None


_SETTINGS: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("cepopt_solver_settings", default=None)
_DEFAULT = Settings()


def settings() -> Settings:
    """The settings in force (the defaults outside :func:`solver_settings`)."""
    return _SETTINGS.get() or _DEFAULT


@contextlib.contextmanager
def solver_settings(*, log: bool = False, export: str | os.PathLike | None = None,
                    progress: ProgressHook | None = None) -> Iterator[Settings]:
    """Settings for every solver call inside the block: ``log`` (the solver's log on stderr),
    ``export`` (a file the solved model is written to; :func:`check_export_path` first) and ``progress``
    (:data:`ProgressHook`)."""
    if export is not None:
        check_export_path(export)
    s = Settings(log=bool(log), export=None if export is None else Export(str(export)), progress=progress)
    token = _SETTINGS.set(s)
    try:
        yield s
    finally:
        _SETTINGS.reset(token)


def check_export_path(path: str | os.PathLike) -> str:
    """The export format of ``path`` (by extension), or CepoptError when it has none or its folder does not
    exist or is not writable: checked before any work."""
    p = Path(path)
    fmt = EXPORT_FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise CepoptError(f"--export {path}: unknown model format {p.suffix or '(no extension)'!r} "
                          f"(use {', '.join(EXPORT_FORMATS)})")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise CepoptError(f"--export {path}: folder {str(folder)!r} does not exist or is not writable")
    return fmt


def solver_reason(exc: BaseException) -> str:
    """The solver's reason for a failed MathOpt solve. OR-Tools 9.15 re-raises a solver's StatusNotOk as
    an unrelated AttributeError ('StatusNotOk' object has no attribute 'canonical_code') with the real
    error as its context: step past that wrapper only, not further down the chain (which may hold an
    exception the caller was handling)."""
    inner = exc.__cause__ or exc.__context__
    if isinstance(exc, AttributeError) and "canonical_code" in str(exc) and inner is not None:
        return str(inner)
    return str(exc)
