"""Hostile but fair inputs for the fuzzing suite, and the check of the allowed outcomes.

Only two outcomes are allowed for any input: a result, or a :class:`~cepopt.errors.CepoptError` (on the
command line: exit status 2 and exactly one line ``cepopt: error: ...`` on stderr).
"""

from __future__ import annotations

import json
import math
import traceback
from typing import Any

from hypothesis import strategies as st

from cepopt.errors import CepoptError
from tests.fuzz.budget import boxed

# ---------------------------------------------------------------------------------------------
# Outcomes
# ---------------------------------------------------------------------------------------------


class NotAllowed(AssertionError):
    """An input produced something other than a result or a CepoptError."""


def outcome(fn, *args, **kwargs) -> Any:
    """``fn(*args, **kwargs)`` inside the long mode's time box: its result, or the CepoptError it raised;
    any other exception fails the test with the traceback of the original."""
    try:
        return boxed(fn, *args, **kwargs)
    except CepoptError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 -- that is the point: nothing else may escape
        raise NotAllowed(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}") from exc


def cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    """``cepopt.cli.main(argv)`` in process; exit 0, or exit 2 with exactly one line on stderr."""
    from cepopt.cli import main

    capsys.readouterr()

    def run() -> int:
        capsys.readouterr()  # a second run (see boxed) prints afresh
        return main([str(a) for a in argv])

    try:
        code = boxed(run)
    except Exception as exc:  # noqa: BLE001
        raise NotAllowed(f"cepopt {' '.join(map(str, argv))[:300]}: {type(exc).__name__}: {exc}\n"
                         f"{traceback.format_exc()}") from exc
    out, err = capsys.readouterr()
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("cepopt: error: "), (argv, err)
        assert "Traceback" not in err
    return code, out, err


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------

HUGE_INT = 10**400
#: integers a user might type: ordinary, boundary and absurd
nasty_ints = st.one_of(
    st.integers(-3, 40),
    st.sampled_from([0, 1, 2**31 - 1, 2**31, 2**53, 2**63, -(2**63), 10**9, 10**12, 99999999999, -1, HUGE_INT,
                     -HUGE_INT]),
    st.integers(-(10**30), 10**30),
)
nasty_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-320, 1e308, 1.7976931348623157e308, math.inf, -math.inf, math.nan, 0.5, 1.5]),
)
nasty_numbers = st.one_of(nasty_ints, nasty_floats)
nasty_text = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", "x", "true", "false", "null", "nan", "inf", "-inf", "1e999", "0x10", "1_000",
                     "SEQ", "NOT", "GROUP", "WITHIN", "é", "\x00", "a\nb", "../../etc", "x" * 300, "9" * 400,
                     "1.5", "-1", "[1]", "{}", "🎉"]),
)
#: what a user can put after ``key=`` on a command line (``--param``, ``gen:NAME:k=v``, flags)
value_words = st.one_of(nasty_text, nasty_numbers.map(repr), nasty_ints.map(str))

json_scalars = st.one_of(st.none(), st.booleans(), nasty_ints, nasty_floats, nasty_text)
json_values = st.recursive(json_scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(nasty_text, children, max_size=4)), max_leaves=12)


# ---------------------------------------------------------------------------------------------
# Mutating valid JSON documents
# ---------------------------------------------------------------------------------------------


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:8]):
            out += _paths(v, prefix + (i,))
    return out


def _replace(doc: Any, path: tuple, value: Any, delete: bool = False) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        new = dict(doc)
        if delete and not rest:
            new.pop(head, None)
        else:
            new[head] = _replace(doc[head], rest, value, delete)
        return new
    new = list(doc)
    if delete and not rest:
        del new[head]
    else:
        new[head] = _replace(doc[head], rest, value, delete)
    return new


@st.composite
def mutated(draw, doc: Any, steps: int = 3) -> Any:
    """``doc`` with up to ``steps`` random edits: a subtree replaced by a nasty value, a key deleted or
    added, a number nudged to a boundary, a string replaced."""
    for _ in range(draw(st.integers(1, steps))):
        paths = _paths(doc)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        kind = draw(st.integers(0, 4))
        if kind == 0 or not path:
            doc = _replace(doc, path, draw(json_values))
        elif kind == 1:
            doc = _replace(doc, path, None, delete=True)
        elif kind == 2:
            node = doc
            for p in path:
                node = node[p]
            if isinstance(node, dict):
                doc = _replace(doc, path, {**node, draw(nasty_text): draw(json_values)})
            elif isinstance(node, list):
                doc = _replace(doc, path, node + [draw(json_values)])
            else:
                doc = _replace(doc, path, draw(json_scalars))
        elif kind == 3:
            doc = _replace(doc, path, draw(nasty_numbers))
        else:
            doc = _replace(doc, path, draw(nasty_text))
    return doc


def dumps(doc: Any) -> str:
    """JSON text of a fuzzed document (NaN and Infinity allowed, as Python writes them)."""
    return json.dumps(doc)
