"""Linear-Road-like position reports (Sharon §8.1, LR; Linear Road benchmark).

Cars drive along a ring of streets and report their position every ``report`` seconds; ``type`` is
the street (the paper's q1-q7 are patterns over streets: OakSt, MainSt, ...). Attributes: ``car``
(vehicle id, the [vehicle] equivalence predicate), ``speed`` (float, mph), ``lane`` (int 0..lanes-1),
``pos`` (int, feet). Cars enter over time with a density that rises linearly, so the rate grows from a
few reports per second to its peak, as in the benchmark.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.params import NonNegativeInt, PositiveInt

__all__ = ["generate", "STREETS"]

STREETS = ("OakSt", "MainSt", "StateSt", "WestSt", "ParkAve", "ElmSt", "LakeSt", "HillRd", "RiverRd",
           "PineSt")


def generate(*, seed: int = 0, events: NonNegativeInt = 10_000, cars: PositiveInt = 200, report: PositiveInt = 30,
             reports_per_street: PositiveInt = 4, streets: str | None = None, lanes: PositiveInt = 4,
             duration: PositiveInt = 3600) -> pd.DataFrame:
    """About ``events`` reports from ``cars`` cars, each ``report`` seconds apart; a car stays on a
    street for ``reports_per_street`` reports, then moves to the next one."""
    if events < 0 or cars < 1 or report < 1 or reports_per_street < 1 or lanes < 1 or duration < 1:
        raise CepoptError("linear-road stream: events >= 0 and positive cars, report, reports_per_street, "
                          "lanes, duration needed")
    names = np.array([s.strip() for s in streets.split(",")] if streets else STREETS)
    rng = np.random.default_rng(seed)
    per_car = max(1, -(-events // cars))
    # entry times with a linearly rising density (sqrt of a uniform)
    entry = np.floor(np.sqrt(rng.uniform(0, 1, size=cars)) * duration).astype(np.int64)
    first_street = rng.integers(0, len(names), size=cars)
    car = np.repeat(np.arange(cars), per_car)
    j = np.tile(np.arange(per_car), cars)
    ts = entry[car] + report * j
    street = (first_street[car] + j // reports_per_street) % len(names)
    df = pd.DataFrame({
        "ts": ts.astype(np.int64),
        "type": names[street],
        "car": car.astype(np.int64),
        "speed": np.round(rng.uniform(0, 80, size=len(ts)), 1),
        "lane": rng.integers(0, lanes, size=len(ts)),
        "pos": (street * 5280 + (j % reports_per_street) * 1000).astype(np.int64),
    })
    df = df.sort_values(["ts", "car"], kind="stable").head(events).reset_index(drop=True)
    return df
