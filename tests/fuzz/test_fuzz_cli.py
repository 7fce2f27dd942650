"""Fuzzing every subcommand's arguments through ``cepopt.cli.main(argv)`` in process: exit 0, or exit 2
with exactly one line ``cepopt: error: ...`` on stderr; never a traceback, never another status.

Starting Spark is replaced by a CepoptError (the arguments of ``execute`` are what is fuzzed, and they
must be checked before Spark starts), ``demo`` and the experiments' grid points by stubs; solving runs
for real on the bundled instances. A few real subprocess runs check the installed ``cepopt`` command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cepopt.cli import build_parser
from cepopt.errors import CepoptError
from cepopt.instances import names as bundled_names
from cepopt.solve import families, methods
from tests.fuzz.budget import budget
from tests.fuzz.strategies import cli, nasty_numbers, nasty_text, value_words

ALL_METHODS = sorted({m for f in families() for m in methods(f)})
OPTIONS = sorted({o for f in families() for meth in methods(f).values() for o in meth.options} |
                 {"expand", "subsets", "comb", "max_options", "weights", "cost", "alpha", "strategy", "eq7_n"})
instances = st.sampled_from(bundled_names()) | st.sampled_from(["", "nope.json", "/", "x" * 300, "-x", "../"])
method_names = st.sampled_from(ALL_METHODS) | nasty_text
numbers_as_text = nasty_numbers.map(repr) | st.sampled_from(["inf", "-inf", "nan", "1e308", "9" * 400, "-1", "0",
                                                              "0.001", "2147483648", "1.5", "x", ""])
params = st.lists(st.tuples(st.sampled_from(OPTIONS) | nasty_text, value_words).map(lambda kv: f"{kv[0]}={kv[1]}")
                  | nasty_text, max_size=3)


def _flags(draw, pairs) -> list[str]:
    out = []
    for flag, values in pairs:
        if draw(st.booleans()):
            out += [flag, draw(values)] if values is not None else [flag]
    return out


@st.composite
def solve_argv(draw) -> list[str]:
    command = draw(st.sampled_from(["solve", "compare"]))
    argv = [command, draw(instances)]
    if command == "solve":
        argv += ["--method", draw(method_names)] if draw(st.integers(0, 9)) else []
    else:
        argv += ["--methods", ",".join(draw(st.lists(method_names, max_size=3)))] if draw(st.booleans()) else []
    argv += _flags(draw, [("--seed", numbers_as_text), ("--json", None)])
    argv += ["--time-limit", draw(numbers_as_text)] if draw(st.integers(0, 3)) else ["--time-limit", "1"]
    for p in draw(params):
        argv += ["--param", p]
    return argv


@budget(100)
@given(solve_argv())
def test_solve_and_compare_arguments(capsys, argv):
    cli(capsys, argv)


GENERATOR_FLAGS = {
    "sharon": ["--queries", "--length", "--preset", "--types", "--pool", "--piece-min", "--piece-max", "--sharing",
               "--rate-min", "--rate-max", "--events-per-window", "--window", "--slide"],
    "gloria": ["--queries", "--types", "--min-length", "--max-length", "--kleene", "--nested", "--max-frequency"],
    "joinorder": ["--size", "--preset", "--kind", "--kleene", "--negation", "--window", "--rate-min", "--rate-max",
                  "--sel-min", "--sel-max", "--sel-dist", "--predicates"],
    "hamlet": ["--queries", "--types", "--kleene-type", "--prefix", "--burst", "--frequency", "--events", "--rate",
               "--window", "--slide", "--filtered", "--aggregate"],
}
small_values = st.one_of(st.integers(-2, 12).map(str), numbers_as_text, nasty_text,
                         st.sampled_from(["paper", "dense", "stress", "seq", "or", "uniform", "mixed"]))


@st.composite
def generate_argv(draw) -> list[str]:
    family = draw(st.sampled_from([*GENERATOR_FLAGS, "nope", "--list", "--help", ""]))
    argv = ["generate", family]
    for flag in draw(st.lists(st.sampled_from(GENERATOR_FLAGS.get(family, ["--x"])), max_size=3, unique=True)):
        argv += [flag, draw(small_values)]
    argv += _flags(draw, [("--seed", numbers_as_text), ("--unique-types", None), ("--bursts", None)])
    return argv


@budget(30)
@given(generate_argv(), st.booleans())
def test_generate_arguments(capsys, tmp_path_factory, argv, to_folder):
    out = tmp_path_factory.mktemp("gen")
    target = out / ("missing/sub/x.json" if to_folder else "x.json")
    cli(capsys, [*argv, "-o", str(target)] if argv[1] not in ("--list", "--help", "") else argv)


@pytest.fixture
def no_spark(monkeypatch):
    """Spark never starts: reaching it ends the command as a user error (exit 2)."""
    from cepopt.executor import session

    def refuse(*args, **kwargs):
        raise CepoptError("(fuzz) Spark would start here")

    monkeypatch.setattr(session, "get_spark", refuse)


@st.composite
def execute_argv(draw) -> list[str]:
    argv = ["execute", draw(instances)]
    specs = st.sampled_from(["gen:workload:events=50", "gen:bursty:events=40", "gen:nope", "gen:", "gen:workload:x",
                             "gen:workload:events=99999999999", "missing.csv", "x" * 300, "/", "gen:ecommerce:rate=0"])
    plans = st.sampled_from(["nonshared", "greedy", "nope", "x.json", "dynamic"]) | nasty_text
    argv += _flags(draw, [("--plan", plans),
                          ("--stream", specs), ("--output", st.sampled_from(["o.csv", "o.txt", "/nonexistent/o.csv"])),
                          ("--estimate-stats", None), ("--seed", numbers_as_text), ("--time-limit", numbers_as_text),
                          ("--master", st.sampled_from(["local[1]", "nope://x", ""]))])
    if "--engine" in _execute_flags():
        argv += _flags(draw, [("--engine", st.sampled_from(["local", "spark", "nope"]))])
    for p in draw(params):
        argv += ["--param", p]
    return argv


def _execute_flags() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["execute"]
    return {s for a in sub._actions for s in a.option_strings}


@budget(50)
@given(execute_argv())
def test_execute_arguments(capsys, no_spark, tmp_path_factory, argv):
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("exec"))  # relative outputs land in a scratch folder
    try:
        cli(capsys, argv)
    finally:
        os.chdir(cwd)


@pytest.fixture
def stub_work(monkeypatch):
    """``demo`` and the experiments' grid points do no work; their argument checks still run."""
    from cepopt.experiments import demo, framework

    monkeypatch.setattr(demo, "run_demo", lambda **kwargs: 0)

    def run_experiment(exp, *, quick=False, out_dir=None, resume=True, progress=True, master=None, command=None):
        out = framework._output_dir(exp, quick, out_dir)
        return SimpleNamespace(complete=0, total=0, ran=0, skipped=0, csv_path=out / "x.csv", markdown_path=None)

    monkeypatch.setattr(framework, "run_experiment", run_experiment)


@st.composite
def other_argv(draw) -> list[str]:
    command = draw(st.sampled_from(["experiment", "demo", "methods", "instances", "import", "nope", "", "--version",
                                    "-h"]))
    argv = [command]
    if command == "experiment":
        argv += [draw(st.sampled_from(["sharon-optimizers", "nope", ""]) | nasty_text)]
        argv += _flags(draw, [("--quick", None), ("--no-resume", None),
                              ("--out", st.sampled_from(["OUT", "/proc/x", "/dev/null/x", ""]))])
    elif command == "demo":
        argv += _flags(draw, [("--quick", None), ("--time-limit", numbers_as_text), ("--master", nasty_text)])
    elif command == "import":
        argv += [draw(st.sampled_from(["gloria", "nope"])), draw(st.sampled_from(["w.txt", "", "x" * 300]))]
        argv += _flags(draw, [("--frequencies", st.sampled_from(["f.csv", ""])),
                              ("--dataset", st.sampled_from(["stock", "bus", "nope"])), ("-o", st.just("o.json"))])
    argv += draw(st.lists(nasty_text, max_size=2))
    return argv


@budget(60)
@given(other_argv())
def test_other_subcommands(capsys, stub_work, tmp_path_factory, argv):
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("other"))
    try:
        cli(capsys, argv)
    finally:
        os.chdir(cwd)


@budget(40)
@given(st.lists(nasty_text | st.sampled_from(["solve", "--json", "--param", "-m", "--seed", "--", "-"]), max_size=6))
def test_any_words(capsys, stub_work, no_spark, argv):
    cli(capsys, argv)


@pytest.mark.parametrize("argv,code,fragment", [
    (["solve", "sharon-fig4", "--method", "greedy", "--time-limit", "inf"], 2, "--time-limit: must be a number"),
    (["solve", "joinorder-e6", "--method", "ii-random", "--seed", "-1"], 2, "--seed: must be an integer"),
    (["solve", "x" * 5000, "--method", "greedy"], 2, "File name too long"),
    (["generate", "joinorder", "--size", "99999", "-o", "x.json"], 2, "at most 1000"),
    (["generate", "--help"], 0, ""),
    (["solve", "sharon-fig4", "--method", "greedy", "--json"], 0, ""),
])
def test_real_subprocess_runs(tmp_path, argv, code, fragment):
    exe = os.path.join(os.path.dirname(sys.executable), "cepopt")
    proc = subprocess.run([exe, *argv], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == code, proc.stderr
    if code == 2:
        assert len(proc.stderr.splitlines()) == 1 and fragment in proc.stderr and "Traceback" not in proc.stderr
