"""The cepopt command: help, listings, and one-line errors with exit status 2 for user mistakes."""

import json
import subprocess
import sys

import pytest

from cepopt.cli import main, parse_param


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(code, err, fragment):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cepopt: error: ") and fragment in lines[0]
    assert "Traceback" not in err


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("solve", "compare", "generate", "import", "execute", "experiment", "demo", "methods", "instances"):
        assert command in out


def test_methods_and_instances_listings(capsys):
    code, out, _ = run(capsys, "methods")
    assert code == 0
    for family in ("sharon", "gloria", "hamlet", "joinorder"):
        assert f"{family}:" in out
    code, out, _ = run(capsys, "instances")
    assert code == 0


@pytest.fixture
def files(tmp_path):
    good = {"problem": "sharon", "queries": ["PATTERN SEQ(A, B) WITHIN 10"], "statistics": {"rates": {"A": 1, "B": 1}}}
    paths = {}
    for name, content in {
        "malformed": '{"problem": "sharon", ',
        "schema": json.dumps({"problem": "sharon", "queries": [1]}),
        "unknown_type": json.dumps({**good, "queries": ["PATTERN SEQ(A, Foo) WITHIN 10"]}),
        "negative_rate": json.dumps({**good, "statistics": {"rates": {"A": -1, "B": 1}}}),
        "zero_window": json.dumps({**good, "queries": ["PATTERN SEQ(A, B) WITHIN 0"]}),
        "bad_query": json.dumps({**good, "queries": ["PATTERN SEQ(A, B WITHIN 10"]}),
    }.items():
        path = tmp_path / f"{name}.json"
        path.write_text(content)
        paths[name] = str(path)
    return paths


@pytest.mark.parametrize("case,fragment", [
    ("malformed", "malformed JSON at line 1"),
    ("schema", "queries[0]: 1 is not of type 'string'"),
    ("unknown_type", "queries[0].pattern: unknown event type 'Foo'"),
    ("negative_rate", "statistics.rates.A"),
    ("zero_window", "window length must be > 0"),
    ("bad_query", "line 1, column"),
])
def test_bad_instance_files(capsys, files, case, fragment):
    code, _, err = run(capsys, "solve", files[case], "--method", "greedy")
    assert_user_error(code, err, fragment)


@pytest.mark.parametrize("argv,fragment", [
    (["solve", "/nonexistent/file.json", "-m", "greedy"], "no such file or bundled instance"),
    (["solve", "no-such-instance", "-m", "greedy"], "no such file or bundled instance"),
    (["solve"], "the following arguments are required"),
    (["frobnicate"], "invalid choice"),
    (["solve", "x.json", "-m", "greedy", "--param", "novalue"], "KEY=VALUE"),
    (["experiment", "no-such-experiment"], "unknown experiment"),
    (["generate", "no-such-family", "-o", "x.json"], "unknown problem family"),
])
def test_bad_command_lines(capsys, argv, fragment):
    code, _, err = run(capsys, *argv)
    assert_user_error(code, err, fragment)


def test_unknown_method_on_a_bundled_instance(capsys):
    from cepopt import instances

    if not instances.names():
        pytest.skip("no bundled instance yet")
    name = instances.names()[0]
    code, _, err = run(capsys, "solve", name, "--method", "no-such-method")
    assert_user_error(code, err, "unknown method 'no-such-method'")


def test_param_values_are_read_as_json():
    assert parse_param("expand=false") == ("expand", False)
    assert parse_param("x=0.5") == ("x", 0.5)
    assert parse_param("backend=highs") == ("backend", "highs")
    assert parse_param(" k = [1,2] ") == ("k", [1, 2])


def test_console_script_prints_one_line_on_error(files):
    proc = subprocess.run([sys.executable, "-m", "cepopt.cli", "solve", files["malformed"], "-m", "greedy"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
