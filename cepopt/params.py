"""Reading family options (``params.KEY`` / ``--param KEY=VALUE``) and command-line flags
(:class:`OneLineParser`) with one-line user errors.

Method options are read from the method's signature (:func:`read_options`): each option is converted
to its annotation (``bool``, ``int``, ``float``, ``str``, ``Literal[...]``, ``X | None``; unannotated:
the type of its default) and checked against the bounds of ``Annotated[X, Bound(">=", 1), ...]``
(:data:`PositiveInt`, :data:`NonNegativeInt`, :data:`PositiveFloat`, :data:`Workers`); ``Any`` opts
out. The values come as JSON from ``--param`` (so ``abc`` arrives as text) or as Python values.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import math
import numbers
import operator
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NoReturn

from cepopt.errors import CepoptError

__all__ = ["MAX_SEED", "MAX_TIME_LIMIT", "Bound", "NonNegativeInt", "OneLineParser", "PositiveFloat", "PositiveInt",
           "Workers", "check_keys", "check_seed", "check_time_limit", "number_from_text", "parse_bool", "parse_choice",
           "parse_param",
           "read_flags", "read_options", "read_values", "seed_argument", "short_repr", "time_limit_argument"]

class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error as a one-line CepoptError (the CLI exits 2)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("cepopt").strip()
        raise CepoptError(f"{command}: {message}" if command else message)


_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


@dataclass(frozen=True)
class Bound:
    """``Annotated`` metadata: a numeric option must satisfy ``value OP limit``."""

    op: Literal[">=", ">", "<=", "<"]
    limit: float

    def holds(self, value: Any) -> bool:
        return _OPS[self.op](value, self.limit)


PositiveInt = Annotated[int, Bound(">=", 1)]
NonNegativeInt = Annotated[int, Bound(">=", 0)]
PositiveFloat = Annotated[float, Bound(">", 0)]
#: solver threads; the cap keeps the value within what the solvers accept (CP-SAT: a 32-bit int)
Workers = Annotated[int, Bound(">=", 1), Bound("<=", 1024)]

_BOOL_WORDS = {"true": True, "yes": True, "1": True, "on": True,
               "false": False, "no": False, "0": False, "off": False}


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
        return _BOOL_WORDS[value.strip().lower()]
    raise ValueError(f"expected true or false, got {short_repr(value)}")


def number_from_text(value: Any) -> Any:
    """A number written as text (Python callers; ``--param`` already reads JSON numbers), else ``value``."""
    if isinstance(value, str):
        for parse in (int, float):
            try:
                return parse(value)
            except ValueError:
                pass
    return value


def _int(value: Any) -> int:
    x = number_from_text(value)
    if not isinstance(x, bool):
        if isinstance(x, numbers.Integral):
            return int(x)
        if isinstance(x, numbers.Real) and float(x).is_integer():  # 2e6 reads as a float
            return int(x)
    raise ValueError(f"expected an integer, got {short_repr(value)}")


def _float(value: Any) -> float:
    x = number_from_text(value)
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        try:
            if math.isfinite(x):
                return float(x)
        except OverflowError:  # an integer beyond the float range (400 digits)
            pass
    raise ValueError(f"expected a finite number, got {short_repr(value)}")


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (a 400-digit number stays one readable line)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**limit:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}... ({len(text)} characters)"


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(f"expected text, got {short_repr(value)}")


def _choice(value: Any, table: Mapping[str, str]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in table:
        raise ValueError(f"expected one of {', '.join(table)}, got {short_repr(value)}")
    return table[value.strip().lower()]


_READERS: dict[Any, Callable[[Any], Any]] = {bool: _bool, int: _int, float: _float, str: _str}


def _reader(annotation: Any) -> Callable[[Any], Any] | None:
    """The reader of values of ``annotation``; None when it is not one of the supported forms."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        read = _reader(args[0])
        bounds = [m for m in annotation.__metadata__ if isinstance(m, Bound)]
        if read is None:
            return None

        def bounded(value: Any) -> Any:
            x = read(value)
            for b in bounds:
                if not b.holds(x):
                    raise ValueError(f"must be {b.op} {b.limit:g}, got {short_repr(value)}")
            return x

        return bounded
    if origin is Literal:
        return functools.partial(_choice, table={str(a).lower(): a for a in args})
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        inner = _reader(next(a for a in args if a is not type(None)))
        return None if inner is None else lambda v: None if v is None else inner(v)
    return _READERS.get(annotation)


@functools.cache
def _readers(fn: Callable[..., Any], names: tuple[str, ...]) -> dict[str, Callable[[Any], Any]]:
    # Resolved on first use, not at @register time: annotations may name what the module defines later.
    hints = typing.get_type_hints(fn, include_extras=True)
    params = inspect.signature(fn).parameters
    out = {}
    for name in names:
        declared = hints.get(name, type(params[name].default))
        out[name] = (lambda v: v) if declared is Any else _reader(declared)
        if out[name] is None:  # an unchecked option is how int("abc") tracebacks happen: refuse it
            raise TypeError(f"{fn.__qualname__}: annotate option {name!r} as bool, int, float, str, "
                            f"Literal[...], X | None or Annotated[X, Bound(...)] (or Any), not {declared!r}")
    return out


def read_options(fn: Callable[..., Any], names: tuple[str, ...], options: Mapping[str, Any],
                 what: str) -> dict[str, Any]:
    """``options`` (a subset of the keyword-only parameters ``names`` of ``fn``) converted and checked
    as ``fn``'s signature declares; a bad value raises a CepoptError naming ``params.KEY`` and ``what``."""
    readers = _readers(fn, names)
    out = {}
    for key, value in options.items():
        try:
            out[key] = readers[key](value)
        except ValueError as exc:
            raise CepoptError(f"params.{key} ({what}): {exc}") from None
    return out


def read_values(fn: Callable[..., Any], options: Mapping[str, Any], where: str,
                names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """``options`` converted and checked as the keyword-only parameters ``names`` of ``fn`` declare
    them (default: all of them); an unknown key or a bad value raises a CepoptError ``WHERE: KEY: ...``.

    >>> def gen(*, events: int = 10, rate: float = 1.0): ...
    >>> read_values(gen, {"events": "20"}, "gen:x")
    {'events': 20}
    >>> read_values(gen, {"events": 1.5}, "gen:x")
    Traceback (most recent call last):
    ...
    cepopt.errors.CepoptError: gen:x: events: expected an integer, got 1.5
    """
    if names is None:
        params = inspect.signature(fn).parameters
        names = tuple(p for p, spec in params.items() if spec.kind == spec.KEYWORD_ONLY)
    unknown = sorted(set(options) - set(names), key=str)
    if unknown:
        raise CepoptError(f"{where}: unknown parameter {short_repr(unknown[0])} (parameters: {', '.join(names)})")
    return _convert(fn, tuple(names), options, lambda key: f"{where}: {key}")


def read_flags(fn: Callable[..., Any], flags: Mapping[str, Any]) -> dict[str, Any]:
    """Command-line flag values (``{"burst": 0.0}`` for ``--burst``) checked against the bounds that the
    keyword-only parameters of the same names of ``fn`` declare, so that a generator and the stream
    generator it calls state each bound once; a bad value raises a CepoptError ``--FLAG: ...``.

    >>> from typing import Annotated
    >>> def gen(*, burst: Annotated[float, Bound(">=", 1)] = 40.0): ...
    >>> read_flags(gen, {"burst": 0.0})
    Traceback (most recent call last):
    ...
    cepopt.errors.CepoptError: --burst: must be >= 1, got 0.0
    """
    return _convert(fn, tuple(flags), flags, lambda key: "--" + key.replace("_", "-"))


def _convert(fn: Callable[..., Any], names: tuple[str, ...], options: Mapping[str, Any],
             place: Callable[[str], str]) -> dict[str, Any]:
    readers = _readers(fn, names)
    out = {}
    for key, value in options.items():
        try:
            out[key] = readers[key](value)
        except ValueError as exc:
            raise CepoptError(f"{place(key)}: {exc}") from None
    return out


def check_keys(params: Mapping[str, Any], known: Iterable[str], what: str = "parameter") -> None:
    """A CepoptError naming the first (sorted) key of ``params`` not in ``known``: ``params.KEY: unknown WHAT``."""
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise CepoptError(f"params.{unknown[0]}: unknown {what} (known: {', '.join(sorted(known))})")


def parse_bool(value: Any, key: str) -> bool:
    """``value`` as a boolean (true/false, yes/no, on/off, 1/0); anything else raises a CepoptError
    naming ``params.KEY``."""
    try:
        return _bool(value)
    except ValueError as exc:
        raise CepoptError(f"params.{key}: {exc}") from None


def parse_choice(key: str, value: Any, choices: Mapping[str, str] | tuple) -> str:
    """``value`` as one of ``choices`` (case and surrounding blanks ignored); a mapping also renames
    (alias -> canonical name). Anything else raises a CepoptError naming ``params.KEY``."""
    table = choices if isinstance(choices, Mapping) else {c: c for c in choices}
    try:
        return _choice(value, table)
    except ValueError as exc:
        raise CepoptError(f"params.{key}: {exc}") from None


#: the largest time limit a method accepts (about 116 days): solvers convert it to their own types
#: (MathOpt: a timedelta, CP-SAT: a double, CBC: an int), and 1e308 or inf overflowed them.
MAX_TIME_LIMIT = 1e7
#: seeds are 32-bit non-negative integers: CP-SAT takes an int32, NumPy and ii-random refuse negatives.
MAX_SEED = 2**31 - 1


def check_time_limit(value: Any, where: str = "time limit") -> float | None:
    """``value`` as a time limit in seconds: None (no limit) or a number in (0, MAX_TIME_LIMIT].

    >>> check_time_limit("2.5"), check_time_limit(None)
    (2.5, None)
    >>> check_time_limit(float("inf"))
    Traceback (most recent call last):
    ...
    cepopt.errors.CepoptError: time limit: must be a number of seconds in (0, 1e+07], got inf (omit it for no limit)
    """
    if value is None:
        return None
    try:
        x = _float(value)
    except ValueError:
        x = math.nan
    if not 0 < x <= MAX_TIME_LIMIT:
        raise CepoptError(f"{where}: must be a number of seconds in (0, {MAX_TIME_LIMIT:g}], got {short_repr(value)} "
                          "(omit it for no limit)")
    return x


def check_seed(value: Any, where: str = "seed") -> int:
    """``value`` as a random seed: an integer in [0, MAX_SEED].

    >>> check_seed("7")
    7
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    cepopt.errors.CepoptError: seed: must be an integer in [0, 2147483647], got -1
    """
    try:
        x = _int(value)
    except ValueError:
        x = -1
    if not 0 <= x <= MAX_SEED:
        raise CepoptError(f"{where}: must be an integer in [0, {MAX_SEED}], got {short_repr(value)}")
    return x


def _argument(check: Callable[[Any], Any]) -> Callable[[str], Any]:
    """An argparse ``type=`` from a checker: its CepoptError becomes argparse's one-line usage error."""

    def convert(text: str) -> Any:
        try:
            return check(text)
        except CepoptError as exc:
            raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None

    convert.__name__ = check.__name__.removeprefix("check_")
    return convert


#: ``--time-limit`` and ``--seed`` as argparse types
time_limit_argument = _argument(check_time_limit)
seed_argument = _argument(check_seed)


def parse_param(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE read as JSON when it is JSON (true, 3, 0.5, "x"), else as text.

    >>> parse_param("expand=false"), parse_param("backend=highs"), parse_param("k=3")
    (('expand', False), ('backend', 'highs'), ('k', 3))
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise CepoptError(f"--param expects KEY=VALUE, got {text!r}")
    value = value.strip()
    lowered = value.lower()
    if lowered in ("true", "false"):
        return key.strip(), lowered == "true"
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value
