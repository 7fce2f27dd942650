"""Regression tests: the cases listed in issue 21 in this helper's area, and what the fuzzing suite found.

Each bad input gives one clear line (a CepoptError; exit 2 on the command line). Bugs found in other
helpers' files are ``xfail(strict=True)`` with the owner in the reason: the mark fails as soon as the
bug is fixed, so that it is removed then.
"""

from __future__ import annotations

import re

import pytest

from cepopt.cli import main
from cepopt.errors import CepoptError
from cepopt.instance import load
from cepopt.solve import build_problem, solve

HUGE = 10**400


def user_error(capsys, *argv: str) -> str:
    capsys.readouterr()
    code = main(list(argv))
    _, err = capsys.readouterr()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("cepopt: error: "), err
    return err


# ---------------------------------------------------------------------------------------------
# Issue 21, part 1: tracebacks that must be one line (this helper's area)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["milp", "milp-compact", "cpsat", "greedy"])
@pytest.mark.parametrize("limit", ["inf", "1e308", "nan", "-1", "0", "1" + "0" * 400])
def test_time_limits_are_checked_before_any_solver(capsys, method, limit):
    err = user_error(capsys, "solve", "sharon-fig4", "--method", method, "--time-limit", limit)
    assert "--time-limit: must be a number of seconds in (0, 1e+07]" in err


@pytest.mark.parametrize("limit", [float("inf"), 1e308, float("nan"), -1, 0, HUGE, "abc", True])
def test_time_limits_in_the_python_api(limit):
    with pytest.raises(CepoptError, match="time limit: must be a number of seconds"):
        solve("sharon-fig4", "milp", time_limit=limit)


@pytest.mark.parametrize("method,seed", [("cpsat", "2147483648"), ("cpsat", "99999999999"), ("ii-random", "-1"),
                                         ("ii-random", "1.5"), ("greedy", "x")])
def test_seeds_out_of_range(capsys, method, seed):
    instance = "sharon-fig4" if method == "cpsat" else "joinorder-e6"
    err = user_error(capsys, "solve", instance, "--method", method, "--seed", seed)
    assert "--seed: must be an integer in [0, 2147483647]" in err
    with pytest.raises(CepoptError, match="seed: must be an integer"):
        solve(instance, method, seed=seed)


@pytest.mark.parametrize("instance,method,key", [
    ("joinorder-e6", "greedy", "alpha"),           # a problem option (cepopt/joinorder/problem.py)
    ("joinorder-e6", "cpsat-order", "scale"),      # a method option (cepopt/params.py)
    ("joinorder-e6", "milp-order", "tol"),
    ("gloria-fig7", "exhaustive", "max_plans"),
])
def test_a_float_option_given_as_a_400_digit_integer(instance, method, key):
    with pytest.raises(CepoptError, match=f"params.{key}") as info:
        solve(instance, method, params={key: HUGE})
    assert len(str(info.value)) < 400


def test_an_instance_argument_longer_than_the_file_name_limit(capsys):
    err = user_error(capsys, "solve", "x" * 5000, "--method", "greedy")
    assert "File name too long" in err and len(err) < 400
    with pytest.raises(CepoptError, match="cannot read: File name too long"):
        load("y" * 300)


@pytest.mark.parametrize("spec,message", [
    ("gen:workload:events=x", "events: expected an integer, got 'x'"),
    ("gen:workload:events=1.5", "events: expected an integer, got 1.5"),
    ("gen:workload:events=99999999999", "events: at most 5000000"),
])
def test_stream_generator_parameters_of_the_issue(spec, message):
    from cepopt.executor.streams import resolve_stream_pandas

    with pytest.raises(CepoptError, match=message):
        resolve_stream_pandas(spec, load("joinorder-e6"))


def test_generate_joinorder_size_99999_is_refused_before_it_runs(capsys, tmp_path):
    err = user_error(capsys, "generate", "joinorder", "--size", "99999", "-o", str(tmp_path / "j.json"))
    assert "argument --size: at most 1000 (the generator's stated maximum)" in err


# ---------------------------------------------------------------------------------------------
# Found by the fuzzing suite, fixed here
# ---------------------------------------------------------------------------------------------


def test_an_embedded_stream_attribute_must_be_a_scalar():
    from cepopt.errors import InstanceError
    from cepopt.instance import from_json

    doc = {"problem": "hamlet", "queries": ["q1: PATTERN SEQ(A, B+) WITHIN 10", "q2: PATTERN SEQ(C, B+) WITHIN 10"],
           "stream": [{"ts": 1, "type": "A", "g": [1, 2]}]}
    with pytest.raises(InstanceError, match=r"stream\[0\].g: must be a JSON number or string or boolean or null"):
        from_json(doc)
    doc["stream"] = [{"ts": 2**63, "type": "A"}]
    with pytest.raises(InstanceError, match=r"stream\[0\].ts: .* greater than the maximum"):
        from_json(doc)


@pytest.mark.parametrize("value", [{"kind": "order", "events": None}, {"kind": "order", "events": "e1e2"},
                                   {"kind": "order", "events": ["e1"], "negations": 5},
                                   {"kind": "tree", "tree": {"node": ["e1", "e2"], "not": None}},
                                   {"kind": "or", "branches": None}, {"kind": ["order"]}])
def test_malformed_join_order_plans(value):
    fam, problem, _ = build_problem(load("joinorder-e6"))
    with pytest.raises(CepoptError, match="plan"):
        fam.plan_from_json(problem, value)


def test_a_hamlet_plan_with_a_400_digit_cost():
    fam, problem, _ = build_problem(load("hamlet-example"))
    value = {"policy": "replay", "decisions": [{"type": "B", "queries": ["q1", "q2"], "cost": HUGE}]}
    with pytest.raises(CepoptError, match="plan.decisions: malformed decision"):
        fam.plan_from_json(problem, value)


@pytest.mark.parametrize("spec,message", [
    ("gen:bursty:drivers=0", "drivers: must be >= 1"),      # was ValueError: high <= 0
    ("gen:bursty:burst=1e9", "burst: must be <= 1e+06"),     # was an allocation of 10^15 run slots
    ("gen:ecommerce:rate=1e-300", "rate: must be >= 1e-06"),  # was time stamps wrapped around int64
    ("gen:stock:rate_max=2", "rate_max: must be <= 1"),
    ("gen:linear-road:lanes=0", "lanes: must be >= 1"),
    ("gen:hamlet:path=" + "x" * 300, "no such Hamlet stream file"),  # was OSError: file name too long
])
def test_stream_generator_bounds(spec, message):
    from cepopt.executor.streams import resolve_stream_pandas

    with pytest.raises(CepoptError, match=re.escape(message)):
        resolve_stream_pandas(spec, load("joinorder-e6"))


def test_bursty_keeps_a_long_kleene_type_name():
    from cepopt.instances.streams import generate

    df = generate("bursty", events=300, kleene="LongKleeneType", seed=1)
    assert "LongKleeneType" in set(df["type"]) and "Lon" not in set(df["type"])


def test_generate_hamlet_refuses_a_stream_of_thousands_of_windows(capsys, tmp_path):
    err = user_error(capsys, "generate", "hamlet", "--rate", "1", "--bursts", "-o", str(tmp_path / "h.json"))
    assert "windows (at most 200)" in err


# ---------------------------------------------------------------------------------------------
# Found by the fuzzing suite in other helpers' files (xfail strict: remove the mark with the fix)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def no_spark(monkeypatch):
    from cepopt.executor import session

    def refuse(*args, **kwargs):
        raise CepoptError("(test) Spark would start here")

    monkeypatch.setattr(session, "get_spark", refuse)


@pytest.mark.xfail(strict=True, raises=OSError,
                   reason="spark: executor/streams.py stream_format/read_stream_pandas call Path.exists on "
                          "the --stream argument: a name over the file-name limit is OSError (also on h-spark)")
def test_execute_stream_path_longer_than_the_file_name_limit():
    from cepopt.executor.streams import resolve_stream_pandas

    with pytest.raises(CepoptError, match="stream"):
        resolve_stream_pandas("x" * 300 + ".csv", load("sharon-example3"))


@pytest.mark.xfail(strict=True, raises=OSError,
                   reason="spark: executor/api.py load_plan (pipeline on h-spark) calls Path.is_file on the "
                          "--plan argument: a name over the file-name limit is OSError")
def test_execute_plan_name_longer_than_the_file_name_limit(capsys, no_spark):
    user_error(capsys, "execute", "sharon-example3", "--plan", "x" * 300)


@pytest.mark.xfail(not hasattr(__import__("cepopt.executor.streams", fromlist=["x"]), "is_local"),
                   strict=True, reason="spark: executor/streams.py _check_pandas casts ts = inf or beyond "
                                       "int64 to int64 unchecked (fixed on h-spark)")
@pytest.mark.parametrize("text", ["ts,type\n99999999999999999999,A\n",
                                  "ts,type\n-99999999999999999999,A\n"])
def test_csv_time_stamps_beyond_int64(tmp_path, text):
    from cepopt.executor.streams import read_stream_pandas

    (tmp_path / "s.csv").write_text(text)
    with pytest.raises(CepoptError, match="ts"):
        read_stream_pandas(tmp_path / "s.csv")

