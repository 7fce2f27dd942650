"""JSON instance files: one format for every family (``"problem"``: a family registered in the
``cepopt.families`` entry-point group, such as ``sharon``), validated against
``cepopt/schema/instance.schema.json`` and then semantically.

Every error is an :class:`~cepopt.errors.InstanceError` whose message starts with the JSON path of the
offending value, e.g. ``queries[3].pattern: unknown event type 'Foo'``.

>>> inst = from_json({"problem": "sharon", "queries": "q1: PATTERN SEQ(A, B) WITHIN 10",
...                   "statistics": {"rates": {"A": 1, "B": 2}}})
>>> inst.workload.names, inst.statistics.rate("B")
(('q1',), 2)
>>> from_json({"problem": "sharon", "queries": ["PATTERN SEQ(A, Foo) WITHIN 10"],
...            "statistics": {"rates": {"A": 1}}})
Traceback (most recent call last):
...
cepopt.errors.InstanceError: queries[0].pattern: unknown event type 'Foo' (not in statistics.rates)
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from cepopt import entry_points
from cepopt.errors import CepoptError, InstanceError, ModelError, QuerySyntaxError
from cepopt.model import And, Kleene, Not, Or, Pattern, Query, Seq, Statistics, Type, Workload, check_window_number
from cepopt.textio import read_json

__all__ = ["Instance", "bundled_dir", "bundled_names", "bundled_path", "check_writable", "from_json", "load", "save",
           "to_json", "schema", "pattern_from_json", "pattern_to_json", "shown_path"]

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "instance.schema.json"
# jsonschema spends 6-8 stack frames per level of a pattern AST, so JSON cannot have the text
# parser's MAX_PATTERN_DEPTH: deeper documents would overflow Python's 1000-frame stack.
MAX_JSON_DEPTH = 100
#: the integers an embedded stream's attribute may hold: int64, as its time stamps (the schema)
STREAM_INT_LIMIT = 2**63


@dataclass(frozen=True, eq=False)
class Instance:
    """A plan-selection instance: the family, the workload, the statistics and family data.

    ``params`` is family-specific and validated by the family's problem builder; ``expected`` holds
    the paper's numbers for tests; ``stream`` an optional small embedded stream (event dicts).
    """

    problem: str
    workload: Workload
    statistics: Statistics = field(default_factory=Statistics)
    name: str | None = None
    description: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    expected: Mapping[str, Any] = field(default_factory=dict)
    stream: tuple[dict, ...] | None = None
    event_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        known = entry_points.names("families")
        if self.problem not in known:
            raise InstanceError(f"problem: unknown problem family {self.problem!r} (known: {', '.join(known)})")
        if self.stream is not None:
            object.__setattr__(self, "stream", tuple(self.stream))
        object.__setattr__(self, "event_types", tuple(self.event_types))

    def replace(self, **changes: Any) -> Instance:
        fields = {k: getattr(self, k) for k in self.__dataclass_fields__}
        fields.update(changes)
        return Instance(**fields)


@cache
def schema() -> dict:
    """The instance JSON Schema shipped with the package."""
    return json.loads(SCHEMA_PATH.read_text())


def _json_path(parts) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _check_depth(data: Any) -> None:
    """Reject nesting deeper than MAX_JSON_DEPTH under a top-level key (checked level by level,
    without recursion)."""
    for key, value in data.items():
        level = [value]
        for _ in range(MAX_JSON_DEPTH):
            level = [item for node in level if isinstance(node, dict | list)
                     for item in (node.values() if isinstance(node, dict) else node)]
            if not level:
                break
        else:
            raise InstanceError(f"{key}: nested more than {MAX_JSON_DEPTH} levels deep")


def _validate_schema(data: Any) -> None:
    import jsonschema

    if isinstance(data, dict):
        _check_depth(data)
    validator = jsonschema.Draft202012Validator(schema())
    errors = list(validator.iter_errors(data))
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors)
    # Descend into oneOf alternatives to the most specific message.
    while error.context:
        error = jsonschema.exceptions.best_match(error.context)
    message = error.message
    found = {dict: "an object", list: "an array", str: "a string"}.get(type(error.instance))
    if error.validator == "type" and found:  # name the type rather than echo a value of any length
        wanted = error.validator_value
        wanted = " or ".join(wanted) if isinstance(wanted, list) else wanted
        message = f"must be a JSON {wanted}, not {found}"
    raise InstanceError(f"{_json_path(error.absolute_path)}: {message}")


def pattern_from_json(data: Any) -> Pattern:
    """A pattern from its text or its JSON AST (see the schema)."""
    from cepopt.syntax import parse_pattern

    if isinstance(data, str):
        return parse_pattern(data)
    if "type" in data:
        return Type(data["type"], data.get("var"))
    ((op, arg),) = data.items()
    if op in ("KL", "NOT"):
        return (Kleene if op == "KL" else Not)(pattern_from_json(arg))
    items = tuple(pattern_from_json(item) for item in arg)
    return {"SEQ": Seq, "AND": And, "OR": Or}[op](items)


def pattern_to_json(pattern: Pattern) -> Any:
    if isinstance(pattern, Type):
        return {"type": pattern.name, **({"var": pattern.var} if pattern.var else {})}
    if isinstance(pattern, Kleene | Not):
        return {"KL" if isinstance(pattern, Kleene) else "NOT": pattern_to_json(pattern.inner)}
    return {type(pattern).__name__.upper(): [pattern_to_json(p) for p in pattern.items]}


def _structured_query(entry: Mapping, path: str) -> Query:
    """A query given as an object of clauses; each clause is parsed by the query language."""
    from cepopt import syntax

    def text(value: Any) -> str:
        return value if isinstance(value, str) else ", ".join(value)

    try:
        pattern = pattern_from_json(entry["pattern"])
    except (QuerySyntaxError, ModelError) as exc:
        raise InstanceError(f"{path}.pattern: {exc}") from None
    parts = [f"PATTERN {syntax.format_pattern(pattern)}"]
    if "return" in entry:
        parts.insert(0, f"RETURN {text(entry['return'])}")
    if "where" in entry:
        where = entry["where"]
        parts.append("WHERE " + (where if isinstance(where, str) else " AND ".join(where)))
    if "group_by" in entry:
        parts.append(f"GROUP-BY {text(entry['group_by'])}")
    for key in ("within", "slide"):
        if key in entry:
            value = entry[key]
            try:
                seconds = syntax.parse_duration(value) if isinstance(value, str) else value
                check_window_number(seconds, "length" if key == "within" else "slide")
            except (QuerySyntaxError, ModelError) as exc:
                raise InstanceError(f"{path}.{key}: {exc}") from None
            parts.append(f"{key.upper()} {seconds}")
    name = entry.get("name")
    source = (f"{name}: " if name else "") + " ".join(parts)
    try:
        return syntax.parse_query(source)
    except CepoptError as exc:
        raise InstanceError(f"{path}: {exc}") from None


def _parse_queries(data: Any) -> tuple[Workload, list[str]]:
    from cepopt import syntax

    if isinstance(data, str):
        try:
            workload = syntax.parse_queries(data)
        except CepoptError as exc:
            raise InstanceError(f"queries: {exc}") from None
        return workload, [f"queries (query {q.name})" for q in workload]
    queries, paths = [], []
    for i, entry in enumerate(data):
        path = f"queries[{i}]"
        if isinstance(entry, str):
            try:
                query = syntax.parse_query(entry)
            except CepoptError as exc:
                raise InstanceError(f"{path}: {exc}") from None
        else:
            query = _structured_query(entry, path)
        queries.append(query)
        paths.append(path)
    try:
        return Workload(tuple(queries)), paths
    except ModelError as exc:
        raise InstanceError(f"queries: {exc}") from None


def _check_stream_integers(stream: Any) -> None:
    """Attribute integers of an embedded stream within 64 bits, as its time stamps (the schema): the
    engines hold them in int64 columns (pandas, Spark's long), and 10^400 is no float either."""
    for i, event in enumerate(stream or ()):
        for key, value in event.items():
            if type(value) is int and not -STREAM_INT_LIMIT <= value < STREAM_INT_LIMIT:
                shown = value if abs(value) < 10**30 else f"of {value.bit_length()} bits"  # str() stops at 4300 digits
                raise InstanceError(f"stream[{i}].{key}: the integer {shown} is beyond the 64-bit range of a "
                                    "stream attribute")


def from_json(data: Any) -> Instance:
    """Validate a decoded JSON document and build the Instance."""
    _validate_schema(data)
    _check_stream_integers(data.get("stream"))
    workload, paths = _parse_queries(data["queries"])
    try:
        statistics = Statistics.from_json(data.get("statistics", {}))
    except ModelError as exc:
        raise InstanceError(f"statistics: {exc}") from None
    refs = frozenset().union(*(q.refs() for q in workload))
    for pair, _ in statistics.selectivities:
        for ref in pair:
            if ref not in refs:  # a typo here would silently leave the condition at selectivity 1
                raise InstanceError(f"statistics.selectivities.{','.join(dict.fromkeys(pair))}: {ref!r} is "
                                    "neither an event type nor a variable of the queries")
    declared = data.get("event_types")
    if declared is not None:
        declared = tuple(declared)
        for name in declared:
            try:
                Type(name)  # an event type must be a name the query language can write
            except ModelError as exc:
                raise InstanceError(f"event_types: {exc}") from None
        once: set[str] = set()
        twice: set[str] = set()
        for name in declared:  # a set, not declared.count(name) per name: loading stays linear
            (twice if name in once else once).add(name)
        if twice:
            raise InstanceError(f"event_types: {sorted(twice)[0]!r} is declared twice")
        known, source = set(declared), "event_types"
        # The declaration is the whole vocabulary: the statistics may not name other types either.
        for key in ("rates", "events_per_window"):
            for name, _ in getattr(statistics, key):
                if name not in known:
                    raise InstanceError(f"statistics.{key}.{name}: unknown event type {name!r} (not in event_types)")
    else:
        known, source = {name for name, _ in statistics.rates}, "statistics.rates"
    if declared is not None or known:  # else there is nothing to check against
        for query, path in zip(workload, paths, strict=True):
            for name in query.pattern.event_types():
                if name not in known:
                    raise InstanceError(f"{path}.pattern: unknown event type {name!r} (not in {source})")
        for i, event in enumerate(data.get("stream") or ()):
            if event["type"] not in known:
                raise InstanceError(f"stream[{i}].type: unknown event type {event['type']!r}")
    return Instance(
        problem=data["problem"], workload=workload, statistics=statistics, name=data.get("name"),
        description=data.get("description", ""), params=dict(data.get("params", {})),
        expected=dict(data.get("expected", {})), stream=data.get("stream"), event_types=declared or (),
    )


def to_json(instance: Instance) -> dict:
    """The JSON document of ``instance`` (queries in canonical query text)."""
    from cepopt.syntax import format_query

    out: dict[str, Any] = {"problem": instance.problem}
    if instance.name:
        out["name"] = instance.name
    if instance.description:
        out["description"] = instance.description
    if instance.event_types:
        out["event_types"] = list(instance.event_types)
    out["queries"] = [format_query(q) for q in instance.workload]
    out["statistics"] = instance.statistics.to_json()
    if instance.params:
        out["params"] = dict(instance.params)
    if instance.expected:
        out["expected"] = dict(instance.expected)
    if instance.stream is not None:
        out["stream"] = list(instance.stream)
    return out


@cache
def bundled_dir() -> Path:
    """The folder of the bundled instances: ``data/`` of the package :mod:`cepopt.instances` (located,
    not imported: that package builds on this module)."""
    spec = importlib.util.find_spec("cepopt.instances")
    if spec is None or not spec.submodule_search_locations:
        raise CepoptError("the package cepopt.instances is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def bundled_names() -> list[str]:
    """Names of the bundled instances (paper examples)."""
    return sorted(p.stem for p in bundled_dir().glob("*.json"))


def bundled_path(name: str) -> Path | None:
    """The file of bundled instance ``name``, or None."""
    path = bundled_dir() / f"{name}.json"
    return path if path.is_file() else None


def shown_path(source: str | Path, limit: int = 200) -> str:
    """``source`` as an error message shows it: at most ``limit`` characters, on one line.

    >>> shown_path("x" * 300, 20)
    'xxxxxxxx...xxxxxxxxx (300 characters)'
    """
    text = str(source)
    if len(text) <= limit and text.isprintable():
        return text
    text = repr(text)[1:-1] if not text.isprintable() else text
    if len(text) <= limit:
        return text
    half = (limit - 3) // 2
    return f"{text[:half]}...{text[-(limit - 3 - half):]} ({len(str(source))} characters)"


def _exists(path: Path, source: str | Path) -> bool:
    """Whether ``path`` exists; a name the system refuses (too long, a NUL byte) is an InstanceError."""
    try:
        return path.exists()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or "not a valid file name"
        raise InstanceError(f"{shown_path(source)}: cannot read: {reason}") from None


def load(source: str | Path) -> Instance:
    """Load an instance from a JSON file path, or a bundled instance by name."""
    if not isinstance(source, str | Path):
        raise InstanceError(f"instance: expected a file name or a bundled instance name, got {type(source).__name__}")
    path = Path(source)
    if not _exists(path, source):
        bundled = bundled_path(str(source)) if len(str(source)) < 200 and "/" not in str(source) else None
        if bundled is None:
            raise InstanceError(f"{shown_path(source)}: no such file or bundled instance (see `cepopt instances`)")
        path = bundled
    data = read_json(path, shown_path(source), error=InstanceError)
    try:
        return from_json(data)
    except InstanceError as exc:
        raise InstanceError(f"{path.name}: {exc}") from None


def check_writable(path: str | Path) -> Path:
    """``path`` as a file :func:`save` can write, checked before any work: not a folder, and its nearest
    existing ancestor a folder (errors worded as save's)."""
    path = Path(path)
    if path.is_dir():
        raise InstanceError(f"{path}: cannot write: Is a directory")
    ancestor = next((p for p in path.parents if p.exists()), None)
    if ancestor is not None and not ancestor.is_dir():
        raise InstanceError(f"{path}: cannot write: Not a directory")
    return path


def save(instance: Instance, path: str | Path) -> Path:
    path = Path(path)
    text = json.dumps(to_json(instance), indent=2) + "\n"
    try:
        if not path.parent.exists():
            path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InstanceError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path
