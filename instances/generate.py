"""Dispatch to a family's instance generator: the module registered for the family in the
``cepopt.generators`` entry-point group (the built-ins: ``cepopt.instances.<family>_generator``).

A generator module defines ``configure(parser)`` (its argparse flags) and ``generate(args) -> Instance``;
``--seed`` and ``-o/--output`` are common to all and added here. It may define ``LIMITS``, a mapping
of a flag's destination (``size``, ``queries``) to the largest value it accepts: every integer and
float flag is checked here, before the generator runs (an integer, a finite number, at most its
limit, else :data:`MAX_INT_FLAG`), so that ``--size 99999`` is one line instead of 20 GB.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence

from cepopt.entry_points import load, names
from cepopt.errors import UnknownNameError
from cepopt.params import OneLineParser, seed_argument

__all__ = ["MAX_INT_FLAG", "describe", "generate", "generator_module", "generator_parser"]

#: the largest value of an integer flag of a generator that states no limit of its own
MAX_INT_FLAG = 10**9


def generator_module(family: str):
    """The instance generator of ``family``; an unknown family, or one without a generator, is a user
    error."""
    if family in names("families") and family not in names("generators"):
        raise UnknownNameError(f"problem family {family!r} has no instance generator (those with one: "
                               f"{', '.join(names('generators'))})")
    return load("generators", family, "problem family")


def _int_flag(limit: int) -> Callable[[str], int]:
    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}") from None
        if abs(value) > limit:
            raise argparse.ArgumentTypeError(f"at most {limit} (the generator's stated maximum), got {text[:40]}")
        return value

    return integer


def _float_flag(limit: float) -> Callable[[str], float]:
    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text[:40]!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text[:40]!r}")
        if abs(value) > limit:
            raise argparse.ArgumentTypeError(f"at most {limit:g} (the generator's stated maximum), got {text[:40]}")
        return value

    return number


def _check_flags(parser: argparse.ArgumentParser, limits: Mapping[str, float]) -> None:
    """Replace ``type=int`` / ``type=float`` of every flag by a checked reader with its limit."""
    for action in parser._actions:
        if action.type is int:
            limit = int(limits.get(action.dest, MAX_INT_FLAG))
            action.type = _int_flag(limit)
        elif action.type is float:
            limit = float(limits.get(action.dest, math.inf))
            action.type = _float_flag(limit)
        else:
            continue
        if action.dest in limits and action.help:
            action.help += f"; at most {limits[action.dest]:g}"


def generator_parser(family: str, *, output_required: bool = True) -> tuple[argparse.ArgumentParser, object]:
    module = generator_module(family)
    summary = (module.__doc__ or "").strip().splitlines()
    parser = OneLineParser(prog=f"cepopt generate {family}", description=summary[0] if summary else None)
    parser.add_argument("--seed", type=seed_argument, default=0, help="random seed (default 0)")
    parser.add_argument("-o", "--output", required=output_required, metavar="FILE", help="instance file to write")
    module.configure(parser)
    _check_flags(parser, getattr(module, "LIMITS", {}))
    return parser, module


def generate(family: str, argv: Sequence[str] = (), **options):
    """Generate an instance of ``family`` from its generator's options, given as command-line words or
    as keywords (``size=8`` is ``--size 8``, ``rate_min=0.5`` is ``--rate-min 0.5``, ``flag=True`` is
    ``--flag``).

    >>> generate("joinorder", size=3, seed=1).problem
    'joinorder'
    """
    words = list(argv)
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        elif value is not False and value is not None:
            words += [flag, str(value)]
    parser, module = generator_parser(family, output_required=False)
    return module.generate(parser.parse_args(words))


def _flag_text(action: argparse.Action, limits: Mapping[str, float]) -> str:
    flag = action.option_strings[-1]
    if action.nargs == 0:
        return f"[{flag}]"
    value = action.default if action.default is not None else action.metavar or action.dest.upper()
    if action.choices:
        value = "|".join(map(str, action.choices))
    limit = f" (<= {limits[action.dest]:g})" if action.dest in limits else ""
    return f"{flag} {value}{limit}"


def describe() -> list[str]:
    """Lines listing every instance generator (its flags, defaults and maxima) and every stream
    generator (its parameters and defaults): ``cepopt generate --list``."""
    from cepopt.instances import streams

    lines = ["instance generators: cepopt generate FAMILY --seed N -o FILE [flags]"]
    for family in names("generators"):
        parser, module = generator_parser(family)
        limits = getattr(module, "LIMITS", {})
        flags = [_flag_text(a, limits) for a in parser._actions
                 if a.option_strings and a.dest not in ("help", "seed", "output")]
        lines.append(f"  {family:12s} {parser.description or ''}")
        lines.append(f"  {'':12s} {' '.join(flags)}")
    lines.append(f"stream generators: --stream gen:NAME[:key=value,...] (seed=N; integers <= "
                 f"{streams.MAX_STREAM_EVENTS:g})")
    for name in streams.names():
        params = ", ".join(f"{k}={v}" for k, v in streams.parameters(name).items())
        doc = (streams.generator(name).__doc__ or "").strip().splitlines()
        lines.append(f"  {name:12s} {doc[0] if doc else ''}")
        lines.append(f"  {'':12s} {params}")
    return lines
