"""Instance files: load/save round trips and every error names its JSON path."""

import json

import pytest

from cepopt import instances
from cepopt.errors import InstanceError
from cepopt.instance import Instance, from_json, load, pattern_from_json, pattern_to_json, save, to_json
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
    ({"problem": "nope"}, "problem: 'nope' is not one of"),
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
