"""Bursty streams for shared Kleene aggregation (Hamlet §6.2).

The stream is a sequence of runs: with probability ``frequency`` a run is a burst of the Kleene type
(length ~ 1 + Poisson(burst - 1), mean ``burst``), otherwise a short run (1..3 events) of one of the
other types. ``types`` types in all (``T0`` is the Kleene type unless ``kleene`` names another);
``rate`` events per minute give the time stamps (seconds). Attributes, uniform: ``driver`` and
``rider`` (ints, for equivalence predicates), ``district`` (int 0..districts-1, GROUP-BY), ``speed``
(float 0..100, selective filters), ``duration`` (int 1..60, SUM/AVG targets).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.params import Bound, NonNegativeInt, PositiveInt

__all__ = ["generate"]


#: bounds of the parameters, checked before anything is drawn (cepopt.instances.streams.check_params)
Share = Annotated[float, Bound(">=", 0), Bound("<=", 1)]
Rate = Annotated[float, Bound(">=", 1e-6), Bound("<=", 1e12)]  # time stamps stay within int64


def generate(*, seed: int = 0, events: NonNegativeInt = 10_000, types: Annotated[int, Bound(">=", 2)] = 20,
             kleene: str = "T0", burst: Annotated[float, Bound(">=", 1), Bound("<=", 1e6)] = 40,
             frequency: Share = 0.2, rate: Rate = 10_000, drivers: PositiveInt = 10, riders: PositiveInt = 10,
             districts: PositiveInt = 4) -> pd.DataFrame:
    """``events`` events with bursts of mean size ``burst`` starting a run with probability
    ``frequency``."""
    if events < 0 or types < 2 or burst < 1 or not 0 <= frequency <= 1 or rate <= 0:
        raise CepoptError("bursty stream: events >= 0, types >= 2, burst >= 1, 0 <= frequency <= 1, "
                          "rate > 0 needed")
    names = np.array([f"T{i}" for i in range(types)], dtype=object)  # object: a longer kleene is not cut
    if kleene not in names:
        names[0] = kleene
    others = np.array([n for n in names if n != kleene])
    rng = np.random.default_rng(seed)
    # enough runs to cover the events: the mean run length is at least 1
    runs = max(1, events)
    is_burst = rng.uniform(size=runs) < frequency
    lengths = np.where(is_burst, 1 + rng.poisson(burst - 1, size=runs), rng.integers(1, 4, size=runs))
    run_type = np.where(is_burst, kleene, others[rng.integers(0, len(others), size=runs)])
    needed = int(np.searchsorted(np.cumsum(lengths), events)) + 1  # the runs that reach `events`, no more
    typ = np.repeat(run_type[:needed], lengths[:needed])[:events]
    n = len(typ)
    return pd.DataFrame({
        "ts": np.floor(np.arange(n) * 60.0 / rate).astype(np.int64),
        "type": typ,
        "driver": rng.integers(0, drivers, size=n),
        "rider": rng.integers(0, riders, size=n),
        "district": rng.integers(0, districts, size=n),
        "speed": np.round(rng.uniform(0, 100, size=n), 1),
        "duration": rng.integers(1, 61, size=n),
    })
