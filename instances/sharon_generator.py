"""Random Sharon workloads: SEQ queries built from shared pieces (the paper's optimizer setup, §8.1).

Shape (as the authors' optimizer benchmark describes it, spec §8.1 [CODE]): every query pattern is a
concatenation of short patterns ("pieces") drawn uniformly from a pool of random pieces over the
event types, interleaved with random single types, cut to the query length. The pool size and the
probability that a slot takes a piece (``--sharing``) set the sharing degree.

Rates (spec A4). The cost model is not scale-invariant: Comb (Eq. 5) is cubic in the rates and the
rest quadratic, so with realistic per-window counts (thousands) sharing a pattern in the middle of a
query never pays (interior sharing pays only while the rates stay below about the pattern length,
spec §2.6) and only prefix/suffix sharing survives: no real decisions. By default the generator
therefore writes small relative integer rates in [rate_min, rate_max] (as the authors' benchmark does)
into ``statistics.rates``. ``--events-per-window E`` keeps the shape but also writes per-window counts
scaled to E events per window in total (the cost model then prefers them: expect near-trivial plans).

Presets (explicit flags override them):

* ``default``: 30 types, 12 pieces of length 2-4, sharing 0.8, rates 1-6: a mix of beneficial and
  non-beneficial candidates, conflicts, and expansion gains.
* ``stress``: 12 types, 5 pieces of length 2-3, sharing 0.95, rates 1-2 (low and similar): heavy
  sharing, dense conflicts and large conflict-causing query sets (the option enumeration explodes).
"""

from __future__ import annotations

import argparse
import math
import random

from cepopt.errors import CepoptError
from cepopt.instance import Instance
from cepopt.model import Query, Seq, Statistics, Type, Window, Workload

__all__ = ["LIMITS", "MAX_CELLS", "PRESETS", "configure", "generate", "make_instance"]

#: the largest value of each flag (checked by cepopt.instances.generate before the generator runs)
LIMITS = {"queries": 100_000, "length": 1_000, "types": 1_000_000, "pool": 100_000, "piece_min": 1_000,
          "piece_max": 1_000, "rate_min": 10**9, "rate_max": 10**9, "events_per_window": 1e15,
          "window": 10**9, "slide": 10**9}
#: the most pattern positions a generated workload (queries x length) or piece pool (pool x piece_max)
#: holds, and with --unique-types the most queries x length x types (the draws look through the types)
MAX_CELLS = 10**7

PRESETS: dict[str, dict] = {
    "default": {"types": 30, "pool": 12, "piece_min": 2, "piece_max": 4, "sharing": 0.8,
                "rate_min": 1, "rate_max": 6},
    "stress": {"types": 12, "pool": 5, "piece_min": 2, "piece_max": 3, "sharing": 0.95,
               "rate_min": 1, "rate_max": 2},
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queries", type=int, default=20, help="number of queries (default 20)")
    parser.add_argument("--length", type=int, default=10, help="pattern length of every query (default 10)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="default",
                        help="default (real decisions) or stress (low similar rates, heavy sharing)")
    parser.add_argument("--types", type=int, default=None, help="number of event types")
    parser.add_argument("--pool", type=int, default=None, help="number of shared pieces (fewer = more sharing)")
    parser.add_argument("--piece-min", type=int, default=None, help="shortest piece")
    parser.add_argument("--piece-max", type=int, default=None, help="longest piece")
    parser.add_argument("--sharing", type=float, default=None,
                        help="probability that a slot takes a pool piece rather than a random type")
    parser.add_argument("--rate-min", type=int, default=None, help="smallest relative rate")
    parser.add_argument("--rate-max", type=int, default=None, help="largest relative rate")
    parser.add_argument("--events-per-window", type=float, default=None,
                        help="also write per-window counts summing to this many events (see the module doc)")
    parser.add_argument("--unique-types", action="store_true",
                        help="no event type twice in one query (Assumption 3); default: repeats allowed")
    parser.add_argument("--window", type=int, default=600, help="WITHIN, seconds (default 600)")
    parser.add_argument("--slide", type=int, default=60, help="SLIDE, seconds (default 60)")


def make_instance(*, queries: int = 20, length: int = 10, seed: int = 0, preset: str = "default",
                  types: int | None = None, pool: int | None = None, piece_min: int | None = None,
                  piece_max: int | None = None, sharing: float | None = None, rate_min: int | None = None,
                  rate_max: int | None = None, events_per_window: float | None = None,
                  window: int = 600, slide: int = 60, unique_types: bool = False) -> Instance:
    """A random Sharon instance (see the module doc); deterministic in ``seed``."""
    if preset not in PRESETS:
        raise CepoptError(f"--preset: unknown preset {preset!r} (use {', '.join(PRESETS)})")
    cfg = dict(PRESETS[preset])
    for key, value in (("types", types), ("pool", pool), ("piece_min", piece_min), ("piece_max", piece_max),
                       ("sharing", sharing), ("rate_min", rate_min), ("rate_max", rate_max)):
        if value is not None:
            cfg[key] = value
    if queries < 1 or length < 1:
        raise CepoptError("--queries and --length must be >= 1")
    if cfg["types"] < 1 or cfg["pool"] < 1 or not 1 <= cfg["piece_min"] <= cfg["piece_max"]:
        raise CepoptError("--types, --pool must be >= 1 and 1 <= --piece-min <= --piece-max")
    if not 0 <= cfg["sharing"] <= 1:
        raise CepoptError("--sharing must be in [0, 1]")
    if not 0 < cfg["rate_min"] <= cfg["rate_max"]:
        raise CepoptError("--rate-min must be > 0 and <= --rate-max")
    if window <= 0 or slide <= 0:
        raise CepoptError("--window and --slide must be > 0")
    _check_size(queries, length, cfg, unique_types)
    rng = random.Random(seed)
    names = [f"E{i}" for i in range(cfg["types"])]
    pieces = [[rng.choice(names) for _ in range(rng.randint(cfg["piece_min"], cfg["piece_max"]))]
              for _ in range(cfg["pool"])]
    if unique_types and length > len(names):
        raise CepoptError(f"--unique-types needs --types >= --length ({len(names)} < {length})")
    patterns = []
    for _ in range(queries):
        seq: list[str] = []
        while len(seq) < length:
            item = list(rng.choice(pieces)) if rng.random() < cfg["sharing"] else [rng.choice(names)]
            if unique_types:
                # keep the new types that are still unused in this query (a cut piece stays contiguous
                # only if nothing was dropped; otherwise take one fresh random type)
                taken = set(seq)  # a set: the same draws as list membership, in linear time
                fresh = [t for t in item if t not in taken]
                if len(fresh) != len(item) or len(set(item)) != len(item):
                    unused = [t for t in names if t not in taken]
                    item = [rng.choice(unused)]
            seq += item
        patterns.append(seq[:length])
    used = sorted({t for p in patterns for t in p}, key=lambda t: int(t[1:]))
    rates = {t: rng.randint(cfg["rate_min"], cfg["rate_max"]) for t in used}
    per_window = {}
    if events_per_window is not None:
        if not 0 < events_per_window < math.inf:  # also rejects nan
            raise CepoptError(f"--events-per-window must be a finite number > 0, got {events_per_window}")
        total = sum(rates.values())
        per_window = {t: round(events_per_window * r / total, 6) for t, r in rates.items()}
    win = Window(window, slide)
    workload = Workload(tuple(Query(Seq(tuple(Type(t) for t in p)), win, name=f"q{i + 1}")
                              for i, p in enumerate(patterns)))
    settings = {"queries": queries, "length": length, "seed": seed, "preset": preset, **cfg,
                "events_per_window": events_per_window, "unique_types": unique_types}
    return Instance(
        problem="sharon", workload=workload,
        statistics=Statistics(rates=rates, events_per_window=per_window),
        name=f"sharon-{preset}-n{queries}-l{length}-s{seed}",
        description=f"random Sharon workload ({preset} preset): {queries} SEQ queries of length {length} "
                    f"over {cfg['types']} types from {cfg['pool']} shared pieces",
        params={"generator": settings})


def _check_size(queries: int, length: int, cfg: dict, unique_types: bool) -> None:
    """The generator's stated maximum (MAX_CELLS), checked before anything is drawn."""
    sizes = [("--queries x --length", queries * length), ("--pool x --piece-max", cfg["pool"] * cfg["piece_max"])]
    if unique_types:
        sizes.append(("--queries x --length x --types (with --unique-types)", queries * length * cfg["types"]))
    for what, cells in sizes:
        if cells > MAX_CELLS:
            raise CepoptError(f"{what} = {cells} is above the generator's maximum ({MAX_CELLS:g})")


def generate(args: argparse.Namespace) -> Instance:
    return make_instance(queries=args.queries, length=args.length, seed=args.seed, preset=args.preset,
                         types=args.types, pool=args.pool, piece_min=args.piece_min, piece_max=args.piece_max,
                         sharing=args.sharing, rate_min=args.rate_min, rate_max=args.rate_max,
                         events_per_window=args.events_per_window, window=args.window, slide=args.slide,
                         unique_types=args.unique_types)
