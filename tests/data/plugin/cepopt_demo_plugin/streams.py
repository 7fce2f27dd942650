"""A stream generator added from outside cepopt."""

import pandas as pd


def generate(*, seed=0, events: int = 3):
    return pd.DataFrame({"ts": list(range(events)), "type": ["A"] * events})
