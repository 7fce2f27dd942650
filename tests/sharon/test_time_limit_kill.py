"""Time limits hold when HiGHS overruns them: a large HiGHS model is solved in a child process that is
killed after its deadline (formulations/mathopt_child.py), and milp-compact then keeps the segment DP's
plan and bound. The kill is forced deterministically (a grace far below zero), not timed. Also the one
shared build of the constraint matrix (Model.matrix) and the whole-model solve of a model that is one
block but for a few variables (formulations/blocks.py)."""

from __future__ import annotations

import random

import pytest

from cepopt.formulations import blocks as blocks_mod
from cepopt.formulations import mathopt_child, milp
from cepopt.formulations.linear import ModelResult
from cepopt.formulations.model import Model
from cepopt.formulations.sharon import compact_model
from cepopt.formulations.sharon_segments import segments_of
from cepopt.instances.sharon_generator import make_instance
from cepopt.registry import solve
from cepopt.sharon.problem import build


def _knapsacks(n: int = 60, rows: int = 8, seed: int = 3) -> Model:
    rng = random.Random(seed)
    m = Model("knap", "max")
    m.add_vars([f"x{i}" for i in range(n)])
    for _ in range(rows):
        cols = sorted(rng.sample(range(n), 20))
        m.add_row(cols, [rng.randint(20, 99) for _ in cols], None, 300)
    m.objective = [rng.randint(10, 99) for _ in range(n)]
    return m


def test_highs_in_a_child_process_answers_as_in_process(monkeypatch):
    m = _knapsacks()
    here = milp.solve_model_milp(m, backend="highs", time_limit=60)
    monkeypatch.setattr(milp, "CHILD_NONZEROS", 0)
    child = milp.solve_model_milp(m, backend="highs", time_limit=60)
    assert here.status == child.status == "optimal"
    assert (child.objective, child.bound, child.x) == (here.objective, here.bound, here.x)
    assert child.stats["solver_process_cpu_s"] > 0 and "solver_process_cpu_s" not in here.stats
    # no time limit: nothing to enforce, in process
    assert "solver_process_cpu_s" not in milp.solve_model_milp(m, backend="highs").stats


def test_a_child_past_its_deadline_is_killed_and_the_solve_is_a_timeout(monkeypatch):
    monkeypatch.setattr(milp, "CHILD_NONZEROS", 0)
    monkeypatch.setattr(milp, "CHILD_GRACE", -1e6)  # the deadline has passed when the child starts
    m = _knapsacks()
    res = milp.solve_model_milp(m, backend="highs", time_limit=60)
    assert (res.status, res.x) == ("timeout", None)
    assert "past its time limit and was stopped" in res.message
    # the last bound HiGHS logged, if it logged one before the kill, is a bound
    optimum = milp.solve_model_milp(m, backend="highs").objective
    assert res.bound is None or res.bound >= optimum


@pytest.mark.parametrize(("line", "bound"), [
    (" z       0       0         0   0.00%   inf             -0                 Large        0      0      0"
     "         0     1.8s", None),
    ("         0       0         0   0.00%   3150640.333333  -0                 Large        0      0      3"
     "    104064    18.9s", 3150640.333333),
    (" T     121      12        40  55.25%   -1.5e+07        -1.6e+07           6.25%      305     21    118"
     "     55012    40.2s", -1.5e7),
    ("Solving MIP model with:", None), ("  Dual bound        3150588", None),
])
def test_the_dual_bound_is_read_off_highs_progress_lines(line, bound):
    assert mathopt_child.log_dual_bound(line) == bound


def test_a_child_that_fails_reports_the_solvers_error(monkeypatch):
    monkeypatch.setattr(milp, "CHILD_NONZEROS", 0)
    res = milp.solve_model_milp(_knapsacks(), backend="highs", time_limit=60, options={"no_such_option": 1})
    assert res.status == "error" and "highs failed" in res.message


def test_milp_compact_keeps_the_segment_plan_and_bound_when_highs_is_killed(monkeypatch):
    inst = make_instance(queries=40, length=6, seed=1, preset="stress")
    problem = build(inst, expand=True)
    proven = solve(inst, "milp-compact", time_limit=60, problem=problem)
    assert proven.status == "optimal"
    model = compact_model(problem)
    segments = segments_of(model)
    dp_value, dp_bound = model.value(segments.plan(len(model.names))), segments.bound()
    monkeypatch.setattr(milp, "CHILD_NONZEROS", 0)
    monkeypatch.setattr(milp, "CHILD_GRACE", -1e6)
    killed = solve(inst, "milp-compact", time_limit=60, problem=problem)
    assert killed.objective == pytest.approx(dp_value)
    assert killed.objective <= proven.objective <= killed.bound <= dp_bound + 1e-9
    assert dp_bound > dp_value  # (345 < 548): the DP alone proves nothing here
    assert killed.status == "feasible" and "stopped" in killed.message


def test_the_matrix_is_built_once_and_follows_new_rows():
    m = _knapsacks(rows=3)
    first = m.matrix()
    assert m.matrix() is first  # shared by the solver's model and the solution check
    x = [1] * len(m.names)
    before = m.violation(x)
    m.add_row([0, 1], [1, 1], None, 0)
    assert m.matrix() is not first and len(m.matrix()[0]) == len(first[0]) + 2
    assert m.violation(x) >= max(before, 2.0)
    m.rows = m.rows[:3]  # a replaced row list is read afresh
    assert m.violation(x) == before and m.matrix()[0].tolist() == first[0].tolist()


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_a_model_that_is_one_block_but_for_a_few_variables_is_solved_whole(monkeypatch, share):
    m = _knapsacks(n=40, rows=6)
    # two more variables in a block of their own: x40 + x41 <= 1
    m.add_vars(["y0", "y1"], obj=[5, 7])
    m.add_row([40, 41], [1, 1], None, 1)
    monkeypatch.setattr(blocks_mod, "ENUMERATE", 1)  # the small block goes to the solver too
    monkeypatch.setattr(blocks_mod, "WHOLE_SHARE", share)
    seen = []

    def one(sub, left) -> ModelResult:
        seen.append(len(sub.names))
        return milp.solve_model_milp(sub, backend="highs", time_limit=left)

    res = blocks_mod.solve_by_blocks(m, one, time_limit=60)
    whole = milp.solve_model_milp(m, backend="highs", time_limit=60)
    assert seen == ([42] if share else [40, 2])
    assert res.stats["blocks"] == 2 and res.stats["largest_block"] == 40
    assert (res.status, res.objective) == ("optimal", whole.objective)


def test_the_last_complete_improving_solution_is_read_back():
    text = ("Objective 0\n# Columns 3\nx0 0\nx1 0\nx2 0\n"
            "Objective 7\n# Columns 3\nx0 1\nx1 0\nx2 1\n"
            "Objective 9\n# Columns 3\nx0 1\nx1 1\n")  # the kill cut the last block short
    assert mathopt_child.last_improving_solution(text, 3) == [1.0, 0.0, 1.0]
    assert mathopt_child.last_improving_solution(text, 4) is None
    assert mathopt_child.last_improving_solution("", 3) is None


_POPEN = mathopt_child.subprocess.Popen


class _KilledAfterItFinished:
    """Popen whose first wait "times out" only after the real child has finished, so the parent takes the
    kill path with every improving solution the solver wrote: a kill that is not a race."""

    def __init__(self, *args, **kwargs):
        self._proc = _POPEN(*args, **kwargs)
        self._out = None

    def communicate(self, payload=None, timeout=None):
        import subprocess

        if self._out is None:
            self._out = self._proc.communicate(payload)
            raise subprocess.TimeoutExpired("child", timeout)
        return self._out

    def kill(self):
        pass

    def wait(self):
        return self._proc.wait()

    @property
    def returncode(self):
        return self._proc.returncode


def test_a_killed_highs_keeps_its_last_improving_solution(monkeypatch):
    monkeypatch.setattr(milp, "CHILD_NONZEROS", 0)
    monkeypatch.setattr(mathopt_child.subprocess, "Popen", _KilledAfterItFinished)
    m = _knapsacks()
    optimum = milp.solve_model_milp(m, backend="highs").objective
    res = milp.solve_model_milp(m, backend="highs", time_limit=60)
    assert "was stopped" in res.message and res.status == "feasible"
    # the solver's last improving solution of a run that went to the end is the optimum, checked by _finish
    assert m.violation(res.x) == 0 and res.objective == optimum
