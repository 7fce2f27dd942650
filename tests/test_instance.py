"""Instance files: load/save round trips and every error names its JSON path."""

import json
from pathlib import Path

import pytest

from cepopt import instances
from cepopt.errors import InstanceError
from cepopt.instance import (
    MAX_JSON_DEPTH,
    Instance,
    from_json,
    load,
    pattern_from_json,
    pattern_to_json,
    save,
    to_json,
)
from cepopt.model import Kleene, Not, Seq, Type

BASE = {
    "problem": "sharon",
    "name": "tiny",
    "queries": ["q1: RETURN COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] WITHIN 10 min SLIDE 1 min",
                "q2: PATTERN SEQ(A, B, D) WHERE [id] WITHIN 10 min SLIDE 1 min"],
    "statistics": {"rates": {"A": 1, "B": 2, "C": 3, "D": 4}},
    "params": {"expand": False},
    "expected": {"answer": 42},
    "stream": [{"ts": 1, "type": "A", "id": 1}, {"ts": 2, "type": "B", "id": 1}],
}


def doc(**changes):
    data = json.loads(json.dumps(BASE))
    data.update(changes)
    return data


def test_load_save_round_trip(tmp_path):
    inst = from_json(doc())
    assert inst.workload.names == ("q1", "q2") and inst.workload["q1"].window.length == 600
    path = save(inst, tmp_path / "x.json")
    again = load(path)
    assert again.workload == inst.workload and again.statistics == inst.statistics
    assert again.params == inst.params and again.expected == inst.expected and again.stream == inst.stream
    assert to_json(again) == to_json(inst)


def test_structured_queries_and_pattern_ast():
    data = doc(queries=[
        {"name": "a", "pattern": {"SEQ": [{"type": "A"}, {"KL": {"type": "B"}}, {"NOT": "C"}]},
         "return": ["COUNT(*)", "SUM(B.x)"], "where": ["[id]", "B.x > 3"], "group_by": "id",
         "within": "10 min", "slide": 60},
        {"pattern": "SEQ(A, D)", "within": 5},
    ])
    inst = from_json(data)
    q = inst.workload["a"]
    assert q.pattern == Seq((Type("A"), Kleene(Type("B")), Not(Type("C"))))
    assert q.window.length == 600 and q.window.slide == 60 and len(q.aggregates) == 2
    assert inst.workload.names == ("a", "q2")
    p = Seq((Type("A", "a"), Kleene(Type("B")), Not(Type("C"))))
    assert pattern_from_json(pattern_to_json(p)) == p


@pytest.mark.parametrize("changes,message", [
    ({"problem": "nope"}, "problem: unknown problem family 'nope' (known: gloria, hamlet, joinorder, sharon)"),
    ({"queries": []}, "queries"),
    ({"queries": [3]}, "queries[0]: 3 is not of type 'string'"),
    ({"queries": ["PATTERN SEQ(A, B) WITHIN 10", "PATTERN SEQ(A, Foo) WITHIN 10"]},
     "queries[1].pattern: unknown event type 'Foo'"),
    ({"queries": ["PATTERN SEQ(A, B WITHIN 10"]}, "queries[0]: line 1, column"),
    ({"queries": ["PATTERN SEQ(A, B) WITHIN 0"]}, "queries[0]"),
    ({"queries": [{"pattern": "SEQ(A, B)", "within": -1}]}, "queries[0]"),
    ({"queries": [{"pattern": "SEQ(A, B)", "within": "ten"}]}, "queries[0].within"),
    ({"statistics": {"rates": {"A": -1}}}, "statistics.rates.A: -1 is less than the minimum of 0"),
    ({"statistics": {"rates": {"A": "fast"}}}, "statistics.rates.A"),
    ({"statistics": {"selectivities": {"a,b": 2}}}, "statistics.selectivities.a,b"),
    ({"stream": [{"ts": "x", "type": "A"}]}, "stream[0].ts"),
    ({"stream": [{"ts": 1, "type": "Z"}]}, "stream[0].type: unknown event type 'Z'"),
    ({"bogus": 1}, "Additional properties are not allowed"),
    ({"queries": ["q1: PATTERN A WITHIN 1", "q1: PATTERN B WITHIN 1"]}, "queries: query name 'q1' is used twice"),
])
def test_errors_name_the_json_path(changes, message):
    with pytest.raises(InstanceError) as info:
        from_json(doc(**changes))
    assert message in str(info.value)


def test_event_types_declaration_limits_patterns():
    data = doc(event_types=["A", "B"], statistics={})
    with pytest.raises(InstanceError, match=r"queries\[0\].pattern: unknown event type 'C' \(not in event_types\)"):
        from_json(data)


def test_load_errors(tmp_path):
    with pytest.raises(InstanceError, match="no such file or bundled instance"):
        load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"problem": ')
    with pytest.raises(InstanceError, match="malformed JSON at line 1"):
        load(bad)


def test_every_bundled_instance_loads():
    for name in instances.names():
        inst = instances.load(name)
        assert isinstance(inst, Instance) and inst.name == name and len(inst.workload) >= 1


def test_bundled_instances_include_the_paper_examples():
    expected = {"sharon-fig4", "gloria-fig7", "hamlet-example"} | {f"joinorder-e{i}" for i in range(1, 7)}
    missing = expected - set(instances.names())
    assert not missing, f"bundled paper examples missing: {sorted(missing)}"


def write(tmp_path, content: str | bytes):
    path = tmp_path / "inst.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@pytest.mark.parametrize("content,message", [
    (b'{"problem": "sharon",\n "name": "caf\xe9"}', r"inst\.json:2: not UTF-8 text \(byte 0xe9\)"),
    ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),  # deeper than json's recursion limit
    ('{"problem": "sharon", "queries": "PATTERN A WITHIN 1", "statistics": {"rates": {"A": 1' + "0" * 5000 + "}}}",
     "a JSON integer has too many digits"),
    ('{"problem": "sharon", "queries": "PATTERN A WITHIN 1", "statistics": {"events_per_window": {"A": NaN}}}',
     "statistics: events per window of 'A' must be a finite number, got nan"),
    ('{"problem": "sharon", "queries": "PATTERN A WITHIN 1", "statistics": {"rates": {"A": Infinity}}}',
     "statistics: rate of 'A' must be a finite number, got inf"),
], ids=["non-utf8", "deep-nesting", "long-integer", "nan-per-window", "infinite-rate"])
def test_load_rejects_unreadable_json(tmp_path, content, message):
    with pytest.raises(InstanceError, match=message):
        load(write(tmp_path, content))


def kleene_ast(levels):
    pattern = {"type": "A"}
    for _ in range(levels):
        pattern = {"KL": pattern}
    return pattern


@pytest.mark.parametrize("changes,message", [
    ({"statistics": {"rates": {"A": 10**400, "B": 1, "C": 1, "D": 1}}}, "statistics: rate of 'A' is too large"),
    ({"statistics": {"rates": {"A": 1, "B": 1, "C": 1, "D": 1}, "events_per_window": {"A": float("nan")}}},
     "statistics: events per window of 'A' must be a finite number, got nan"),
    ({"statistics": {"rates": {"A": 1, "B": 1, "C": 1, "D": 1}, "events_per_window": {"A": float("inf")}}},
     "statistics: events per window of 'A' must be a finite number, got inf"),
    ({"queries": [{"pattern": "SEQ(A, B)", "within": "1e400"}]}, r"queries\[0\].within: .*duration is too large"),
    ({"queries": [{"pattern": "SEQ(A, B)", "within": 10**400}]}, r"queries\[0\].within: window length is too large"),
    ({"queries": [{"pattern": "SEQ(A, B)", "within": 5, "slide": float("inf")}]},
     r"queries\[0\].slide: window slide must be a finite number, got inf"),
    ({"queries": [{"pattern": kleene_ast(300), "within": 5}]}, "queries: nested more than 100 levels deep"),
    ({"params": {"x": kleene_ast(300)}}, "params: nested more than 100 levels deep"),
], ids=["huge-rate", "nan-per-window", "inf-per-window", "within-text-too-large", "within-huge-int", "slide-inf",
        "deep-pattern-ast", "deep-params"])
def test_huge_non_finite_and_deep_values(changes, message):
    with pytest.raises(InstanceError, match=message):
        from_json(doc(**changes))


def test_json_pattern_nesting_up_to_the_limit_validates():
    # The depth check must come before jsonschema overflows: the deepest accepted AST validates.
    inst = from_json(doc(queries=[{"pattern": kleene_ast(MAX_JSON_DEPTH - 5), "within": 5}]))
    assert inst.workload[0].pattern.event_types() == ("A",)


@pytest.mark.parametrize("document,message", [
    ([{"problem": "sharon"}] * 1000, r"^\(top level\): must be a JSON object, not an array$"),
    ("x" * 10_000, r"^\(top level\): must be a JSON object, not a string$"),
    (doc(statistics=[1] * 1000), r"^statistics: must be a JSON object, not an array$"),
], ids=["top-level-array", "top-level-string", "statistics-array"])
def test_type_errors_name_the_type_instead_of_echoing_the_value(document, message):
    with pytest.raises(InstanceError, match=message):
        from_json(document)


@pytest.mark.parametrize("changes,message", [
    ({"event_types": ["A"], "queries": "q1: PATTERN SEQ(A a, B b) WITHIN 5", "statistics": {"rates": {"A": 1}}},
     r"queries \(query q1\).pattern: unknown event type 'B' \(not in event_types\)"),
    ({"event_types": ["A"], "queries": "q1: PATTERN SEQ(A a, B b) WITHIN 5", "statistics": {"rates": {"A": 1, "B": 1}}},
     r"statistics.rates.B: unknown event type 'B' \(not in event_types\)"),
    ({"event_types": ["A"], "queries": "q1: PATTERN A WITHIN 5",
      "statistics": {"rates": {"A": 1}, "events_per_window": {"C": 1}}},
     r"statistics.events_per_window.C: unknown event type 'C' \(not in event_types\)"),
    ({"event_types": [], "queries": "q1: PATTERN A WITHIN 5", "statistics": {}},
     r"queries \(query q1\).pattern: unknown event type 'A' \(not in event_types\)"),
    ({"event_types": ["A"], "queries": "q1: PATTERN A WITHIN 5", "statistics": {"rates": {"A": 1}},
      "stream": [{"ts": 1, "type": "B"}]}, r"stream\[0\].type: unknown event type 'B'"),
], ids=["query", "rate", "events-per-window", "empty-declaration", "stream"])
def test_declared_event_types_are_the_whole_vocabulary(changes, message):
    data = {"problem": "joinorder", **changes}
    with pytest.raises(InstanceError, match=message):
        from_json(data)
    declared = from_json({**data, "event_types": ["A", "B", "C"]})
    assert declared.event_types == ("A", "B", "C")


def test_save_reports_os_errors(tmp_path):
    inst = from_json(doc())
    (tmp_path / "file.json").write_text("{}")
    with pytest.raises(InstanceError, match=f"{tmp_path}: cannot write: Is a directory"):
        save(inst, tmp_path)
    with pytest.raises(InstanceError, match="file.json/x.json: cannot write: Not a directory"):
        save(inst, tmp_path / "file.json" / "x.json")
    if Path("/dev/full").exists():
        with pytest.raises(InstanceError, match="/dev/full: cannot write: No space left on device"):
            save(inst, "/dev/full")
    assert load(save(inst, tmp_path / "new" / "dir" / "x.json")).workload == inst.workload


def test_selectivities_name_variables_or_types_of_the_queries():
    base = {"problem": "joinorder", "queries": "q1: PATTERN SEQ(T1 a, T2 b) WHERE a.v < b.v WITHIN 5",
            "statistics": {"rates": {"T1": 1, "T2": 2}}}
    for key in ("a,b", "T1,T2", "a", "b,b"):  # variables, types, a filter (one reference, or twice)
        inst = from_json({**base, "statistics": {**base["statistics"], "selectivities": {key: 0.5}}})
        assert inst.statistics.selectivities
    with pytest.raises(InstanceError, match="selectivities.a,zz: 'zz' is neither an event type nor a variable"):
        from_json({**base, "statistics": {**base["statistics"], "selectivities": {"a,zz": 0.5}}})


@pytest.mark.parametrize("declared,message", [
    (["A", "A"], "'A' is declared twice"),
    (["A", "1x"], "must be an identifier, got '1x'"),
    (["A", "SEQ"], "reserved word"),
])
def test_declared_event_types_are_unique_identifiers(declared, message):
    with pytest.raises(InstanceError, match=f"event_types: .*{message}"):
        from_json({"problem": "joinorder", "event_types": declared, "queries": "q1: PATTERN A WITHIN 5",
                   "statistics": {"rates": {"A": 1}}})
