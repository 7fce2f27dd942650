"""A stock-like event stream and the pattern shapes of Kolchinsky & Schuster's evaluation (§7.2).

:func:`generate` draws minute bars: every symbol (the event type, a ticker) updates in a given minute
with its own probability, so the rates differ per symbol (the paper's NASDAQ stream had 1 to 45
updates a second per stock). Prices follow a geometric random walk rounded to cents; ``difference``
is the change since the symbol's previous update, as in the paper. Columns: ``id`` (row number),
``ts`` (seconds, multiples of 60), ``type``, ``price``, ``volume``, ``difference``.

:func:`stated_rates` gives the rates the stream is drawn with (events per second), and
:func:`pattern` the paper's pattern sets (spec joinorder §5.2): sequences, sequences with one
negated event, conjunctions, sequences with one Kleene event and disjunctions of three sequences,
each with ⌊n/2⌋ conditions ``x.difference < y.difference`` between random pairs.
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.model import And, AttrRef, Condition, Kleene, Not, Or, Query, Seq, Type, Window
from cepopt.params import Bound, PositiveInt

__all__ = ["PATTERN_KINDS", "generate", "pattern", "stated_rates", "symbols_of"]

_TICKERS = (
    "MSFT", "GOOG", "INTC", "AAPL", "AMZN", "CSCO", "ORCL", "QCOM", "ADBE", "NVDA", "TXN", "AMAT",
    "COST", "SBUX", "PEP", "CMCSA", "AMGN", "GILD", "BKNG", "MDLZ", "ADP", "ISRG", "VRTX", "REGN",
    "MU", "LRCX", "KLAC", "ADI", "MAR", "CTAS", "PAYX", "ROST", "EBAY", "EA", "ILMN", "FAST",
    "XEL", "DLTR", "ALGN", "IDXX",
)

PATTERN_KINDS = ("sequence", "negation", "conjunction", "kleene", "disjunction")


def symbols_of(symbols: int) -> list[str]:
    """The first ``symbols`` ticker names (real-looking ones, then T040, T041, ...)."""
    if symbols < 1:
        raise CepoptError(f"symbols must be >= 1, got {symbols!r}")
    return [(_TICKERS[i] if i < len(_TICKERS) else f"T{i:03d}") for i in range(symbols)]


def _update_probabilities(symbols: int, rate_min: float, rate_max: float, seed: int) -> np.ndarray:
    if not 0 < rate_min <= rate_max <= 1:
        raise CepoptError(f"need 0 < rate_min <= rate_max <= 1 (updates per minute), got {rate_min}, {rate_max}")
    rng = np.random.default_rng([seed, 1])
    return np.exp(rng.uniform(math.log(rate_min), math.log(rate_max), symbols))


def stated_rates(*, seed: int = 0, symbols: int = 20, rate_min: float = 0.02, rate_max: float = 0.9
                 ) -> dict[str, float]:
    """Rates (events per second) per symbol that :func:`generate` draws the stream with."""
    p = _update_probabilities(symbols, rate_min, rate_max, seed)
    return {name: float(pi) / 60.0 for name, pi in zip(symbols_of(symbols), p, strict=True)}


Probability = Annotated[float, Bound(">=", 1e-6), Bound("<=", 1)]  # updates per minute
Price = Annotated[float, Bound(">", 0), Bound("<=", 1e12)]


def generate(*, seed: int = 0, events: PositiveInt = 100_000, symbols: PositiveInt = 20, rate_min: Probability = 0.02,
             rate_max: Probability = 0.9, volatility: Annotated[float, Bound(">=", 0), Bound("<=", 1)] = 0.002,
             price_min: Price = 5.0, price_max: Price = 500.0) -> pd.DataFrame:
    """A stock-like stream of exactly ``events`` minute-bar updates over ``symbols`` tickers.

    Symbol s updates in a minute with probability ``p_s`` (log-uniform in [rate_min, rate_max]),
    so its rate is ``p_s / 60`` events per second (:func:`stated_rates`). Log-prices move by
    ``N(0, volatility²·Δminutes)`` between updates.
    """
    if events < 1:
        raise CepoptError(f"events must be >= 1, got {events!r}")
    if volatility < 0 or not 0 < price_min <= price_max:
        raise CepoptError("need volatility >= 0 and 0 < price_min <= price_max")
    names = symbols_of(symbols)
    p = _update_probabilities(symbols, rate_min, rate_max, seed)
    rng = np.random.default_rng([seed, 2])
    # Enough minutes for the expected count to exceed ``events`` comfortably; then cut.
    minutes = int(math.ceil(events / p.sum() * 1.1 + 10 * math.sqrt(events / p.sum()) + 5))
    chunks_ts, chunks_sym = [], []
    for s in range(symbols):
        k = rng.binomial(minutes, p[s])
        mins = np.sort(rng.choice(minutes, size=k, replace=False))
        chunks_ts.append(mins)
        chunks_sym.append(np.full(k, s, dtype=np.int32))
    mins = np.concatenate(chunks_ts)
    sym = np.concatenate(chunks_sym)
    order = np.lexsort((sym, mins))[:events]
    mins, sym = mins[order], sym[order]
    # Per-symbol price paths: increments scale with the minutes since the symbol's last update.
    start = np.exp(rng.uniform(math.log(price_min), math.log(price_max), symbols))
    by_sym = np.argsort(sym, kind="stable")
    s_sorted, m_sorted = sym[by_sym], mins[by_sym]
    first = np.r_[True, s_sorted[1:] != s_sorted[:-1]]
    gap = np.where(first, 0, np.diff(m_sorted, prepend=0)).astype(float)
    steps = rng.normal(0.0, 1.0, len(sym)) * volatility * np.sqrt(gap)
    # Cumulative log-return within each symbol's run.
    cum = np.cumsum(steps)
    run_start = np.maximum.accumulate(np.where(first, np.arange(len(sym)), 0))
    base = cum[run_start] - steps[run_start]
    logp = np.log(start[s_sorted]) + cum - base
    price_sorted = np.round(np.exp(logp), 2)
    prev = np.r_[np.nan, price_sorted[:-1]]
    diff_sorted = np.where(first, 0.0, np.round(price_sorted - prev, 2))
    price = np.empty(len(sym))
    diff = np.empty(len(sym))
    price[by_sym] = price_sorted
    diff[by_sym] = diff_sorted
    volume = np.round(rng.lognormal(8.0, 1.0, len(sym))).astype(np.int64) + 1
    return pd.DataFrame({
        "id": np.arange(len(sym), dtype=np.int64),
        "ts": (mins.astype(np.int64) * 60),
        "type": np.asarray(names, dtype=object)[sym],
        "price": price,
        "volume": volume,
        "difference": diff,
    })


def pattern(kind: str, size: int, *, seed: int = 0, symbols: int = 20, window: float = 1200,
            matching: bool = True) -> Query:
    """A query of the paper's pattern set ``kind`` with ``size`` events over random distinct symbols.

    ``⌊size/2⌋`` conditions ``x.difference < y.difference``: between disjoint random pairs when
    ``matching`` (independent conditions, so the cost model's product of selectivities is exact),
    else between random pairs. ``negation`` negates one inner event of a sequence and ``kleene`` puts
    one event under KL (both count in ``size``); ``disjunction`` is an OR of three sequences of
    ``size`` events each, on disjoint symbols.
    """
    if kind not in PATTERN_KINDS:
        raise CepoptError(f"unknown pattern kind {kind!r} (known: {', '.join(PATTERN_KINDS)})")
    branches = 3 if kind == "disjunction" else 1
    if size < 2 or (kind == "negation" and size < 3):
        raise CepoptError(f"pattern size must be >= 2 (3 with a negation), got {size!r}")
    if size * branches > symbols:
        raise CepoptError(f"a {kind} pattern of size {size} needs {size * branches} symbols, got {symbols}")
    rng = np.random.default_rng([seed, 3, size, PATTERN_KINDS.index(kind)])
    names = symbols_of(symbols)
    picked = [names[i] for i in rng.choice(symbols, size=size * branches, replace=False)]
    where = []
    items_per_branch = []
    for b in range(branches):
        types = picked[b * size:(b + 1) * size]
        variables = [f"e{b * size + i}" for i in range(size)]
        items: list = [Type(t, v) for t, v in zip(types, variables, strict=True)]
        negated = -1
        if kind == "negation":
            negated = int(rng.integers(1, size - 1))
            items[negated] = Not(items[negated])
        if kind == "kleene":
            k = int(rng.integers(0, size))
            items[k] = Kleene(items[k])
        positives = [v for i, v in enumerate(variables) if i != negated]
        cand = list(variables) if kind != "negation" else positives + [variables[negated]]
        npred = size // 2
        if matching:
            order = [cand[i] for i in rng.permutation(len(cand))]
            pairs = [(order[2 * i], order[2 * i + 1]) for i in range(npred)]
        else:
            pairs = []
            while len(pairs) < npred:
                x, y = rng.choice(len(cand), size=2, replace=False)
                if (cand[x], cand[y]) not in pairs and (cand[y], cand[x]) not in pairs:
                    pairs.append((cand[x], cand[y]))
        where += [Condition(AttrRef("difference", x), "<", AttrRef("difference", y)) for x, y in pairs]
        items_per_branch.append(Seq(tuple(items)) if kind != "conjunction" else And(tuple(items)))
    pat = items_per_branch[0] if branches == 1 else Or(tuple(items_per_branch))
    return Query(pat, Window(window), where=tuple(where), name=f"{kind}{size}")
