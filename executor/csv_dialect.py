"""The one CSV dialect both engines read (docs/FORMATS.md, "Event streams"): header, missing values,
quoting, number columns.

* Quoting: RFC 4180: a field may be quoted with ``"``, a ``"`` inside is written ``""``, a quoted field
  may hold commas and line breaks; a backslash is an ordinary character. Empty lines are skipped.
* Header: the first record names every column once (no empty name, no backquote); a column named twice
  is an error naming line 1 and the column, before any work (no engine renames it).
* Missing values: in an attribute column, a cell that is empty or exactly one of :data:`NA_TEXTS`
  (pandas' defaults) is missing, whether the column holds numbers or text. A type is
  missing only when its cell is empty (a type may be named ``NA``); a missing type or time stamp is an
  error.
* Number columns: a column is a number column when every present value of its first
  :data:`SAMPLE_RECORDS` records is a decimal number (:data:`DECIMAL`: digits, an optional point and
  exponent; no ``0x10``, ``1_000``, ``inf``, ``True``); all-missing counts as numbers. Every later value
  of it must be one too and finite in double precision (``1e400`` is not), else the read fails naming
  the line and the column; any other column is text, kept as written.

The engines read with these rules: executor/streams.py (the local engine through pandas, Spark through
its CSV reader with ``escape='"'`` and ``multiLine`` when the file may hold a quoted line break, the
checks in the read's projection).
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from cepopt.errors import CepoptError

__all__ = ["DECIMAL", "DECIMAL_JAVA", "NA_TEXTS", "SAMPLE_RECORDS", "check_header", "is_missing", "may_span_lines",
           "number_columns", "number_problem", "record_line", "records"]

#: texts that mean a missing value in an attribute column (pandas read_csv's defaults)
NA_TEXTS = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
            "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")
#: the records that decide which columns hold numbers (read on the driver, no Spark job)
SAMPLE_RECORDS = 1000
#: a decimal number as text (what Python's float and Spark's cast both read, and nothing more)
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: :data:`DECIMAL` for Spark's ``rlike`` (Java regex), surrounding spaces allowed as in ``trim``
DECIMAL_JAVA = r"^\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*$"
_MAX_DOUBLE = 1.7976931348623157e308


def is_missing(text: object) -> bool:
    """Whether an attribute cell (text, or None / NaN for an absent one) is a missing value."""
    return not isinstance(text, str) or text in NA_TEXTS


def number_problem(text: str) -> str | None:
    """What is wrong with a present cell of a number column (None when it is a finite number)."""
    body = text.strip()
    shown = repr(text) if len(text) <= 60 else f"{text[:50]!r}... ({len(text)} characters)"
    if not DECIMAL.fullmatch(body):
        return f"{shown} is not a number"
    if abs(float(body)) > _MAX_DOUBLE:
        return f"{shown} is not a finite number in double precision"
    return None


def records(lines: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """(first line number, fields) of every non-empty record of CSV text given as lines (with their
    line ends), line 1 being the header's."""
    reader = csv.reader(lines)
    start = 1
    for row in reader:
        if row:
            yield start, row
        start = reader.line_num + 1


def check_header(names: Sequence[str], where: str) -> None:
    """A CepoptError naming line 1 unless every column has a name of its own."""
    seen: set[str] = set()
    for i, name in enumerate(names, start=1):
        if not name or "`" in name:
            raise CepoptError(f"{where}, line 1, column {i}: a column name must be non-empty and hold no backquote "
                              f"(got {name!r})")
        if name in seen:
            raise CepoptError(f"{where}, line 1: the header names column {name!r} twice (columns: "
                              f"{', '.join(names)})")
        seen.add(name)


def number_columns(header: Sequence[str], rows: Iterable[Sequence[str]]) -> tuple[str, ...]:
    """The attribute columns (not ts, not type) whose present values in ``rows`` are all numbers."""
    numeric = [c not in ("ts", "type") for c in header]
    for row in rows:
        for i, text in enumerate(row[:len(header)]):
            if numeric[i] and not is_missing(text) and number_problem(text) is not None:
                numeric[i] = False
    return tuple(c for c, n in zip(header, numeric, strict=True) if n)


def sample(lines: Iterable[str], where: str) -> tuple[list[str], list[list[str]]]:
    """(header, first :data:`SAMPLE_RECORDS` records) of CSV text given as lines; the header checked."""
    found = records(lines)
    first = next(found, None)
    if first is None:
        raise CepoptError(f"{where}: an empty CSV stream (no header row)")
    header = [first[1][0].removeprefix("\ufeff"), *first[1][1:]]  # a UTF-8 byte order mark is no part of a name
    check_header(header, where)
    return header, [row for _, row in itertools.islice(found, SAMPLE_RECORDS)]


def may_span_lines(path: Path) -> bool:
    """Whether a local CSV file holds a quote character (and so possibly a quoted line break): read in
    blocks at disk speed, so that Spark splits a file without one."""
    with path.open("rb") as fh:
        while block := fh.read(1 << 22):
            if b'"' in block:
                return True
    return False


def record_line(path: Path, index: int) -> int:
    """The line where data record ``index`` (0-based, after the header) of a local CSV file starts."""
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        for n, (line, _) in enumerate(records(fh)):
            if n == index + 1:
                return line
    return index + 2
