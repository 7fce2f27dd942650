"""E-commerce purchase stream (Sharon §8.1, EC): items bought by customers.

Each event is one purchased item: ``type`` = the item's name (``I0`` .. ``I{items-1}``, or the names
given), with attributes ``customer`` (int id), ``item`` (int id) and ``price`` (float). Items and
customers are uniform (the paper gives no distributions: sharon.md D6); ``rate`` events per second
(3k in the paper), so time stamps are seconds 0, 0, ..., 1, 1, ...
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.params import Bound, NonNegativeInt, PositiveInt

__all__ = ["generate"]


def generate(*, seed: int = 0, events: NonNegativeInt = 10_000, items: PositiveInt = 50, customers: PositiveInt = 20,
             rate: Annotated[float, Bound(">=", 1e-6), Bound("<=", 1e12)] = 3000.0,
             names: str | None = None) -> pd.DataFrame:
    """``events`` purchases; ``names``: comma-separated item names (default I0..I{items-1})."""
    if events < 0 or items < 1 or customers < 1 or rate <= 0:
        raise CepoptError("ecommerce stream: events >= 0, items >= 1, customers >= 1 and rate > 0 needed")
    item_names = np.array([n.strip() for n in names.split(",")] if names else [f"I{i}" for i in range(items)])
    rng = np.random.default_rng(seed)
    item = rng.integers(0, len(item_names), size=events)
    ts = np.floor(np.arange(events) / rate).astype(np.int64)
    return pd.DataFrame({
        "ts": ts,
        "type": item_names[item],
        "customer": rng.integers(0, customers, size=events),
        "item": item.astype(np.int64),
        "price": np.round(rng.uniform(5, 500, size=events), 2),
    })
