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
    assert main(["--help"]) == 0  # argparse's SystemExit(0) is main's return value (in-process callers)
    out = capsys.readouterr().out
    for command in ("solve", "compare", "generate", "import", "execute", "experiment", "demo", "methods", "instances"):
        assert command in out


def test_methods_and_instances_listings(capsys):
    code, out, _ = run(capsys, "methods")
    assert code == 0
    for family in ("sharon", "gloria", "hamlet", "joinorder"):
        assert f"{family}:" in out
    # each method's options with their defaults, as they are typed after --param
    assert "--param reduction=paper, per_component=false, max_level=1000000" in out
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
        "slide_over_window": json.dumps({**good, "queries": ["PATTERN SEQ(A, B) WITHIN 10 SLIDE 20"]}),
        "slide_over_within": json.dumps({**good, "queries": [{"pattern": "SEQ(A, B)", "within": 10, "slide": 20}]}),
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
    ("slide_over_window", "line 1, column 19: window slide 20 is larger than window length 10"),
    ("slide_over_within", "queries[0]: line 1, column 19: window slide 20 is larger than window length 10"),
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


def test_hamlet_empty_bursts_are_a_user_error(capsys, tmp_path):
    path = tmp_path / "hamlet.json"
    path.write_text(json.dumps({"problem": "hamlet", "queries": ["q1: PATTERN SEQ(A, B+) WITHIN 10 SLIDE 10",
                                                                 "q2: PATTERN SEQ(C, B+) WITHIN 10 SLIDE 10"],
                                "params": {"bursts": []}}))
    code, _, err = run(capsys, "solve", str(path), "--method", "dynamic")
    assert_user_error(code, err, "params.bursts: empty; give at least one burst")


def test_unknown_method_on_a_bundled_instance(capsys):
    from cepopt import instances

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


@pytest.mark.parametrize("instance,method,param,fragment", [
    ("sharon-fig4", "cpsat", "workers=abc", "expected an integer, got 'abc'"),
    ("sharon-fig4", "bruteforce", "max_sets=abc", "expected an integer, got 'abc'"),
    ("sharon-fig4", "sharon", "max_level=abc", "expected an integer, got 'abc'"),
    ("sharon-fig4", "cpsat", "workers=-3", "must be >= 1, got -3"),
    ("sharon-fig4", "bruteforce", "max_sets=0", "must be >= 1, got 0"),
    ("sharon-fig4", "sharon", "max_level=-1", "must be >= 1, got -1"),
    ("sharon-fig4", "sharon", "reduction=nope", "expected one of paper, recompute, literal, got 'nope'"),
    ("gloria-fig7", "gloria", "max_nodes=abc", "expected an integer, got 'abc'"),
    ("gloria-fig7", "gloria", "max_nodes=-1", "must be >= 1, got -1"),
    ("gloria-fig7", "cpsat", "workers=-3", "must be >= 1, got -3"),
    ("gloria-fig7", "cpsat", "workers=[1]", "expected an integer, got [1]"),
    ("gloria-fig7", "exhaustive", "max_options=abc", "expected an integer, got 'abc'"),
    ("gloria-fig7", "exhaustive", "max_plans=-1", "must be > 0, got -1"),
    ("gloria-fig7", "greedy", "tie=maybe", "expected one of share, nonshare, got 'maybe'"),
    ("joinorder-e6", "ii-random", "restarts=abc", "expected an integer, got 'abc'"),
    ("joinorder-e6", "ii-random", "max_evals=-1", "must be >= 1, got -1"),
    ("joinorder-e6", "dp-ld", "max_n=-1", "must be >= 1, got -1"),
    ("joinorder-e6", "milp-order", "max_iters=abc", "expected an integer, got 'abc'"),
    ("joinorder-e6", "milp-order", "tol=-1", "must be >= 0, got -1"),
    ("joinorder-e6", "cpsat-order", "workers=1e400", "expected an integer, got inf"),
    ("joinorder-e6", "cpsat-order", "scale=0", "must be > 0, got 0"),
    ("joinorder-e6", "cpsat-order", "scale=-1", "must be > 0, got -1"),
])
def test_bad_method_option_values(capsys, instance, method, param, fragment):
    code, _, err = run(capsys, "solve", instance, "-m", method, "--param", param)
    assert_user_error(code, err, f"params.{param.partition('=')[0]} (method '{method}'): {fragment}")


@pytest.mark.parametrize("argv,fragment", [
    (["--param", "bogus=1"], "no compared method has option 'bogus'"),
    (["--methods", "greedy", "--param", "bogus=1"], "no compared method has option 'bogus'"),
    (["--methods", ","], "no method"),
])
def test_compare_refuses_unknown_options_and_no_methods(capsys, argv, fragment):
    code, _, err = run(capsys, "compare", "sharon-fig4", *argv)
    assert_user_error(code, err, fragment)


def test_an_option_of_one_compared_method_is_accepted(capsys):
    code, out, _ = run(capsys, "compare", "joinorder-e6", "--methods", "greedy,dp-ld", "--param", "max_n=2e1")
    assert code == 0 and "dp-ld" in out and "optimal" in out


@pytest.mark.parametrize("content,fragment", [
    (b'{"problem": "sharon", "name": "\xff"}', "inst.json:1: not UTF-8 text (byte 0xff)"),
    (b"[" * 100_000, "JSON nested too deeply"),
    (json.dumps([{"problem": "sharon"}] * 100).encode(), "(top level): must be a JSON object, not an array"),
    (b'{"problem": "sharon", "queries": "PATTERN A WITHIN 1", "statistics": {"rates": {"A": 1' + b"0" * 400 + b"}}}",
     "statistics: rate of 'A' is too large"),
    (json.dumps({"problem": "sharon", "queries": "PATTERN A" + "+" * 1000 + " WITHIN 5"}).encode(),
     "nested more than 200 levels deep"),
], ids=["non-utf8", "deep-nesting", "top-level-array", "huge-rate", "kleene-chain"])
def test_unreadable_instance_files(capsys, tmp_path, content, fragment):
    path = tmp_path / "inst.json"
    path.write_bytes(content)
    code, _, err = run(capsys, "solve", str(path), "-m", "greedy")
    assert_user_error(code, err, fragment)
    assert len(err) < 300  # the message names the problem, it does not echo the document


@pytest.fixture
def gloria_files(tmp_path):
    (tmp_path / "freq.csv").write_text("dataset,class,event_type,frequency\nstock,a,A,5\nstock,a,B,7\n")
    (tmp_path / "workload.txt").write_text("q0\nPATTERN SEQ(A, B) WITHIN 10 min\n")
    (tmp_path / "plus.txt").write_text("q0\nPATTERN A" + "+" * 1000 + " WITHIN 10 min\n")
    return tmp_path


FREQ = ["--frequencies", "{dir}/freq.csv", "--dataset", "stock"]


@pytest.mark.parametrize("argv,fragment", [
    (["generate", "joinorder", "--size", "3", "-o", "{dir}"], "{dir}: cannot write: Is a directory"),
    (["generate", "joinorder", "--size", "3", "-o", "{dir}/freq.csv/x.json"], "cannot write: Not a directory"),
    (["import", "gloria", "{dir}/workload.txt", *FREQ, "-o", "{dir}"], "{dir}: cannot write: Is a directory"),
    (["import", "gloria", "{dir}/plus.txt", *FREQ, "-o", "{dir}/x.json"],
     "plus.txt: line 2, column 209: pattern nested more than 200 levels deep"),
], ids=["generate-to-dir", "generate-under-file", "import-to-dir", "import-kleene-chain"])
def test_write_and_import_errors(capsys, gloria_files, argv, fragment):
    code, _, err = run(capsys, *(arg.format(dir=gloria_files) for arg in argv))
    assert_user_error(code, err, fragment.format(dir=gloria_files))
