"""Dispatch to a family's instance generator: the module registered for the family in the
``cepopt.generators`` entry-point group (the built-ins: ``cepopt.instances.<family>_generator``).

A generator module defines ``configure(parser)`` (its argparse flags) and ``generate(args) -> Instance``;
``--seed`` and ``-o/--output`` are common to all and added here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from cepopt.entry_points import load, names
from cepopt.errors import UnknownNameError
from cepopt.params import OneLineParser

__all__ = ["generate", "generator_module", "generator_parser"]


def generator_module(family: str):
    """The instance generator of ``family``; an unknown family, or one without a generator, is a user
    error."""
    if family in names("families") and family not in names("generators"):
        raise UnknownNameError(f"problem family {family!r} has no instance generator (those with one: "
                               f"{', '.join(names('generators'))})")
    return load("generators", family, "problem family")


def generator_parser(family: str, *, output_required: bool = True) -> tuple[argparse.ArgumentParser, object]:
    module = generator_module(family)
    summary = (module.__doc__ or "").strip().splitlines()
    parser = OneLineParser(prog=f"cepopt generate {family}", description=summary[0] if summary else None)
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("-o", "--output", required=output_required, metavar="FILE", help="instance file to write")
    module.configure(parser)
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
