"""Fuzzing instance JSON: every bundled instance (and a generated one per family) with random edits
goes through load -> build -> solve with a random method of its family. Each step gives a result or a
CepoptError, and the command line exits 0 or 2 with one line."""

from __future__ import annotations

import json
from functools import cache

from hypothesis import given
from hypothesis import strategies as st

from cepopt.instance import Instance, from_json, to_json
from cepopt.instances import names as bundled_names
from cepopt.instances.generate import generate
from cepopt.solution import Solution
from cepopt.solve import build_problem, methods, solve
from tests.fuzz.budget import budget
from tests.fuzz.strategies import cli, dumps, json_values, mutated, outcome


@cache
def base_documents() -> tuple[dict, ...]:
    from cepopt.instance import bundled_path

    docs = [json.loads(bundled_path(name).read_text()) for name in bundled_names()]
    small = {"sharon": {"queries": 5, "length": 4}, "gloria": {"queries": 3}, "joinorder": {"size": 4},
             "hamlet": {"queries": 3, "events": 120}}
    docs += [to_json(generate(family, seed=1, **options)) for family, options in small.items()]
    return tuple(docs)


documents = st.integers(0, 100).flatmap(lambda i: mutated(base_documents()[i % len(base_documents())]))


def solve_document(doc, method_index: int, params: dict) -> None:
    instance = outcome(from_json, doc)
    if not isinstance(instance, Instance):
        return
    table = methods(instance.problem)
    method = list(table)[method_index % len(table)]
    built = outcome(build_problem, instance, params)
    if isinstance(built, Exception):
        return
    result = outcome(solve, instance, method, time_limit=1.0, params=params)
    assert isinstance(result, Solution | Exception)


@budget(60)
@given(documents, st.integers(0, 20))
def test_instance_documents(doc, method_index):
    solve_document(doc, method_index, {})


@budget(15)
@given(json_values)
def test_any_json_value_as_an_instance(value):
    outcome(from_json, value)


@budget(25)
@given(documents, st.integers(0, 20), st.booleans())
def test_instance_files_on_the_command_line(capsys, tmp_path_factory, doc, method_index, compare):
    path = tmp_path_factory.mktemp("inst") / "i.json"
    path.write_text(dumps(doc))
    instance = outcome(from_json, doc)
    family = instance.problem if isinstance(instance, Instance) else "sharon"
    method = list(methods(family))[method_index % len(methods(family))]
    argv = ["compare", path] if compare else ["solve", path, "--method", method]
    cli(capsys, [*argv, "--time-limit", "1", "--json"])


@budget(10)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_bytes_that_are_not_json(capsys, tmp_path_factory, data):
    path = tmp_path_factory.mktemp("raw") / "raw.json"
    path.write_bytes(data)
    cli(capsys, ["solve", path, "--method", "greedy"])
