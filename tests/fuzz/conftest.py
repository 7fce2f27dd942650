"""The long fuzzing mode's warm-up: every method of every family runs once on a bundled instance (and
its plan once on the local engine) before the first time box, so that a one-time cost of first use (a
Numba compilation of several seconds, more on a loaded machine) is not taken for a hang of the input
that happens to come first."""

from __future__ import annotations

import pytest

from tests.fuzz.budget import LONG


@pytest.fixture(scope="session", autouse=True)
def warm_up():
    if not LONG:
        return
    from cepopt.instance import load
    from cepopt.instances import names
    from cepopt.registry import methods, solve

    families: dict[str, str] = {}
    for name in names():
        families.setdefault(load(name).problem, name)
    from cepopt.cli import main

    for family, name in families.items():
        for method in methods(family):
            try:
                solve(name, method, time_limit=10.0)
            except Exception:  # noqa: BLE001,S112 -- a warm-up: the tests themselves check the outcomes
                continue
        try:  # the local engine's kernels (Numba) too
            main(["execute", name, "--engine", "local", "--stream", "gen:workload:events=50"])
        except Exception:  # noqa: BLE001,S110
            pass
