"""The exceptions a user can cause (the CLI prints their message on one line and exits 2), and the two
a method can raise: :class:`MethodLimitError` (reported as status "error") and
:class:`ObjectiveMismatchError` (a bug)."""

from __future__ import annotations


class CepoptError(Exception):
    """Base class of every error caused by user input (queries, files, options, statistics)."""


class QuerySyntaxError(CepoptError):
    """Query text that does not parse; the message names line and column."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(f"line {line}, column {column}: {message}")
        self.line = line
        self.column = column


class ModelError(CepoptError):
    """A domain object that is invalid (window <= 0, negative rate, unknown event type, ...)."""


class InstanceError(CepoptError):
    """A bad instance file; the message starts with the JSON path of the offending value."""


class UnknownNameError(CepoptError):
    """An unknown family, method, instance, generator or experiment."""


class MethodLimitError(Exception):
    """A method refuses an instance beyond its stated limits (exhaustive search on a large graph,
    an option cap exceeded, memory). solve() reports it as status "error" with the message."""


class ObjectiveMismatchError(AssertionError):
    """A solver's own objective disagrees with the family's cost model: always a bug."""
