"""Instance and stream generators: `cepopt generate hamlet`, `generate --list/--help`, and every
generator's parameters checked against a stated maximum before it runs (issues 19 part 4, 21 part 5)."""

from __future__ import annotations

import json

import pytest

from cepopt.cli import main
from cepopt.errors import CepoptError
from cepopt.instances.generate import generate


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_generate_hamlet_embeds_a_bursty_stream_that_the_optimizer_prices(tmp_path, capsys):
    path = tmp_path / "h.json"
    code, out, _ = run(capsys, "generate", "hamlet", "--queries", "6", "--events", "600", "--seed", "3", "-o",
                       str(path))
    assert code == 0 and "hamlet, 6 queries" in out
    data = json.loads(path.read_text())
    assert data["problem"] == "hamlet" and len(data["stream"]) == 600
    assert all("T0+" in q for q in data["queries"])  # one shared Kleene type
    code, out, _ = run(capsys, "solve", str(path), "--method", "optimal", "--json")
    sol = json.loads(out)
    assert code == 0 and sol["status"] == "optimal"
    code, out, _ = run(capsys, "solve", str(path), "--method", "nonshared", "--json")
    assert json.loads(out)["objective"] >= sol["objective"]


def test_generate_hamlet_with_burst_statistics_only(tmp_path, capsys):
    path = tmp_path / "hb.json"
    assert run(capsys, "generate", "hamlet", "--bursts", "--filtered", "0.5", "--aggregate",
               "mixed", "-o", str(path))[0] == 0
    data = json.loads(path.read_text())
    assert "stream" not in data and data["params"]["bursts"]
    assert all({"type", "queries", "b", "n"} <= set(b) for b in data["params"]["bursts"])
    code, out, _ = run(capsys, "compare", str(path), "--json")
    assert code == 0 and {s["method"] for s in json.loads(out)} >= {"dynamic", "optimal"}


def test_generate_hamlet_is_deterministic_in_the_seed():
    a, b = generate("hamlet", seed=5, events=300), generate("hamlet", seed=5, events=300)
    assert a.stream == b.stream and a.workload == b.workload
    assert generate("hamlet", seed=6, events=300).stream != a.stream


def test_generate_help_and_list_exit_0(capsys):
    code, out, _ = run(capsys, "generate", "--help")
    assert code == 0 and "cepopt generate FAMILY" in out
    code, out, _ = run(capsys, "generate", "hamlet", "--help")
    assert code == 0 and "--burst" in out
    code, out, _ = run(capsys, "generate", "--list")
    assert code == 0
    for name in ("sharon", "gloria", "joinorder", "hamlet", "bursty", "ecommerce", "workload", "stock"):
        assert f"  {name} " in out
    assert "--size 6 (<= 1000)" in out and "events=10000" in out


@pytest.mark.parametrize("argv,message", [
    (["joinorder", "--size", "99999"], "argument --size: at most 1000"),
    (["joinorder", "--size", "1.5"], "argument --size: expected an integer"),
    (["joinorder", "--window", "nan"], "argument --window: expected a finite number"),
    (["joinorder", "--rate-max", "1" + "0" * 400], "argument --rate-max: expected a finite number"),
    (["sharon", "--queries", "100000", "--length", "1000"], "--queries x --length = 100000000 is above"),
    (["sharon", "--length", "5000"], "argument --length: at most 1000"),
    (["gloria", "--queries", "9999999"], "argument --queries: at most 100000"),
    (["hamlet", "--events", "99999999"], "argument --events: at most 200000"),
    (["hamlet", "--queries", "1000", "--events", "200000"], "--queries x --events = 200000000 is above"),
    (["hamlet", "--rate", "1"], "the stream would span about 2001 windows (at most 200)"),
    (["hamlet", "--queries", "1"], "--queries: must be >= 2"),
    (["hamlet", "--kleene-type", "SEQ"], "--kleene-type: event type 'SEQ' is a reserved word"),
    (["hamlet", "--slide", "100"], "need 0 < slide <= window"),
    (["sharon", "--seed", "-1"], "argument --seed: must be an integer in [0, 2147483647]"),
    (["sharon", "--seed", "99999999999"], "argument --seed: must be an integer in [0, 2147483647]"),
])
def test_generator_flags_are_checked_before_the_generator_runs(argv, message, capsys, tmp_path):
    code, out, err = run(capsys, "generate", *argv, "-o", str(tmp_path / "x.json"))
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("spec,message", [
    ("gen:workload:events=x", "stream gen:workload: events: expected an integer, got 'x'"),
    ("gen:workload:events=1.5", "stream gen:workload: events: expected an integer, got 1.5"),
    ("gen:workload:events=99999999999", "events: at most 5000000"),
    ("gen:bursty:types=99999999", "types: at most 5000000"),
    ("gen:ecommerce:rate=1e999", "rate: expected a finite number"),
    ("gen:ecommerce:rate=" + "9" * 400, "rate: expected a finite number"),
    ("gen:stock:seed=-1", "seed: must be an integer in [0, 2147483647]"),
    ("gen:ecommerce:bogus=1", "has no parameter 'bogus'"),
    ("gen:bursty:kleene=" + "x" * 20000, "kleene: at most 10000 characters"),
])
def test_stream_generator_parameters_are_one_clear_line(spec, message):
    from cepopt.executor.streams import resolve_stream_pandas
    from cepopt.instance import load

    with pytest.raises(CepoptError) as info:
        resolve_stream_pandas(spec, load("sharon-fig4"))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_workload_stream_unit_counts_rates_per_unit_time_units():
    """``unit``: the rates count events per ``unit`` time units (Sharon's per-window unit with unit = W):
    the same draws over a span ``unit`` times longer, so events of one type seldom share a time stamp."""
    from cepopt.instances.streams import generate as generate_stream

    inst = generate("sharon", ["--queries", "5", "--length", "4", "--seed", "1"])
    per_second = generate_stream("workload", instance=inst, events=3000, seed=1)
    per_window = generate_stream("workload", instance=inst, events=3000, seed=1, unit=600)
    assert per_window["type"].tolist() == per_second["type"].tolist()
    span = lambda df: df["ts"].max() - df["ts"].min() + 1  # noqa: E731
    assert 590 * span(per_second) <= span(per_window) <= 610 * span(per_second)
    rates = inst.statistics.rate_map
    windows = span(per_window) / 600
    for event_type, n in per_window["type"].value_counts().items():  # about its rate per window
        assert abs(n / windows - rates[event_type]) <= 0.25 * rates[event_type] + 1
    shared = per_window.duplicated(["ts", "type"]).mean()
    assert shared < 0.05 < per_second.duplicated(["ts", "type"]).mean()
