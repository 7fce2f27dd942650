"""Pool and PairTerm are named tuples (cheaper to build than frozen dataclasses): they must stay
immutable, hashable, equal by fields, and show every field by name in their repr."""

from __future__ import annotations

import pytest

from cepopt.gloria.problem import PairTerm, Pool, build
from cepopt.instances import load


def _records():
    problem = build(load("gloria-fig7"))
    return problem.pools + problem.terms


def _record_id(record) -> str:
    """A test id without frozensets: their repr follows the string hash, so it differs between the
    xdist workers' collections."""
    return f"{type(record).__name__}-{record.index if isinstance(record, Pool) else (record.a, record.b)}"


@pytest.mark.parametrize("record", _records(), ids=_record_id)
def test_a_record_is_immutable_hashable_and_shows_its_fields(record):
    cls = type(record)
    assert cls in (Pool, PairTerm)
    with pytest.raises(AttributeError):
        record.queries = frozenset()  # type: ignore[misc]
    copy = cls(*record)
    assert copy == record and hash(copy) == hash(record) and copy is not record
    fields = ", ".join(f"{name}={getattr(record, name)!r}" for name in cls._fields)
    assert repr(record) == f"{cls.__name__}({fields})"
