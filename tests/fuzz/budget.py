"""The fuzzing budget: a fixed small number of examples per surface in the default run (deterministic,
a few seconds each), and the long mode ``CEPOPT_FUZZ=1`` (at least 10,000 inputs per surface, each
boxed to :data:`BOX_SECONDS` of wall time so that a hang fails the test instead of stalling it).

``CEPOPT_FUZZ_EXAMPLES=N`` overrides the number of examples of the long mode.
"""

from __future__ import annotations

import contextlib
import os
import signal

from hypothesis import HealthCheck, settings

LONG = os.environ.get("CEPOPT_FUZZ", "") not in ("", "0")
LONG_EXAMPLES = int(os.environ.get("CEPOPT_FUZZ_EXAMPLES", "10000"))
BOX_SECONDS = 5.0

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
           HealthCheck.function_scoped_fixture]


def budget(default: int = 40):
    """``@budget(n)``: hypothesis settings of one fuzzed surface: ``n`` examples, derandomized (the same
    inputs every run), in the default run; :data:`LONG_EXAMPLES` random ones in the long mode."""
    if LONG:
        return settings(max_examples=LONG_EXAMPLES, deadline=None, suppress_health_check=_HEALTH,
                        database=None, derandomize=False)
    return settings(max_examples=default, deadline=None, suppress_health_check=_HEALTH, database=None,
                    derandomize=True)


class Hang(Exception):
    """An input took longer than BOX_SECONDS (long mode only)."""


@contextlib.contextmanager
def box():
    """In the long mode, fail an input that runs longer than :data:`BOX_SECONDS` (SIGALRM, main thread);
    in the default run nothing: the default suite has no wall-clock assertions."""
    if not LONG or not hasattr(signal, "setitimer"):
        yield
        return

    fired = []

    def alarm(signum, frame):
        fired.append(True)
        raise Hang(f"an input ran longer than {BOX_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, BOX_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if fired:  # the Hang was raised where Python swallows it (a gc callback, a __del__): still a hang
        raise Hang(f"an input ran longer than {BOX_SECONDS} s")


def boxed(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a :func:`box`, given a second box when the first runs out: a one-time
    cost of the first use (a Numba compilation, a cold import, on a loaded machine) is no hang, and a
    hang runs out of the second box too."""
    try:
        with box():
            return fn(*args, **kwargs)
    except Hang:
        with box():
            return fn(*args, **kwargs)
