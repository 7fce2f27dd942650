"""A stream for an instance's own workload: its event types at its stated rates, with attribute
values its predicates, GROUP-BY and aggregates can use.

Types are drawn with probabilities proportional to ``statistics.rates`` (types without a rate get the
mean rate; all 1 when none is given); the stream spans ``events / sum(rates)`` time units, so each
type arrives at about its stated rate. Attributes:

* GROUP-BY and equivalence attributes: ints 0..groups-1;
* attributes of numeric filters: ints spread over [min constant - spread, max constant + spread];
  of string filters: one of the constants or "other";
* attributes of aggregates and conditions: ints 0..99.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError

__all__ = ["generate"]


def generate(*, seed: int = 0, instance: Any = None, events: int = 10_000, groups: int = 4,
             spread: int = 10) -> pd.DataFrame:
    """``events`` events of the instance's event types (see the module docstring)."""
    if instance is None:
        raise CepoptError("the workload stream generator needs an instance")
    if events < 0 or groups < 1 or spread < 0:
        raise CepoptError("workload stream: events >= 0, groups >= 1, spread >= 0 needed")
    workload = instance.workload
    types = list(dict.fromkeys(list(instance.event_types) + list(workload.event_types())))
    rates_known = dict(instance.statistics.rates)
    mean = float(np.mean(list(rates_known.values()))) if rates_known else 1.0
    rates = np.array([float(rates_known.get(t, mean)) for t in types])
    if rates.sum() <= 0:
        rates = np.ones(len(types))
    rng = np.random.default_rng(seed)
    typ = np.array(types)[rng.choice(len(types), size=events, p=rates / rates.sum())]
    span = max(1.0, events / rates.sum())
    ts = np.sort(np.floor(rng.uniform(0, span, size=events))).astype(np.int64)
    cols: dict[str, Any] = {"ts": ts, "type": typ}
    part, numeric, strings, values = set(), {}, {}, set()
    for q in workload:
        part.update(k.attr for k in q.group_by)
        part.update(q.equivalences)
        for f in q.filters:
            if isinstance(f.value, str):
                strings.setdefault(f.attr, set()).add(f.value)
            else:
                numeric.setdefault(f.attr, []).append(f.value)
        for a in q.aggregates:
            if a.attr is not None:
                values.add(a.attr)
        for c in q.conditions:
            values.update((c.left.attr, c.right.attr))
    for attr in sorted(part):
        cols[attr] = rng.integers(0, groups, size=events)
    for attr in sorted(set(numeric) - part):
        lo, hi = int(np.floor(min(numeric[attr]))) - spread, int(np.ceil(max(numeric[attr]))) + spread
        cols[attr] = rng.integers(lo, hi + 1, size=events)
    for attr in sorted(set(strings) - part - set(numeric)):
        choices = np.array(sorted(strings[attr]) + ["other"])
        cols[attr] = choices[rng.integers(0, len(choices), size=events)]
    for attr in sorted(values - part - set(numeric) - set(strings)):
        cols[attr] = rng.integers(0, 100, size=events)
    return pd.DataFrame(cols)
