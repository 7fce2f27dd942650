"""Fuzzing ``--param`` values, ``--seed`` and ``--time-limit`` through the Python API: every registered
method of every family on a bundled instance, with its own option keys (and the family's problem
options) set to hostile values. The values are read by type and range before the problem is built or a
solver starts; what passes gives a Solution (any status), the rest a CepoptError."""

from __future__ import annotations

import inspect
from functools import cache

from hypothesis import given
from hypothesis import strategies as st

from cepopt.instances import load
from cepopt.solution import Solution
from cepopt.solve import families, methods, solve
from tests.fuzz.budget import budget
from tests.fuzz.strategies import nasty_ints, nasty_numbers, nasty_text, outcome

INSTANCES = {"sharon": "sharon-fig4", "gloria": "gloria-fig7", "hamlet": "hamlet-example", "joinorder": "joinorder-e6"}
PROBLEM_OPTIONS = {"sharon": ["expand", "subsets", "comb", "max_options", "max_vertices"],
                   "joinorder": ["cost", "alpha", "strategy", "seq_selectivity", "seq_temporal", "leaf_filter",
                                 "kleene_nonempty"],
                   "hamlet": ["eq7_n", "eq7_t"], "gloria": []}


@cache
def cases() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    return tuple((fam, name, meth.options + tuple(PROBLEM_OPTIONS.get(fam, ())))
                 for fam in families() for name, meth in methods(fam).items())


def _default(fam: str, method: str, key: str):
    params = inspect.signature(methods(fam)[method].fn).parameters
    return params[key].default if key in params else None


#: a value for an option: its default's neighbours (x2, /2, +-1, its negation), a boundary, or anything
@st.composite
def option_values(draw, default):
    kind = draw(st.integers(0, 5))
    if kind == 0 and isinstance(default, int | float) and not isinstance(default, bool):
        return draw(st.sampled_from([default * 2, default / 2, default + 1, default - 1, -default, 0, 1]))
    if kind == 1 and isinstance(default, str):
        return draw(st.sampled_from([default.upper(), f" {default} ", default + "x", ""]))
    if kind == 2:
        return draw(nasty_ints)
    if kind == 3:
        return draw(nasty_numbers)
    if kind == 4:
        return draw(nasty_text)
    return draw(st.booleans() | st.none() | st.lists(st.integers(), max_size=2) | st.just({}))


@st.composite
def solve_calls(draw):
    fam, method, keys = draw(st.sampled_from(cases()))
    chosen = draw(st.lists(st.sampled_from(keys), unique=True, max_size=3)) if keys else []
    params = {k: draw(option_values(_default(fam, method, k))) for k in chosen}
    seed = draw(st.one_of(st.just(0), st.integers(0, 2**31 - 1), nasty_ints))
    time_limit = draw(st.one_of(st.just(1.0), st.floats(0.05, 2), nasty_numbers, st.none()))
    if time_limit is None or (isinstance(time_limit, int | float) and not time_limit <= 2):
        # a valid long limit would only make the method run longer; the box is 5 s
        time_limit = draw(st.sampled_from([time_limit, 1.0])) if time_limit is not None else 1.0
    return fam, method, params, seed, time_limit


@budget(100)
@given(solve_calls())
def test_method_options_seeds_and_time_limits(call):
    fam, method, params, seed, time_limit = call
    result = outcome(solve, load(INSTANCES[fam]), method, time_limit=time_limit, seed=seed, params=params)
    assert isinstance(result, Solution | Exception)
    if isinstance(result, Solution):
        assert result.status in ("optimal", "feasible", "timeout", "infeasible", "error"), result.status
