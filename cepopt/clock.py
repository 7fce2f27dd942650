"""One clock for every time limit, and the deadline a limit becomes (injectable, for tests).

Every method, algorithm and solver wrapper of the optimizer side reads the time through :func:`now`
and turns a time limit into a :class:`Deadline` on it, so a test can swap the clock for one it controls
(:func:`use_clock` with a :class:`TickingClock`) and check that a method stops at its limit without
waiting for the wall clock. Absolute deadlines passed down as floats are :func:`now` values.

>>> with use_clock(TickingClock(step=0.5)):
...     d = Deadline.after(1.0)          # reads 0.0: the deadline is at 1.0
...     d.over(), d.over(), d.over()     # reads 0.5, 1.0, 1.5
(False, True, True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cepopt.errors import MethodLimitError

__all__ = ["Deadline", "TickingClock", "TimeLimitReached", "check", "now", "passed", "remaining", "use_clock"]

_clock: Callable[[], float] = time.perf_counter


def now() -> float:
    """The current time in seconds (``time.perf_counter`` unless a test swapped the clock)."""
    return _clock()


@contextmanager
def use_clock(clock: Callable[[], float]) -> Iterator[Callable[[], float]]:
    """Read the time from ``clock`` inside the block (tests); the real clock again after it."""
    global _clock
    saved, _clock = _clock, clock
    try:
        yield clock
    finally:
        _clock = saved


class TickingClock:
    """A clock for tests: each reading returns the time and then advances it by ``step`` seconds, so a
    method's time is the number of times it looked at the clock (deterministic); :meth:`advance` adds
    time without a reading (a slow step). ``readings`` counts the readings."""

    def __init__(self, step: float = 0.0, start: float = 0.0):
        self.step, self.time, self.readings = step, start, 0

    def __call__(self) -> float:
        self.readings += 1
        t = self.time
        self.time += self.step
        return t

    def advance(self, seconds: float) -> None:
        self.time += seconds


@dataclass(frozen=True)
class Deadline:
    """A time limit as an absolute deadline on :func:`now` (``at`` is None without a limit)."""

    start: float
    at: float | None

    @classmethod
    def after(cls, time_limit: float | None) -> Deadline:
        """The deadline ``time_limit`` seconds from now (none for None)."""
        start = now()
        return cls(start, None if time_limit is None else start + time_limit)

    def left(self, share: float = 1.0, floor: float = 0.0) -> float | None:
        """``share`` of the seconds left, at least ``floor`` (None without a limit)."""
        if self.at is None:
            return None
        return max((self.at - now()) * share, floor)

    def over(self) -> bool:
        """Has the deadline passed?"""
        return self.at is not None and now() >= self.at

    def elapsed(self) -> float:
        """Seconds since the deadline was set."""
        return now() - self.start

    def sooner(self, seconds: float | None) -> float | None:
        """The earlier of this deadline and ``seconds`` from now, as a :func:`now` value (None: no limit)."""
        own = None if seconds is None else now() + seconds
        if self.at is None or own is None:
            return self.at if own is None else own
        return min(self.at, own)


def passed(deadline: float | None) -> bool:
    """Has the absolute ``deadline`` (a :func:`now` value, None for none) passed?"""
    return deadline is not None and now() > deadline


class TimeLimitReached(MethodLimitError):
    """A step that cannot finish by its deadline stopped (a graph, a table, a model left unbuilt); the
    method catches it and returns what it has (its message names the step)."""


def check(deadline: float | None, step: str) -> None:
    """Raise :class:`TimeLimitReached` naming ``step`` once the absolute ``deadline`` has passed."""
    if passed(deadline):
        raise TimeLimitReached(f"time limit reached while {step}")


def remaining(deadline: float | None, floor: float = 1e-3) -> float | None:
    """Seconds left before the absolute ``deadline`` (at least ``floor``; None for no deadline)."""
    return None if deadline is None else max(deadline - now(), floor)
